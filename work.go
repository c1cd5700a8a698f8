package loopx

import (
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// The work loop: todos, claims and task leases. Every method resolves the
// contract's defaults (goal, acting agent) on the head it decides on, then
// calls one pure decision.

// TodoShow is the result of todo show: the todo with its relations and
// lease, its status and its effective claim ("" for none) repeated at the
// top level (`loopx todo show | jq .claimed_by`).
type TodoShow struct {
	GoalID    string         `json:"goal_id"`
	TodoID    string         `json:"todo_id"`
	Status    string         `json:"status"`
	ClaimedBy string         `json:"claimed_by"`
	Todo      lease.TodoView `json:"todo"`
}

// ShowTodo shows a todo with its relations and lease.
func (s *Store) ShowTodo(goal, todo string) (*Result[TodoShow], error) {
	return Read(s, "todo.show", func(v *lease.View, now time.Time) (TodoShow, error) {
		if err := lease.CheckTodoID(todo); err != nil {
			return TodoShow{}, err
		}
		g, err := s.goalOf(v, goal)
		if err != nil {
			return TodoShow{}, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return TodoShow{}, err
		}
		t, err := lease.RequireTodo(v, g, todo)
		if err != nil {
			return TodoShow{}, err
		}
		tv, err := lease.ViewTodo(v, g, t, now, true)
		if err != nil {
			return TodoShow{}, err
		}
		return TodoShow{GoalID: g, TodoID: t.ID, Status: t.Status, ClaimedBy: lease.EffectiveClaimant(t, now), Todo: tv}, nil
	})
}

// TodoFilter filters todo list; Page asks for a page of the list.
type TodoFilter struct {
	Goal, Status, Agent string
	Page
}

// Page is a page of a list: at most Limit entries (0: all of them) from
// the Offset-th on.
type Page struct {
	Limit, Offset int
}

// paged is the page of todos p asks for, and the paging fields of the
// result when a page was asked for (nil otherwise).
func (p Page) paged(todos []*lease.Todo) ([]*lease.Todo, *PageInfo, error) {
	if err := p.check(); err != nil {
		return nil, nil, err
	}
	info := p.info(len(todos))
	if info == nil {
		return todos, nil, nil
	}
	todos = todos[min(p.Offset, len(todos)):]
	if p.Limit > 0 && len(todos) > p.Limit {
		todos = todos[:p.Limit]
	}
	return todos, info, nil
}

// check refuses a negative limit or offset.
func (p Page) check() error {
	if p.Limit < 0 || p.Offset < 0 {
		return lease.Errorf(lease.CodeInvalidRequest, "a page's limit and offset must not be negative")
	}
	return nil
}

// info is the paging fields of a page of a list of total todos when a
// page was asked for (nil otherwise): every todo that matched (total)
// and, when more follow, where the next page starts.
func (p Page) info(total int) *PageInfo {
	if p.Limit == 0 && p.Offset == 0 {
		return nil
	}
	info := &PageInfo{Total: total}
	if p.Limit > 0 && total-min(p.Offset, total) > p.Limit {
		next := min(p.Offset, total) + p.Limit
		info.NextOffset = &next
	}
	return info
}

// PageInfo is what a paged list adds: how many todos matched, and the
// offset of the next page (absent on the last page).
type PageInfo struct {
	Total      int  `json:"total"`
	NextOffset *int `json:"next_offset,omitempty"`
}

func (p *PageInfo) jsonFields() []jsonField {
	if p == nil {
		return nil
	}
	f := []jsonField{{"total", p.Total}}
	if p.NextOffset != nil {
		f = append(f, jsonField{"next_offset", *p.NextOffset})
	}
	return f
}

// TodoList is the result of todo list: a goal's todos (without
// relations), highest priority first; with a page, that page of them.
type TodoList struct {
	GoalID string           `json:"goal_id"`
	Todos  []lease.TodoView `json:"todos"`
	Count  int              `json:"count"`
	*PageInfo
}

func (d TodoList) jsonFields() []jsonField {
	return append([]jsonField{{"goal_id", d.GoalID}, {"todos", d.Todos}, {"count", d.Count}}, d.PageInfo.jsonFields()...)
}

// ReadyList is the result of todo ready: the todos agent may take now;
// with a page, that page of them.
type ReadyList struct {
	GoalID  string           `json:"goal_id"`
	AgentID string           `json:"agent_id"`
	Todos   []lease.TodoView `json:"todos"`
	Count   int              `json:"count"`
	// NotReady are the goal's other open todos and why each is not ready
	// (held, claimed, dependencies, a scope of another lease: the same
	// list as status's, at most lease.MaxNotReady, NotReadyMore counting
	// the rest). It is not paged: a page of the ready todos still says
	// why the others are missing.
	NotReady     []lease.NotReady `json:"not_ready"`
	NotReadyMore int              `json:"not_ready_more,omitempty"`
	*PageInfo
}

func (d ReadyList) jsonFields() []jsonField {
	f := []jsonField{{"goal_id", d.GoalID}, {"agent_id", d.AgentID}, {"todos", d.Todos}, {"count", d.Count}, {"not_ready", d.NotReady}}
	if d.NotReadyMore > 0 {
		f = append(f, jsonField{"not_ready_more", d.NotReadyMore})
	}
	return append(f, d.PageInfo.jsonFields()...)
}

// ListTodos lists a goal's todos, highest priority first.
func (s *Store) ListTodos(f TodoFilter) (*Result[TodoList], error) {
	return Read(s, "todo.list", func(v *lease.View, now time.Time) (TodoList, error) {
		g, err := s.goalOf(v, f.Goal)
		if err != nil {
			return TodoList{}, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return TodoList{}, err
		}
		if f.Status != "" && f.Status != lease.TodoOpen && f.Status != lease.TodoDone && f.Status != lease.TodoSuperseded {
			return TodoList{}, lease.Errorf(lease.CodeInvalidRequest, "--status %q: want open, done or superseded", f.Status)
		}
		if f.Agent != "" {
			if err := lease.CheckAgentID("agent id", f.Agent); err != nil {
				return TodoList{}, err
			}
		}
		if err := f.Page.check(); err != nil {
			return TodoList{}, err
		}
		views, total, err := lease.ListTodoViews(v, g, f.Status, f.Agent, now, f.Offset, f.Limit)
		if err != nil {
			return TodoList{}, err
		}
		return TodoList{GoalID: g, Todos: views, Count: len(views), PageInfo: f.Page.info(total)}, nil
	})
}

// Ready lists the todos an agent may take now, highest priority first.
func (s *Store) Ready(goal, agent string) (*Result[ReadyList], error) {
	return s.ReadyPage(goal, agent, Page{})
}

// ReadyPage is Ready for a page of the todos.
func (s *Store) ReadyPage(goal, agent string, p Page) (*Result[ReadyList], error) {
	return Read(s, "todo.ready", func(v *lease.View, now time.Time) (ReadyList, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return ReadyList{}, err
		}
		if _, err := lease.RequireGoal(v, g); err != nil {
			return ReadyList{}, err
		}
		a, err := lease.ResolveActor(v, g, agent, "")
		if err != nil {
			return ReadyList{}, err
		}
		todos, notReady, more, err := lease.ReadyExplained(v, g, a, now)
		if err != nil {
			return ReadyList{}, err
		}
		if notReady == nil {
			notReady = []lease.NotReady{}
		}
		todos, page, err := p.paged(todos)
		if err != nil {
			return ReadyList{}, err
		}
		views, err := lease.ViewTodos(v, g, todos, now)
		if err != nil {
			return ReadyList{}, err
		}
		return ReadyList{GoalID: g, AgentID: a, Todos: views, Count: len(views), NotReady: notReady, NotReadyMore: more, PageInfo: page}, nil
	})
}

// ReadyClaim claims the first todo the agent may take, atomically.
func (s *Store) ReadyClaim(req lease.ReadyClaimRequest) (*Result[lease.TodoResult], error) {
	return applyAs[lease.TodoResult](s, lease.CallOf(req))
}

// Claim claims a todo (optionally acquiring its lease in the same commit).
func (s *Store) Claim(req lease.ClaimRequest) (*Result[lease.TodoResult], error) {
	return applyAs[lease.TodoResult](s, lease.CallOf(req))
}

// Update updates a todo.
func (s *Store) Update(req lease.UpdateRequest) (*Result[lease.TodoResult], error) {
	return applyAs[lease.TodoResult](s, lease.CallOf(req))
}

// Complete completes a todo, releasing its verified lease in the same commit.
func (s *Store) Complete(req lease.CompleteRequest) (*Result[lease.TodoResult], error) {
	return applyAs[lease.TodoResult](s, lease.CallOf(req))
}

// Supersede closes a todo as superseded.
func (s *Store) Supersede(req lease.SupersedeRequest) (*Result[lease.TodoResult], error) {
	return applyAs[lease.TodoResult](s, lease.CallOf(req))
}

// Acquire acquires (or takes over) a todo's task lease.
func (s *Store) Acquire(req lease.AcquireRequest) (*Result[lease.LeaseResult], error) {
	return applyAs[lease.LeaseResult](s, lease.CallOf(req))
}

// Renew renews the current execution's lease.
func (s *Store) Renew(req lease.RenewRequest) (*Result[lease.LeaseResult], error) {
	return applyAs[lease.LeaseResult](s, lease.CallOf(req))
}

// Transfer hands the lease (and with TransferClaim the claim) to another agent.
func (s *Store) Transfer(req lease.TransferRequest) (*Result[lease.LeaseResult], error) {
	return applyAs[lease.LeaseResult](s, lease.CallOf(req))
}

// Release releases the current execution's lease.
func (s *Store) Release(req lease.ReleaseRequest) (*Result[lease.LeaseResult], error) {
	return applyAs[lease.LeaseResult](s, lease.CallOf(req))
}

// Inspect reads a todo's current lease and whether it is effective.
func (s *Store) Inspect(goal, todo string) (*Result[lease.LeaseResult], error) {
	return Read(s, lease.OpLeaseInspect, func(v *lease.View, now time.Time) (lease.LeaseResult, error) {
		if err := lease.CheckTodoID(todo); err != nil {
			return lease.LeaseResult{}, err
		}
		g, err := s.goalOf(v, goal)
		if err != nil {
			return lease.LeaseResult{}, err
		}
		return outcomeOf[lease.LeaseResult](func() (*lease.Outcome, error) { return lease.Inspect(v, g, todo, now) })
	})
}
