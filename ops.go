package loopx

import (
	"context"
	"sort"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// goalOf resolves the goal of a command (explicit, configured default, or
// the only active goal).
func (s *Store) goalOf(v *lease.View, explicit string) (string, error) {
	return lease.ResolveGoal(v, explicit, s.defaultGoal)
}

// CreateGoal creates a goal.
func (s *Store) CreateGoal(req lease.GoalCreateRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// ArchiveGoal archives a goal, which must be named (never inferred).
func (s *Store) ArchiveGoal(goal, actor string) (*Result, error) {
	return s.Apply(lease.CallOf(lease.GoalArchiveRequest{Goal: goal, Actor: actor}))
}

// UnarchiveGoal makes an archived goal active again.
func (s *Store) UnarchiveGoal(goal, actor string) (*Result, error) {
	return s.Apply(lease.CallOf(lease.GoalUnarchiveRequest{Goal: goal, Actor: actor}))
}

// ShowGoal shows a goal with its counts.
func (s *Store) ShowGoal(goal string) (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		id, err := s.goalOf(v, goal)
		if err != nil {
			return nil, err
		}
		g, err := lease.RequireGoal(v, id)
		if err != nil {
			return nil, err
		}
		agents, err := lease.RegisteredAgents(v, id)
		if err != nil {
			return nil, err
		}
		todos, err := v.Todos(id)
		if err != nil {
			return nil, err
		}
		counts := map[string]int{lease.TodoOpen: 0, lease.TodoDone: 0, lease.TodoSuperseded: 0}
		for _, t := range todos {
			counts[t.Status]++
		}
		return &lease.Outcome{Operation: "goal.show", Data: map[string]any{
			"goal_id": id, "goal": g, "agents": len(agents), "todo_counts": counts}}, nil
	})
}

// ListGoals lists every goal.
func (s *Store) ListGoals() (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		if _, err := lease.RequireStore(v); err != nil {
			return nil, err
		}
		goals, err := v.Goals()
		if err != nil {
			return nil, err
		}
		if goals == nil {
			goals = []*lease.Goal{}
		}
		return &lease.Outcome{Operation: "goal.list", Data: map[string]any{"goals": goals}}, nil
	})
}

// RegisterAgent registers an agent in a goal.
func (s *Store) RegisterAgent(req lease.RegisterRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// UnregisterAgent unregisters an agent (itself, or By an orchestrator).
func (s *Store) UnregisterAgent(req lease.UnregisterRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// ListAgents lists a goal's agent registrations (all, with status).
func (s *Store) ListAgents(goal string) (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return nil, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return nil, err
		}
		agents, err := v.Agents(g)
		if err != nil {
			return nil, err
		}
		if agents == nil {
			agents = []*lease.Agent{}
		}
		return &lease.Outcome{Operation: "agent.list", Data: map[string]any{"goal_id": g, "agents": agents}}, nil
	})
}

// AddTodo adds a todo.
func (s *Store) AddTodo(req lease.AddRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
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
func (s *Store) ClockReset(req lease.ClockResetRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Verify checks every record on the head, and reports boards that are not
// up to date with the state they should render.
func (s *Store) Verify() (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		problems, err := lease.Verify(v)
		if err != nil {
			return nil, err
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
		return &lease.Outcome{Operation: "verify", Data: d}, nil
	})
}

// ProjectMarkdown renders the goal's board from the current head and commits
// it when it differs. It repairs a pending delivery.
func (s *Store) ProjectMarkdown(goal string) (*Result, []byte, error) {
	var id string
	res, err := s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return nil, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return nil, err
		}
		id = g
		return &lease.Outcome{Operation: "todo.project-markdown"}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	opts := s.opts
	s.opts.FailProjection = false
	status, reason, err := s.deliverBoard(id, true)
	s.opts = opts
	if err != nil {
		return nil, nil, mapErr(err)
	}
	head, err := s.repo.Head(context.Background())
	if err != nil {
		return nil, nil, mapErr(err)
	}
	sn, err := s.repo.Snapshot(head)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	board, _, err := s.viewOf(sn).ReadFile(lease.BoardPath(id))
	if err != nil {
		return nil, nil, mapErr(err)
	}
	res.Mutation = true
	res.Status = lease.StatusApplied
	if status == ProjectionNotRequired {
		res.Status = lease.StatusNoChange
	}
	res.Projection, res.ProjectionError = status, reason
	res.Revision, res.CurrentRevision = revString(head), revString(head)
	res.Data = map[string]any{"goal_id": id, "path": lease.BoardPath(id)}
	return s.annotate(res, time.Time{}), board, nil
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
func (s *Store) GC() (*Result, error) {
	st, err := s.git.GC(context.Background())
	if err != nil {
		return nil, mapErr(err)
	}
	head, _ := s.git.Head()
	return s.annotate(&Result{Operation: "gc", CurrentRevision: revString(head), Data: GCData{
		LooseBefore: st.LooseBefore, LooseAfter: st.LooseAfter, Packs: st.Packs,
		SizeBefore: st.SizeBefore, SizeAfter: st.SizeAfter}}, time.Time{}), nil
}

// AddAdmin adds an admin to the store, or replaces an admin's key
// (contract section 8): by an admin, or by anyone in an open store, which
// its first admin closes.
func (s *Store) AddAdmin(req lease.AdminAddRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// RemoveAdmin removes an admin (by an admin; never the last).
func (s *Store) RemoveAdmin(req lease.AdminRemoveRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// ListAdmins lists the store's admins and its registration mode.
func (s *Store) ListAdmins() (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		d, err := lease.ListAdmins(v)
		if err != nil {
			return nil, err
		}
		return &lease.Outcome{Operation: "admin.list", Data: d}, nil
	})
}
