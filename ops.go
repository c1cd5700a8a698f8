package loopx

import (
	"context"
	"sort"
	"time"

	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// CreateGoal creates a goal.
func (s *Store) CreateGoal(req lease.GoalCreateRequest) (*Result[lease.GoalData], error) {
	return applyAs[lease.GoalData](s, lease.CallOf(req))
}

// ArchiveGoal archives a goal, which must be named (never inferred).
func (s *Store) ArchiveGoal(goal, actor string) (*Result[lease.GoalData], error) {
	return applyAs[lease.GoalData](s, lease.CallOf(lease.GoalArchiveRequest{Goal: goal, Actor: actor}))
}

// UnarchiveGoal makes an archived goal active again.
func (s *Store) UnarchiveGoal(goal, actor string) (*Result[lease.GoalData], error) {
	return applyAs[lease.GoalData](s, lease.CallOf(lease.GoalUnarchiveRequest{Goal: goal, Actor: actor}))
}

// GoalShow is the result of goal show: the goal with its number of
// registered agents and its todos by status.
type GoalShow struct {
	GoalID     string         `json:"goal_id"`
	Goal       *lease.Goal    `json:"goal"`
	Agents     int            `json:"agents"`
	TodoCounts map[string]int `json:"todo_counts"`
}

// ShowGoal shows a goal with its counts.
func (s *Store) ShowGoal(goal string) (*Result[GoalShow], error) {
	return Read(s, "goal.show", func(v *lease.View, now time.Time) (GoalShow, error) {
		id, err := s.goalOf(v, goal)
		if err != nil {
			return GoalShow{}, err
		}
		g, err := lease.RequireGoal(v, id)
		if err != nil {
			return GoalShow{}, err
		}
		agents, err := lease.RegisteredAgents(v, id)
		if err != nil {
			return GoalShow{}, err
		}
		todos, err := v.Todos(id)
		if err != nil {
			return GoalShow{}, err
		}
		counts := map[string]int{lease.TodoOpen: 0, lease.TodoDone: 0, lease.TodoSuperseded: 0}
		for _, t := range todos {
			counts[t.Status]++
		}
		return GoalShow{GoalID: id, Goal: g, Agents: len(agents), TodoCounts: counts}, nil
	})
}

// GoalList is the result of goal list.
type GoalList struct {
	Goals []*lease.Goal `json:"goals"`
}

func (d GoalList) jsonFields() []jsonField { return []jsonField{{"goals", d.Goals}} }

// ListGoals lists every goal.
func (s *Store) ListGoals() (*Result[GoalList], error) {
	return Read(s, "goal.list", func(v *lease.View, now time.Time) (GoalList, error) {
		if _, err := lease.RequireStore(v); err != nil {
			return GoalList{}, err
		}
		goals, err := v.Goals()
		if err != nil {
			return GoalList{}, err
		}
		if goals == nil {
			goals = []*lease.Goal{}
		}
		return GoalList{Goals: goals}, nil
	})
}

// RegisterAgent registers an agent in a goal.
func (s *Store) RegisterAgent(req lease.RegisterRequest) (*Result[lease.AgentData], error) {
	return applyAs[lease.AgentData](s, lease.CallOf(req))
}

// UnregisterAgent unregisters an agent (itself, or By an orchestrator).
func (s *Store) UnregisterAgent(req lease.UnregisterRequest) (*Result[lease.AgentData], error) {
	return applyAs[lease.AgentData](s, lease.CallOf(req))
}

// AgentList is the result of agent list.
type AgentList struct {
	GoalID string         `json:"goal_id"`
	Agents []*lease.Agent `json:"agents"`
}

func (d AgentList) jsonFields() []jsonField {
	return []jsonField{{"goal_id", d.GoalID}, {"agents", d.Agents}}
}

// ListAgents lists a goal's agent registrations (all, with status).
func (s *Store) ListAgents(goal string) (*Result[AgentList], error) {
	return Read(s, "agent.list", func(v *lease.View, now time.Time) (AgentList, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return AgentList{}, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return AgentList{}, err
		}
		agents, err := v.Agents(g)
		if err != nil {
			return AgentList{}, err
		}
		if agents == nil {
			agents = []*lease.Agent{}
		}
		return AgentList{GoalID: g, Agents: agents}, nil
	})
}

// AddTodo adds a todo.
func (s *Store) AddTodo(req lease.AddRequest) (*Result[lease.TodoAddData], error) {
	return applyAs[lease.TodoAddData](s, lease.CallOf(req))
}

// VerifyData is the result of verify.
type VerifyData struct {
	OK            bool            `json:"valid"`
	Problems      []lease.Problem `json:"problems"`
	PendingBoards []string        `json:"pending_boards"`
	// ClockSkew is set when the head is dated beyond the store's skew
	// bound ahead of this machine's clock: every mutation is refused.
	ClockSkew *lease.Skew `json:"clock_skew,omitempty"`
}

// ClockReset recovers a store whose head is dated in the future (see
// lease.ClockReset; README "When the store's clock ran ahead").
func (s *Store) ClockReset(req lease.ClockResetRequest) (*Result[lease.ClockResetData], error) {
	return applyAs[lease.ClockResetData](s, lease.CallOf(req))
}

// Verify checks every record on the head, and reports boards that are not
// up to date with the state they should render.
func (s *Store) Verify() (*Result[VerifyData], error) {
	return Read(s, "verify", func(v *lease.View, now time.Time) (VerifyData, error) {
		problems, err := lease.Verify(v)
		if err != nil {
			return VerifyData{}, err
		}
		d := VerifyData{Problems: problems, PendingBoards: []string{}}
		if problems == nil {
			d.Problems = []lease.Problem{}
		}
		if goals, err := v.Goals(); err == nil && len(problems) == 0 {
			for _, g := range goals {
				if pending, err := s.boardPending(v, g.ID); err == nil && pending {
					d.PendingBoards = append(d.PendingBoards, g.ID)
				}
			}
		}
		sort.Strings(d.PendingBoards)
		if m, err := v.Meta(); err == nil {
			d.ClockSkew = lease.SkewOf(s.opts.now(), v.HeadTime, lease.MaxClockSkew(m))
		}
		d.OK = len(d.Problems) == 0 && d.ClockSkew == nil
		return d, nil
	})
}

// BoardPath is the result of todo project-markdown: the goal and where
// its board is on the state ref.
type BoardPath struct {
	GoalID string `json:"goal_id"`
	Path   string `json:"path"`
}

// ProjectMarkdown renders the goal's board from the current head and commits
// it when it differs. It repairs a pending delivery.
func (s *Store) ProjectMarkdown(goal string) (*Result[BoardPath], []byte, error) {
	res, err := Read(s, "todo.project-markdown", func(v *lease.View, now time.Time) (BoardPath, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return BoardPath{}, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return BoardPath{}, err
		}
		return BoardPath{GoalID: g, Path: lease.BoardPath(g)}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	id := res.Data.GoalID
	opts := s.opts
	s.opts.FailProjection = false
	status, reason, err := s.deliverBoard(id, true)
	s.opts = opts
	if err != nil {
		return nil, nil, storeerr.Map(err)
	}
	head, err := s.repo.Head(context.Background())
	if err != nil {
		return nil, nil, storeerr.Map(err)
	}
	sn, err := s.repo.Snapshot(head)
	if err != nil {
		return nil, nil, storeerr.Map(err)
	}
	board, _, err := s.viewOf(sn).ReadFile(lease.BoardPath(id))
	if err != nil {
		return nil, nil, storeerr.Map(err)
	}
	e := Envelope{Operation: res.Operation, Mutation: true, Status: lease.StatusApplied, ClockSkew: res.ClockSkew}
	if status == ProjectionNotRequired {
		e.Status = lease.StatusNoChange
	}
	e.Projection, e.ProjectionError = status, reason
	e.Revision, e.CurrentRevision = records.Rev(head), records.Rev(head)
	return NewResult(s, e, time.Time{}, res.Data), board, nil
}

// GCData is the result of gc.
type GCData struct {
	LooseBefore int   `json:"loose_objects_before"`
	LooseAfter  int   `json:"loose_objects_after"`
	Packs       int   `json:"packs"`
	SizeBefore  int64 `json:"size_before"`
	SizeAfter   int64 `json:"size_after"`
}

// GC packs the store's loose objects under the writer fence.
func (s *Store) GC() (*Result[GCData], error) {
	st, err := s.git.GC(context.Background())
	if err != nil {
		return nil, storeerr.Map(err)
	}
	head, _ := s.git.Head()
	return NewResult(s, Envelope{Operation: "gc", CurrentRevision: records.Rev(head)}, time.Time{}, GCData{
		LooseBefore: st.LooseBefore, LooseAfter: st.LooseAfter, Packs: st.Packs,
		SizeBefore: st.SizeBefore, SizeAfter: st.SizeAfter}), nil
}

// AddAdmin adds an admin to the store, or replaces an admin's key
// (contract section 8): by an admin, or by anyone in an open store, which
// its first admin closes.
func (s *Store) AddAdmin(req lease.AdminAddRequest) (*Result[lease.AdminData], error) {
	return applyAs[lease.AdminData](s, lease.CallOf(req))
}

// RemoveAdmin removes an admin (by an admin; never the last).
func (s *Store) RemoveAdmin(req lease.AdminRemoveRequest) (*Result[lease.AdminData], error) {
	return applyAs[lease.AdminData](s, lease.CallOf(req))
}

// ListAdmins lists the store's admins and its registration mode.
func (s *Store) ListAdmins() (*Result[lease.AdminData], error) {
	return Read(s, "admin.list", func(v *lease.View, now time.Time) (lease.AdminData, error) {
		return lease.ListAdmins(v)
	})
}

// RotateKey replaces an agent's signing key (agent.rotate-key).
func (s *Store) RotateKey(req lease.RotateKeyRequest) (*Result[lease.RotateKeyData], error) {
	return applyAs[lease.RotateKeyData](s, lease.CallOf(req))
}

// Sync brings a store that was used offline up to date with its remote
// (remote.Remote.Sync): each offline mutation is decided again, on the
// server's head, by this store's rules.
func (s *Store) Sync() (*Result[remote.SyncData], error) {
	online := *s
	online.remote = s.remote.ForSync()
	online.repo = online.remote.Bind()
	d, head, err := s.remote.Sync(func(call lease.Call) (string, string, error) {
		res, err := online.Apply(call)
		if err != nil {
			return "", "", err
		}
		return res.Status, res.Revision, nil
	})
	if d == nil {
		return nil, err
	}
	return NewResult(&online, Envelope{Operation: "sync", CurrentRevision: records.Rev(head)}, time.Time{}, *d), err
}
