package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// AddRequest adds a todo to a goal.
type AddRequest struct {
	Goal                string   `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo                string   `json:"todo_id,omitempty" desc:"todo id (generated when omitted)"`
	Text                string   `json:"text,omitempty" desc:"what is to be done" required:"true"`
	Priority            string   `json:"priority,omitempty" desc:"P0 (highest) .. P4 (default P2)"`
	Actor               string   `json:"agent_id,omitempty" desc:"acting agent (recorded as author)"`
	DependsOn           []string `json:"depends_on,omitempty" desc:"todos that must be done first"`
	RequiredWriteScopes []string `json:"required_write_scopes,omitempty" desc:"path globs the work writes"`
	BoundAgent          string   `json:"bound_agent,omitempty" desc:"only this agent may work on it"`
	ExcludedAgents      []string `json:"excluded_agents,omitempty" desc:"agents that may not work on it"`
}

// TodoAddData is the result of todo add. The todo has the shape of every
// other result that shows one (show, list, ready): a TodoView.
type TodoAddData struct {
	GoalID string    `json:"goal_id"`
	TodoID string    `json:"todo_id"`
	Todo   *TodoView `json:"todo"`
}

// GenerateTodoID derives an id from the head revision, the decision time and
// the text, so a fixed clock (LOOPX_NOW) gives reproducible ids while two
// writers deciding on different heads never collide.
func GenerateTodoID(revision string, now time.Time, text string) string {
	sum := sha256.Sum256([]byte(revision + "\x00" + now.UTC().Format(time.RFC3339) + "\x00" + text))
	return "todo_" + hex.EncodeToString(sum[:6])
}

// sortedSet returns the sorted, de-duplicated copy of s.
func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// AddTodo validates and writes a new open todo. Dependencies must exist (so no
// cycle can form: a todo can only depend on todos that existed before it).
func AddTodo(v *View, req AddRequest, now time.Time) (*Outcome, error) {
	if err := CheckGoalID(req.Goal); err != nil {
		return nil, err
	}
	if req.Todo != "" {
		if err := CheckTodoID(req.Todo); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, Errorf(CodeInvalidRequest, "todo text is required (--text)")
	}
	if req.Priority == "" {
		req.Priority = DefaultPriority
	}
	if !slices.Contains(Priorities, req.Priority) {
		return nil, Errorf(CodeInvalidRequest, "priority %q: want one of %v", req.Priority, Priorities)
	}
	for _, d := range req.DependsOn {
		if err := CheckTodoID(d); err != nil {
			return nil, err
		}
	}
	if err := CheckScopes(req.RequiredWriteScopes); err != nil {
		return nil, err
	}
	for _, a := range append([]string{req.BoundAgent}, req.ExcludedAgents...) {
		if a != "" {
			if err := CheckAgentID("agent id", a); err != nil {
				return nil, err
			}
		}
	}
	if req.BoundAgent != "" && slices.Contains(req.ExcludedAgents, req.BoundAgent) {
		return nil, Errorf(CodeInvalidRequest, "bound agent %s cannot also be excluded", req.BoundAgent)
	}
	if _, err := RequireActiveGoal(v, req.Goal); err != nil {
		return nil, err
	}
	if req.Actor != "" {
		if _, err := RequireAgent(v, req.Goal, "agent id", req.Actor); err != nil {
			return nil, err
		}
	}
	if req.Todo == "" {
		req.Todo = GenerateTodoID(v.Revision, now, req.Text)
	}
	if req.Todo != "" && slices.Contains(req.DependsOn, req.Todo) {
		return nil, Errorf(CodeInvalidRequest, "todo %s cannot depend on itself", req.Todo)
	}
	old, err := v.Todo(req.Goal, req.Todo)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if sameAdd(old, req) {
			// The same todo added again with the same --todo-id (a retry
			// after a lost answer): a replay of the first add.
			tv, err := ViewTodo(v, req.Goal, old, now, false)
			if err != nil {
				return nil, err
			}
			return &Outcome{Operation: OpTodoAdd, Status: StatusReplayed, Goal: req.Goal, Todo: old.ID, Actor: req.Actor,
				Data: TodoAddData{GoalID: req.Goal, TodoID: old.ID, Todo: &tv}}, nil
		}
		return nil, Errorf(CodeTodoExists, "todo %s already exists in goal %s (with other fields)", req.Todo, req.Goal).With("todo_id", req.Todo)
	}
	deps := sortedSet(req.DependsOn)
	for _, d := range deps {
		dep, err := v.Todo(req.Goal, d)
		if err != nil {
			return nil, err
		}
		if dep == nil {
			return nil, Errorf(CodeTodoNotFound, "dependency %s not found in goal %s", d, req.Goal).With("todo_id", d)
		}
	}
	t := &Todo{ID: req.Todo, Text: req.Text, Status: TodoOpen, Priority: req.Priority, DependsOn: deps,
		RequiredWriteScopes: sortedSet(req.RequiredWriteScopes), BoundAgent: req.BoundAgent,
		ExcludedAgents: sortedSet(req.ExcludedAgents), CreatedBy: req.Actor, CreatedAt: now,
		UpdatedBy: req.Actor, UpdatedAt: now}
	v.PutTodo(req.Goal, t)
	tv, err := ViewTodo(v, req.Goal, t, now, false)
	if err != nil {
		return nil, err
	}
	return &Outcome{Operation: OpTodoAdd, Status: StatusApplied, Goal: req.Goal, Todo: t.ID, Actor: req.Actor,
		Write: true, BoardChanged: true, Data: TodoAddData{GoalID: req.Goal, TodoID: t.ID, Todo: &tv}}, nil
}

// sameAdd reports whether todo t is what req adds (its fields as added).
func sameAdd(t *Todo, req AddRequest) bool {
	return t.Text == req.Text && t.Priority == req.Priority && t.CreatedBy == req.Actor && t.BoundAgent == req.BoundAgent &&
		slices.Equal(t.DependsOn, sortedSet(req.DependsOn)) &&
		slices.Equal(t.RequiredWriteScopes, sortedSet(req.RequiredWriteScopes)) &&
		slices.Equal(t.ExcludedAgents, sortedSet(req.ExcludedAgents))
}
