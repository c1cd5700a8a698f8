package loopx

import (
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// The typed API, for programs that embed loopx. The command methods
// (ShowTodo, ListTodos, Claim, Acquire, ...) return a *Result whose Data is
// the command's own payload type (TodoShow, lease.TodoResult,
// lease.LeaseResult, ...); the methods here return the records themselves
// (lease.TodoView, lease.LeaseView) and answer "is this claim in force at
// that time". They decide nothing of their own: each one is a command's
// read path or a domain judgement (lease.HoldsClaim, lease.LeaseEffective)
// on the head, and mutations stay the command methods, each one
// compare-and-swap commit through Store.Apply.
//
// Seed 004's Registry, in these terms:
//
//	registry.get_todo(id)        Store.Todo(goal, id)
//	registry.save_todo(todo)     Store.Claim, Store.Update (ClearClaim), Store.Complete, ...:
//	                             one operation per change, never a whole record written back
//	registry.is_claim_valid(t)   Store.IsClaimValid(goal, id, agent, at)

// Todo returns a todo as `loopx todo show` shows it: the record with its
// claim as in force at the store's clock (an expired claim shows no claim
// fields, ClaimExpired set), its notes, and its relations (open dependencies, the
// todos it unblocks, its lease). goal "" is the store's default goal. A
// missing todo is the todo_not_found error.
func (s *Store) Todo(goal, id string) (lease.TodoView, error) {
	res, err := s.ShowTodo(goal, id)
	if err != nil {
		return lease.TodoView{}, err
	}
	return res.Data.Todo, nil
}

// Todos lists a goal's todos as `loopx todo list` does, highest priority
// first, without relations (Store.Todo adds them).
func (s *Store) Todos(f TodoFilter) ([]lease.TodoView, error) {
	res, err := s.ListTodos(f)
	if err != nil {
		return nil, err
	}
	return res.Data.Todos, nil
}

// ReadyTodos lists the todos agent may take now, as `loopx todo ready`
// does, highest priority first ("" agent: the goal's only agent).
func (s *Store) ReadyTodos(goal, agent string) ([]lease.TodoView, error) {
	res, err := s.Ready(goal, agent)
	if err != nil {
		return nil, err
	}
	return res.Data.Todos, nil
}

// Lease returns a todo's current lease as `loopx task-lease inspect` shows
// it, with Effective judged at the store's clock; nil when the todo never
// had a lease (its version is 0, the expected version of a first acquire).
func (s *Store) Lease(goal, todo string) (*lease.LeaseView, error) {
	res, err := s.Inspect(goal, todo)
	if err != nil {
		return nil, err
	}
	return res.Data.Lease, nil
}

// IsClaimValid reports whether the todo's claim is in force at time at:
// held by agent (as claimed_by or as its delegated scope agent), or with
// agent "", held by anyone. It judges the todo as it is on the head, as a
// decision made at at would: at is truncated to seconds and never earlier
// than the head's time, like every decision time; the zero time is the
// store's clock (Options.Now). A claim without a TTL never expires.
func (s *Store) IsClaimValid(goal, todo, agent string, at time.Time) (bool, error) {
	var valid bool
	err := s.judgeTodoAt(goal, todo, at, func(v *lease.View, g string, t *lease.Todo, at time.Time) error {
		if agent == "" {
			valid = lease.ClaimEffective(t, at)
		} else {
			valid = lease.HoldsClaim(t, agent, at)
		}
		return nil
	})
	return valid, err
}

// IsLeaseEffective reports whether the todo's current lease grants
// execution at time at (lease.LeaseEffective: active, unexpired, the todo
// open, its owner registered under the registration it was granted and not
// excluded, the claim empty or the owner's). at is a decision time as for
// IsClaimValid. A todo that never had a lease has none in force.
func (s *Store) IsLeaseEffective(goal, todo string, at time.Time) (bool, error) {
	var effective bool
	err := s.judgeTodoAt(goal, todo, at, func(v *lease.View, g string, t *lease.Todo, at time.Time) error {
		l, err := v.Lease(g, t.ID)
		if err != nil || l == nil {
			return err
		}
		owner, err := v.Agent(g, l.Owner)
		if err != nil {
			return err
		}
		effective = lease.LeaseEffective(l, t, owner, at)
		return nil
	})
	return effective, err
}

// judgeTodoAt reads a todo on the head (resolving the goal as the commands
// do) and calls judge with the decision time of at.
func (s *Store) judgeTodoAt(goal, todo string, at time.Time, judge func(v *lease.View, goal string, t *lease.Todo, at time.Time) error) error {
	_, err := Read(s, "todo.show", func(v *lease.View, now time.Time) (struct{}, error) {
		if err := lease.CheckTodoID(todo); err != nil {
			return struct{}{}, err
		}
		g, err := s.goalOf(v, goal)
		if err != nil {
			return struct{}{}, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return struct{}{}, err
		}
		t, err := lease.RequireTodo(v, g, todo)
		if err != nil {
			return struct{}{}, err
		}
		when := now
		if !at.IsZero() {
			when = lease.Now(at, v.HeadTime)
		}
		return struct{}{}, judge(v, g, t, when)
	})
	return err
}
