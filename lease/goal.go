package lease

import (
	"time"
)

// GoalCreateRequest creates a goal.
type GoalCreateRequest struct {
	Goal, Title, HandoffMode, Actor string
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
	if old != nil {
		return nil, Errorf(CodeGoalExists, "goal %s already exists", req.Goal)
	}
	g := &Goal{ID: req.Goal, Title: req.Title, Status: GoalActive, HandoffMode: req.HandoffMode,
		CreatedBy: req.Actor, CreatedAt: now, UpdatedAt: now}
	if g.Title == "" {
		g.Title = req.Goal
	}
	v.PutGoal(g)
	return &Outcome{Operation: "goal.create", Status: StatusApplied, Goal: g.ID, Actor: req.Actor,
		Write: true, BoardChanged: true, Data: GoalData{GoalID: g.ID, Goal: g}}, nil
}

// ArchiveGoal marks a goal archived; archiving an archived goal is no_change.
func ArchiveGoal(v *View, goal, actor string, now time.Time) (*Outcome, error) {
	g, err := RequireGoal(v, goal)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: "goal.archive", Status: StatusNoChange, Goal: goal, Actor: actor, Data: GoalData{GoalID: goal, Goal: g}}
	if g.Status == GoalArchived {
		return o, nil
	}
	g.Status, g.UpdatedAt = GoalArchived, now
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

// Init creates the store meta record; on an initialized store it is no_change.
// A store of a newer format is refused.
func Init(v *View, now time.Time) (*Outcome, error) {
	m, err := v.Meta()
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: "init", Status: StatusNoChange}
	if m != nil {
		if m.FormatVersion > FormatVersion {
			return nil, Errorf(CodeStoreFormatUnsupported, "store format %d is newer than this loopx understands (%d)", m.FormatVersion, FormatVersion)
		}
		return o, nil
	}
	v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: now})
	o.Status, o.Write = StatusApplied, true
	return o, nil
}
