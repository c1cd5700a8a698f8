package loopx

import (
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// The work loop: todos, claims and task leases. Every method resolves the
// contract's defaults (goal, acting agent) on the head it decides on, then
// calls one pure decision.

// ShowTodo shows a todo with its relations and lease.
func (s *Store) ShowTodo(goal, todo string) (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
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
		tv, err := lease.ViewTodo(v, g, t, now, true)
		if err != nil {
			return nil, err
		}
		return &lease.Outcome{Operation: "todo.show", Data: map[string]any{
			"goal_id": g, "todo_id": t.ID, "status": t.Status,
			"claimed_by": lease.EffectiveClaimant(t, now), "todo": tv}}, nil
	})
}

// TodoFilter filters todo list.
type TodoFilter struct {
	Goal, Status, Agent string
}

// ListTodos lists a goal's todos, highest priority first.
func (s *Store) ListTodos(f TodoFilter) (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		g, err := s.goalOf(v, f.Goal)
		if err != nil {
			return nil, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return nil, err
		}
		if f.Status != "" && f.Status != lease.TodoOpen && f.Status != lease.TodoDone && f.Status != lease.TodoSuperseded {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "--status %q: want open, done or superseded", f.Status)
		}
		if f.Agent != "" {
			if err := lease.CheckAgentID("agent id", f.Agent); err != nil {
				return nil, err
			}
		}
		todos, err := lease.ListTodos(v, g, f.Status, f.Agent, now)
		if err != nil {
			return nil, err
		}
		views, err := lease.ViewTodos(v, g, todos, now)
		if err != nil {
			return nil, err
		}
		return &lease.Outcome{Operation: "todo.list", Data: map[string]any{"goal_id": g, "todos": views, "count": len(views)}}, nil
	})
}

// Ready lists the todos an agent may take now, highest priority first.
func (s *Store) Ready(goal, agent string) (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return nil, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return nil, err
		}
		a, err := lease.ResolveActor(v, g, agent, "")
		if err != nil {
			return nil, err
		}
		todos, err := lease.Ready(v, g, a, now)
		if err != nil {
			return nil, err
		}
		views, err := lease.ViewTodos(v, g, todos, now)
		if err != nil {
			return nil, err
		}
		return &lease.Outcome{Operation: "todo.ready", Data: map[string]any{"goal_id": g, "agent_id": a, "todos": views, "count": len(views)}}, nil
	})
}

// ReadyClaim claims the first todo the agent may take, atomically.
func (s *Store) ReadyClaim(req lease.ReadyClaimRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Claim claims a todo (optionally acquiring its lease in the same commit).
func (s *Store) Claim(req lease.ClaimRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Update updates a todo.
func (s *Store) Update(req lease.UpdateRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Complete completes a todo, releasing its verified lease in the same commit.
func (s *Store) Complete(req lease.CompleteRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Supersede closes a todo as superseded.
func (s *Store) Supersede(req lease.SupersedeRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Acquire acquires (or takes over) a todo's task lease.
func (s *Store) Acquire(req lease.AcquireRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Renew renews the current execution's lease.
func (s *Store) Renew(req lease.RenewRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Transfer hands the lease (and with TransferClaim the claim) to another agent.
func (s *Store) Transfer(req lease.TransferRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Release releases the current execution's lease.
func (s *Store) Release(req lease.ReleaseRequest) (*Result, error) {
	return s.Apply(lease.CallOf(req))
}

// Inspect reads a todo's current lease and whether it is effective.
func (s *Store) Inspect(goal, todo string) (*Result, error) {
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		if err := lease.CheckTodoID(todo); err != nil {
			return nil, err
		}
		g, err := s.goalOf(v, goal)
		if err != nil {
			return nil, err
		}
		o, err := lease.Inspect(v, g, todo, now)
		if err != nil {
			return nil, err
		}
		return o, nil
	})
}
