package lease

import (
	"fmt"
	"time"
)

// GoalCreateRequest creates a goal.
type GoalCreateRequest struct {
	Goal        string `json:"goal_id,omitempty" desc:"goal id" required:"true"`
	Title       string `json:"title,omitempty" desc:"title (default: the goal id)"`
	HandoffMode string `json:"handoff_mode,omitempty" desc:"soft_claim or hard_lease (default soft_claim)"`
	Actor       string `json:"agent_id,omitempty" desc:"acting agent (recorded as author)"`
}

// GoalArchiveRequest archives (or unarchives) a goal; the goal is never
// inferred.
type GoalArchiveRequest struct {
	Goal  string `json:"goal_id,omitempty" desc:"goal id" required:"true"`
	Actor string `json:"agent_id,omitempty" desc:"acting agent (recorded as author)"`
}

// GoalUnarchiveRequest makes an archived goal (named explicitly) active.
type GoalUnarchiveRequest GoalArchiveRequest

// InitRequest creates the store's root record at a format version.
type InitRequest struct {
	FormatVersion int `json:"format_version,omitempty" desc:"the store format written" required:"true"`
	// MaxClockSkewSeconds sets the store's clock-skew bound (0: keep it,
	// or the default on a new store).
	MaxClockSkewSeconds int64 `json:"max_clock_skew_seconds,omitempty" desc:"how far the head may be dated ahead of a deciding machine's clock (default 30)"`
	// RequireSignatures turns on signed state commits (false: keep the
	// store's setting; it cannot be turned off).
	RequireSignatures bool `json:"require_signatures,omitempty" desc:"every later state commit must be signed by its acting agent's registered key (cannot be turned off)"`
}

// GoalData is the result of goal commands.
type GoalData struct {
	GoalID string `json:"goal_id"`
	Goal   *Goal  `json:"goal"`
}

// CreateGoal adds a goal; the store must be initialized and the id unused.
func CreateGoal(v *View, req GoalCreateRequest, now time.Time) (*Outcome, error) {
	if err := CheckGoalID(req.Goal); err != nil {
		return nil, err
	}
	if req.HandoffMode == "" {
		req.HandoffMode = HandoffSoftClaim
	}
	if req.HandoffMode != HandoffSoftClaim && req.HandoffMode != HandoffHardLease {
		return nil, Errorf(CodeInvalidRequest, "handoff mode %q: want soft_claim or hard_lease", req.HandoffMode)
	}
	if req.Actor != "" {
		if err := CheckAgentID("agent id", req.Actor); err != nil {
			return nil, err
		}
	}
	if _, err := RequireStore(v); err != nil {
		return nil, err
	}
	old, err := v.Goal(req.Goal)
	if err != nil {
		return nil, err
	}
	title := req.Title
	if title == "" {
		title = req.Goal
	}
	if old != nil {
		if old.Title == title && old.HandoffMode == req.HandoffMode && old.CreatedBy == req.Actor {
			// The same goal created again (a retry): a replay.
			return &Outcome{Operation: OpGoalCreate, Status: StatusReplayed, Goal: old.ID, Actor: req.Actor,
				Data: GoalData{GoalID: old.ID, Goal: old}}, nil
		}
		return nil, Errorf(CodeGoalExists, "goal %s already exists (with other facts)", req.Goal)
	}
	g := &Goal{ID: req.Goal, Title: req.Title, Status: GoalActive, HandoffMode: req.HandoffMode,
		CreatedBy: req.Actor, CreatedAt: now, UpdatedAt: now}
	if g.Title == "" {
		g.Title = req.Goal
	}
	v.PutGoal(g)
	return &Outcome{Operation: OpGoalCreate, Status: StatusApplied, Goal: g.ID, Actor: req.Actor,
		Write: true, BoardChanged: true, Data: GoalData{GoalID: g.ID, Goal: g}}, nil
}

// ArchiveGoal marks a goal archived; archiving an archived goal is
// no_change. The goal must be named: archiving is never inferred.
func ArchiveGoal(v *View, req GoalArchiveRequest, now time.Time) (*Outcome, error) {
	return setGoalStatus(v, req, OpGoalArchive, GoalArchived, now)
}

// UnarchiveGoal makes an archived goal active again; an active goal is
// no_change.
func UnarchiveGoal(v *View, req GoalUnarchiveRequest, now time.Time) (*Outcome, error) {
	return setGoalStatus(v, GoalArchiveRequest(req), OpGoalUnarchive, GoalActive, now)
}

func setGoalStatus(v *View, req GoalArchiveRequest, op, status string, now time.Time) (*Outcome, error) {
	if req.Goal == "" {
		return nil, Errorf(CodeInvalidGoalID, "%s needs an explicit goal id (--goal-id): it is never inferred", op)
	}
	if req.Actor != "" {
		if err := CheckAgentID("agent id", req.Actor); err != nil {
			return nil, err
		}
	}
	g, err := RequireGoal(v, req.Goal)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: op, Status: StatusNoChange, Goal: req.Goal, Actor: req.Actor, Data: GoalData{GoalID: req.Goal, Goal: g}}
	if g.Status == status {
		return o, nil
	}
	g.Status, g.UpdatedAt = status, now
	v.PutGoal(g)
	o.Status, o.Write, o.BoardChanged = StatusApplied, true, true
	return o, nil
}

// ActiveGoals lists the goals that are not archived.
func ActiveGoals(v *View) ([]*Goal, error) {
	all, err := v.Goals()
	if err != nil {
		return nil, err
	}
	var out []*Goal
	for _, g := range all {
		if g.Status == GoalActive {
			out = append(out, g)
		}
	}
	return out, nil
}

// Init creates the store meta record at the requested format; on an
// initialized store it is no_change. A store of a newer format is refused.
func Init(v *View, req InitRequest, now time.Time) (*Outcome, error) {
	if err := checkFormatRequest(req.FormatVersion); err != nil {
		return nil, err
	}
	m, err := v.Meta()
	if err != nil {
		return nil, err
	}
	if req.MaxClockSkewSeconds < 0 || req.MaxClockSkewSeconds > 86400 {
		return nil, Errorf(CodeInvalidRequest, "max clock skew %d seconds is out of range 1..86400", req.MaxClockSkewSeconds).With("field", "max_clock_skew_seconds")
	}
	o := &Outcome{Operation: OpStoreInit, Status: StatusNoChange}
	if m != nil {
		if m.FormatVersion > FormatVersion {
			return nil, Errorf(CodeStoreFormatUnsupported, "store format %d is newer than this loopx understands (%d)", m.FormatVersion, FormatVersion)
		}
		up := *m
		if req.MaxClockSkewSeconds != 0 {
			up.MaxClockSkewSeconds = req.MaxClockSkewSeconds
		}
		up.RequireSignatures = m.RequireSignatures || req.RequireSignatures
		if up == *m {
			return o, nil
		}
		v.PutMeta(&up)
		o.Status, o.Write = StatusApplied, true
		return o, nil
	}
	v.PutMeta(&StoreMeta{FormatVersion: req.FormatVersion, CreatedAt: now, MaxClockSkewSeconds: req.MaxClockSkewSeconds, RequireSignatures: req.RequireSignatures})
	o.Status, o.Write = StatusApplied, true
	return o, nil
}

// UpgradeRequest moves a store to a newer format.
type UpgradeRequest struct {
	FormatVersion int `json:"format_version,omitempty" desc:"the format to upgrade to" required:"true"`
}

// Upgrade records that the store is now at the requested format. From
// format 2 on, every state commit carries its recorded request; the
// upgrade is itself such a commit, so history before it is "made by an
// older loopx" and every commit after it must verify. A store at that
// format already is no_change; a newer one is refused.
func Upgrade(v *View, req UpgradeRequest, now time.Time) (*Outcome, error) {
	if err := checkFormatRequest(req.FormatVersion); err != nil {
		return nil, err
	}
	m, err := RequireStore(v)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: OpStoreUpgrade, Status: StatusNoChange}
	if m.FormatVersion >= req.FormatVersion {
		return o, nil
	}
	if m.FormatVersion < 2 && req.FormatVersion >= 2 {
		if err := backfillGenerations(v); err != nil {
			return nil, err
		}
	}
	up := *m
	up.FormatVersion = req.FormatVersion
	v.PutMeta(&up)
	o.Status, o.Write = StatusApplied, true
	return o, nil
}

// backfillGenerations records each lease's epoch in its todo, which format
// 2 checks on every per-todo read (generation.go).
func backfillGenerations(v *View) error {
	goals, err := v.Goals()
	if err != nil {
		return err
	}
	for _, g := range goals {
		leases, err := v.Leases(g.ID)
		if err != nil {
			return err
		}
		for _, l := range leases {
			t, err := v.Todo(g.ID, l.TodoID)
			if err != nil {
				return err
			}
			if t == nil {
				return Corrupt(LeasePath(g.ID, l.TodoID), fmt.Errorf("a lease record of todo %s, which does not exist", l.TodoID))
			}
			if t.LeaseEpoch != l.Epoch {
				t.LeaseEpoch = l.Epoch
				v.PutTodo(g.ID, t)
			}
		}
	}
	return nil
}

func checkFormatRequest(f int) error {
	if f < 1 || f > FormatVersion {
		return Errorf(CodeStoreFormatUnsupported, "store format %d: this loopx writes formats 1..%d", f, FormatVersion).With("field", "format_version")
	}
	return nil
}
