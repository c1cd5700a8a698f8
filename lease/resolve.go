package lease

import (
	"slices"
	"time"
)

// The resolvers of the operation table: each fills a request's omitted
// fields from the head it is decided on (contract section 3's defaults),
// so the recorded request leaves nothing implicit. A resolver refuses only
// what cannot be resolved (an ambiguous goal or actor); every other check
// is the decision's. Target ids are checked first, so a missing --todo-id
// is invalid_todo_id even when the goal is ambiguous.

func resolveGoalCreate(v *View, d Defaults, now time.Time, r *GoalCreateRequest) error {
	if r.HandoffMode == "" {
		r.HandoffMode = HandoffSoftClaim
	}
	return nil
}

func resolveRegister(v *View, d Defaults, now time.Time, r *RegisterRequest) error {
	if r.Role == "" {
		r.Role = RoleAgent
	}
	if r.By == r.Agent {
		r.By = ""
	}
	return resolveGoalField(v, d, &r.Goal)
}

func resolveUnregister(v *View, d Defaults, now time.Time, r *UnregisterRequest) error {
	return resolveGoalField(v, d, &r.Goal)
}

func resolveAdd(v *View, d Defaults, now time.Time, r *AddRequest) error {
	if err := resolveGoalField(v, d, &r.Goal); err != nil {
		return err
	}
	if r.Priority == "" {
		r.Priority = DefaultPriority
	}
	if r.Todo == "" && r.Text != "" {
		r.Todo = GenerateTodoID(v.Revision, now, r.Text)
	}
	return nil
}

func resolveReadyClaim(v *View, d Defaults, now time.Time, r *ReadyClaimRequest) error {
	if err := resolveGoalField(v, d, &r.Goal); err != nil {
		return err
	}
	a, err := ResolveActor(v, r.Goal, r.Actor, "")
	r.Actor = a
	return err
}

func resolveClaim(v *View, d Defaults, now time.Time, r *ClaimRequest) error {
	if err := resolveTodoActor(v, d, r.Todo, &r.Goal, &r.Actor, r.ClaimedBy); err != nil {
		return err
	}
	if r.ClaimedBy == "" {
		r.ClaimedBy = r.Actor
	}
	return nil
}

func resolveUpdate(v *View, d Defaults, now time.Time, r *UpdateRequest) error {
	return resolveTodoActor(v, d, r.Todo, &r.Goal, &r.Actor, r.ClaimedBy)
}

func resolveComplete(v *View, d Defaults, now time.Time, r *CompleteRequest) error {
	return resolveTodoActor(v, d, r.Todo, &r.Goal, &r.Actor, "")
}

func resolveSupersede(v *View, d Defaults, now time.Time, r *SupersedeRequest) error {
	return resolveTodoActor(v, d, r.Todo, &r.Goal, &r.Actor, "")
}

// resolveAcquire also takes the todo's required write scopes when the
// request names none (contract section 5), so the guard protects what the
// todo declared.
func resolveAcquire(v *View, d Defaults, now time.Time, r *AcquireRequest) error {
	if err := resolveLeaseOwner(v, d, r.Todo, &r.Goal, &r.Owner); err != nil {
		return err
	}
	if len(r.WriteScopes) == 0 && ValidGoalID(r.Goal) {
		if t, err := v.Todo(r.Goal, r.Todo); err == nil && t != nil {
			r.WriteScopes = slices.Clone(t.RequiredWriteScopes)
		}
	}
	return nil
}

func resolveRenew(v *View, d Defaults, now time.Time, r *RenewRequest) error {
	return resolveLeaseOwner(v, d, r.Todo, &r.Goal, &r.Owner)
}

func resolveTransfer(v *View, d Defaults, now time.Time, r *TransferRequest) error {
	return resolveLeaseOwner(v, d, r.Todo, &r.Goal, &r.Owner)
}

func resolveRelease(v *View, d Defaults, now time.Time, r *ReleaseRequest) error {
	return resolveLeaseOwner(v, d, r.Todo, &r.Goal, &r.Owner)
}

func resolveGoalField(v *View, d Defaults, goal *string) error {
	g, err := ResolveGoal(v, *goal, d.Goal)
	if err != nil {
		return err
	}
	*goal = g
	return nil
}

// resolveTodoActor resolves a todo mutation's goal and acting agent (the
// todo id is checked first).
func resolveTodoActor(v *View, d Defaults, todo string, goal, actor *string, claimedBy string) error {
	if err := CheckTodoID(todo); err != nil {
		return err
	}
	if err := resolveGoalField(v, d, goal); err != nil {
		return err
	}
	a, err := ResolveActor(v, *goal, *actor, claimedBy)
	if err != nil {
		return err
	}
	*actor = a
	return nil
}

// resolveLeaseOwner resolves a lease command's goal and owner (the todo id
// is checked first).
func resolveLeaseOwner(v *View, d Defaults, todo string, goal, owner *string) error {
	if err := CheckTodoID(todo); err != nil {
		return err
	}
	if err := resolveGoalField(v, d, goal); err != nil {
		return err
	}
	if *owner == "" {
		a, err := ResolveActor(v, *goal, "", "")
		if err != nil {
			return Errorf(CodeInvalidAgentID, "owner is required (--owner)")
		}
		*owner = a
	}
	return nil
}
