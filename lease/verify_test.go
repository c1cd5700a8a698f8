package lease

import (
	"strings"
	"testing"
)

func TestVerifyReportsEveryProblem(t *testing.T) {
	files := MemFiles{}
	v := NewView(files, "", tlT0)
	v.PutMeta(&StoreMeta{FormatVersion: 1, CreatedAt: tlT0})
	v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: tlT0, UpdatedAt: tlT0})
	v.PutAgent("g", &Agent{ID: "agent-a", Role: RoleAgent, Status: AgentRegistered})
	v.PutTodo("g", &Todo{ID: "todo_good", Text: "x", Status: TodoOpen, Priority: "P2"})
	v.PutTodo("g", &Todo{ID: "todo_dep", Text: "x", Status: TodoOpen, Priority: "P2", DependsOn: []string{"todo_gone"}})
	files.Apply(v.Changes())
	clean, err := Verify(NewView(files, "r", tlT0))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{TodoPath("g", "todo_dep"): true} // depends on a missing todo
	if len(clean) != 1 || !want[clean[0].Path] {
		t.Fatalf("problems on a store with one dangling dependency: %+v", clean)
	}

	// Break it in every way a hand edit can.
	files[AgentPath("g", "agent-b")] = []byte("agent_id: agent-b\nrole: agent\nstatus: registered\nnickname: x\n") // unknown field
	files[TodoPath("g", "todo_good")] = []byte("{{{")                                                              // garbage
	moved := Encode(&Todo{ID: "todo_moved", Text: "x", Status: TodoOpen, Priority: "P2"})
	files["goals/g/todos/00/todo_moved.yaml"] = moved                               // wrong bucket
	files["goals/g/stray.txt"] = []byte("hello")                                    // not a record
	files[LeasePath("g", "todo_good")] = []byte("todo_id: todo_good\nversion: x\n") // wrong type
	problems, err := Verify(NewView(files, "r", tlT0))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Code{}
	for _, p := range problems {
		got[p.Path] = p.Code
	}
	for _, path := range []string{AgentPath("g", "agent-b"), TodoPath("g", "todo_good"), "goals/g/todos/00/todo_moved.yaml",
		"goals/g/stray.txt", LeasePath("g", "todo_good"), TodoPath("g", "todo_dep")} {
		if got[path] != CodeCorruptRecord {
			t.Errorf("no corrupt_record for %s (got %+v)", path, problems)
		}
	}
	for i := 1; i < len(problems); i++ {
		if problems[i-1].Path > problems[i].Path {
			t.Fatalf("problems are not sorted by path: %+v", problems)
		}
	}
}

// TestVerifyKeepsTheOrderOfARecordsProblems: problems of one record stay in
// the order they were found (here, its dependencies' order).
func TestVerifyKeepsTheOrderOfARecordsProblems(t *testing.T) {
	files := MemFiles{}
	v := NewView(files, "", tlT0)
	v.PutMeta(&StoreMeta{FormatVersion: 1, CreatedAt: tlT0})
	v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: tlT0, UpdatedAt: tlT0})
	v.PutTodo("g", &Todo{ID: "todo_dep", Text: "x", Status: TodoOpen, Priority: "P2", DependsOn: []string{"todo_gone_b", "todo_gone_a", "todo_gone_c"}})
	files.Apply(v.Changes())
	problems, err := Verify(NewView(files, "r", tlT0))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range problems {
		for _, d := range []string{"todo_gone_a", "todo_gone_b", "todo_gone_c"} {
			if strings.Contains(p.Message, d) {
				order = append(order, d)
			}
		}
	}
	if strings.Join(order, " ") != "todo_gone_b todo_gone_a todo_gone_c" {
		t.Fatalf("problems %+v", problems)
	}
}
