package loopx

import (
	"fmt"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// The typed API, for programs that embed loopx. The command methods
// (ShowTodo, ListTodos, Claim, Acquire, ...) return a *Result whose Data is
// the command's JSON fields; the methods here return the records themselves
// (lease.TodoView, lease.LeaseView) and answer "is this claim in force at
// that time". They decide nothing of their own: each one is a command's
// read path or a domain judgement (lease.HoldsClaim, lease.LeaseEffective)
// on the head, and mutations stay the command methods, each one
// compare-and-swap commit through Store.Apply, whose results the Result
// accessors below (Todo, Lease, Applied) read typed.
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
	return field[lease.TodoView](res, "todo")
}

// Todos lists a goal's todos as `loopx todo list` does, highest priority
// first, without relations (Store.Todo adds them).
func (s *Store) Todos(f TodoFilter) ([]lease.TodoView, error) {
	res, err := s.ListTodos(f)
	if err != nil {
		return nil, err
	}
	return field[[]lease.TodoView](res, "todos")
}

// ReadyTodos lists the todos agent may take now, as `loopx todo ready`
// does, highest priority first ("" agent: the goal's only agent).
func (s *Store) ReadyTodos(goal, agent string) ([]lease.TodoView, error) {
	res, err := s.Ready(goal, agent)
	if err != nil {
		return nil, err
	}
	return field[[]lease.TodoView](res, "todos")
}

// Lease returns a todo's current lease as `loopx task-lease inspect` shows
// it, with Effective judged at the store's clock; nil when the todo never
// had a lease (its version is 0, the expected version of a first acquire).
func (s *Store) Lease(goal, todo string) (*lease.LeaseView, error) {
	res, err := s.Inspect(goal, todo)
	if err != nil {
		return nil, err
	}
	lr, ok := res.Data.(lease.LeaseResult)
	if !ok {
		return nil, shapeError(res, "lease")
	}
	return lr.Lease, nil
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
	_, err := s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		if err := lease.CheckTodoID(todo); err != nil {
			return nil, err
		}
		g, err := s.goalOf(v, goal)
		if err != nil {
			return nil, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return nil, err
		}
		t, err := lease.RequireTodo(v, g, todo)
		if err != nil {
			return nil, err
		}
		when := now
		if !at.IsZero() {
			when = lease.Now(at, v.HeadTime)
		}
		if err := judge(v, g, t, when); err != nil {
			return nil, err
		}
		return &lease.Outcome{Operation: "todo.show"}, nil
	})
	return err
}

// Applied reports whether the result is a mutation that wrote (status
// applied; replayed and no_change wrote nothing).
func (r *Result) Applied() bool {
	return r != nil && r.Mutation && r.Status == lease.StatusApplied
}

// Todo returns the todo a result shows, nil when it shows none: todo add,
// claim, update, complete, supersede and ready --claim (nil when no todo was
// ready), and todo show (ShowTodo).
func (r *Result) Todo() *lease.TodoView {
	if r == nil {
		return nil
	}
	switch d := r.Data.(type) {
	case *lease.TodoResult:
		if d != nil {
			return d.Todo
		}
	case lease.TodoAddData:
		return d.Todo
	case *lease.TodoAddData:
		if d != nil {
			return d.Todo
		}
	case map[string]any:
		if tv, ok := d["todo"].(lease.TodoView); ok {
			return &tv
		}
	}
	return nil
}

// Lease returns the lease a result shows, nil when it shows none: every
// task-lease operation (the todo's current lease after it; for a replay,
// as it is now), the todo mutations that acquired, verified (a proof
// given) or released one (claim and ready --claim with a lease key, update,
// complete, supersede), and todo show (the todo's lease).
func (r *Result) Lease() *lease.LeaseView {
	if r == nil {
		return nil
	}
	switch d := r.Data.(type) {
	case lease.LeaseResult:
		return d.Lease
	case *lease.LeaseResult:
		if d != nil {
			return d.Lease
		}
	case *lease.TodoResult:
		if d != nil {
			return d.Lease
		}
	}
	if tv := r.Todo(); tv != nil && tv.TodoRelations != nil {
		return tv.TodoRelations.Lease
	}
	return nil
}

// field reads one typed field of a read result's data.
func field[T any](res *Result, name string) (T, error) {
	var zero T
	m, ok := res.Data.(map[string]any)
	if !ok {
		return zero, shapeError(res, name)
	}
	v, ok := m[name].(T)
	if !ok {
		return zero, shapeError(res, name)
	}
	return v, nil
}

// shapeError says a command's result lacks the field a typed method reads:
// a bug in loopx, never in the caller.
func shapeError(res *Result, name string) error {
	return fmt.Errorf("loopx: the %s result has no %s of the expected type (%T): a bug in loopx", res.Operation, name, res.Data)
}
