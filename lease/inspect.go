package lease

// task-lease inspect, and the JSON shape of a lease in every result.
//
// Decisions: inspect of a todo that never had a lease succeeds with
// "lease": null (its version is 0, the expected version of a first acquire);
// inspect works on archived goals and closed or archived todos (it is a read).

import (
	"time"
)

// LeaseView is a lease as results show it: the lease record's fields (owner,
// idempotency_key, version, epoch, status, write_scopes, acquired_at,
// renewed_at, expires_at, released_at; todo_id too) plus whether it is
// effective now.
type LeaseView struct {
	*Lease
	Effective bool `json:"effective"`
}

// ViewLease returns l as shown in results, computing "effective" from the
// todo and the owner's registration read through v. A nil lease gives a
// zero LeaseView (nil Lease); callers show it as null.
func ViewLease(v *View, goal string, l *Lease, now time.Time) (LeaseView, error) {
	if l == nil {
		return LeaseView{}, nil
	}
	eff, err := leaseIsEffective(v, goal, l, now)
	if err != nil {
		return LeaseView{}, err
	}
	c := cloneLeaseRecord(l)
	if c.WriteScopes == nil {
		c.WriteScopes = []string{}
	}
	return LeaseView{Lease: c, Effective: eff}, nil
}

// leaseViewPtr is ViewLease as a pointer, nil for a nil lease.
func leaseViewPtr(v *View, goal string, l *Lease, now time.Time) (*LeaseView, error) {
	if l == nil {
		return nil, nil
	}
	lv, err := ViewLease(v, goal, l, now)
	if err != nil {
		return nil, err
	}
	return &lv, nil
}

// leaseIsEffective loads l's todo and owner through v and applies LeaseEffective.
func leaseIsEffective(v *View, goal string, l *Lease, now time.Time) (bool, error) {
	if l == nil || l.Status != LeaseActive || !now.Before(l.ExpiresAt) {
		return false, nil // cheap refusals first: no reads needed
	}
	t, err := v.Todo(goal, l.TodoID)
	if err != nil {
		return false, err
	}
	a, err := v.Agent(goal, l.Owner)
	if err != nil {
		return false, err
	}
	return LeaseEffective(l, t, a, now), nil
}

// Inspect reads the current lease of a todo.
func Inspect(v *View, goal, todo string, now time.Time) (*Outcome, error) {
	if err := CheckGoalID(goal); err != nil {
		return nil, err
	}
	if err := CheckTodoID(todo); err != nil {
		return nil, err
	}
	if _, err := RequireGoal(v, goal); err != nil {
		return nil, err
	}
	if _, err := RequireTodo(v, goal, todo); err != nil {
		return nil, err
	}
	l, err := v.Lease(goal, todo)
	if err != nil {
		return nil, err
	}
	lv, err := leaseViewPtr(v, goal, l, now)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: OpLeaseInspect, Goal: goal, Todo: todo,
		Data: LeaseResult{GoalID: goal, TodoID: todo, Lease: lv}}
	if l != nil {
		o.Version, o.Epoch = l.Version, l.Epoch
	}
	return o, nil
}
