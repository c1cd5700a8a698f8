package lease

import (
	"testing"
	"time"
)

// TestAddTodo: todo add checks the request's shape (ids, text, priority,
// scopes, agents) before the store, the actor against the registry, and
// fills the default priority.
func TestAddTodo(t *testing.T) {
	cases := []struct {
		name     string
		req      AddRequest // Goal defaults to tcGoal, Text to "new work"
		code     Code
		priority string // of the written todo
	}{
		{name: "defaults", req: AddRequest{Todo: "todo_new"}, priority: DefaultPriority},
		{name: "priority given", req: AddRequest{Todo: "todo_new", Priority: "P0"}, priority: "P0"},
		{name: "bad priority", req: AddRequest{Todo: "todo_new", Priority: "P9"}, code: CodeInvalidRequest},
		{name: "bad todo id", req: AddRequest{Todo: "todo_X"}, code: CodeInvalidTodoID},
		{name: "blank text", req: AddRequest{Todo: "todo_new", Text: " \t"}, code: CodeInvalidRequest},
		{name: "bad dependency id", req: AddRequest{Todo: "todo_new", DependsOn: []string{"nope"}}, code: CodeInvalidTodoID},
		{name: "bad scope", req: AddRequest{Todo: "todo_new", RequiredWriteScopes: []string{"/abs/**"}}, code: CodeInvalidWriteScope},
		{name: "65 scopes", req: AddRequest{Todo: "todo_new", RequiredWriteScopes: manyScopes(65)}, code: CodeInvalidWriteScope},
		{name: "64 scopes", req: AddRequest{Todo: "todo_new", RequiredWriteScopes: manyScopes(64)}, priority: DefaultPriority},
		{name: "scope of 65 alternatives", req: AddRequest{Todo: "todo_new", RequiredWriteScopes: []string{"{a,b}/{c,d}/{e,f}/{g,h}/{i,j}/{k,l}/{m,n}"}}, code: CodeInvalidWriteScope},
		{name: "bad bound agent", req: AddRequest{Todo: "todo_new", BoundAgent: "Agent A"}, code: CodeInvalidAgentID},
		{name: "bad excluded agent", req: AddRequest{Todo: "todo_new", ExcludedAgents: []string{"Agent A"}}, code: CodeInvalidAgentID},
		{name: "bound and excluded", req: AddRequest{Todo: "todo_new", BoundAgent: "a", ExcludedAgents: []string{"b", "a"}}, code: CodeInvalidRequest},
		{name: "bound, another excluded", req: AddRequest{Todo: "todo_new", BoundAgent: "a", ExcludedAgents: []string{"b"}}, priority: DefaultPriority},
		{name: "registered actor", req: AddRequest{Todo: "todo_new", Actor: "a"}, priority: DefaultPriority},
		{name: "unregistered actor", req: AddRequest{Todo: "todo_new", Actor: "zed"}, code: CodeAgentNotRegistered},
		{name: "depends on itself", req: AddRequest{Todo: "todo_new", DependsOn: []string{"todo_new"}}, code: CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim)
			req := c.req
			req.Goal = tcGoal
			if req.Text == "" {
				req.Text = "new work"
			}
			_, err := f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) { return AddTodo(v, req, now) })
			tcCode(t, err, c.code)
			if c.code != "" {
				return
			}
			if td := f.todo("todo_new"); td.Priority != c.priority || td.Status != TodoOpen || td.BoundAgent != req.BoundAgent {
				t.Fatalf("todo %+v", td)
			}
		})
	}
}
