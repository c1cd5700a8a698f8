package lease

import (
	"slices"
	"testing"
)

// TestDependents: the todos naming an id in depends_on, sorted, from the
// index when it answers and from the records otherwise.
func TestDependents(t *testing.T) {
	files := MemFiles{}
	put := func(id string, deps ...string) {
		files[TodoPath("g", id)] = Encode(&Todo{ID: id, Text: "x", Status: TodoOpen, Priority: "P2", DependsOn: deps,
			CreatedAt: tcT0, UpdatedAt: tcT0})
	}
	put("todo_aaa")
	put("todo_ccc", "todo_aaa", "todo_bbb")
	put("todo_bbb", "todo_aaa")
	put("todo_ddd", "todo_zzz")
	cases := []struct {
		name  string
		index DependentsIndex
		id    string
		want  []string
	}{
		{name: "scan", id: "todo_aaa", want: []string{"todo_bbb", "todo_ccc"}},
		{name: "scan, none", id: "todo_ccc", want: []string{}},
		{name: "scan, missing dependency", id: "todo_zzz", want: []string{"todo_ddd"}},
		{name: "index answers", id: "todo_aaa", want: []string{"todo_x"},
			index: func(goal, id string) ([]string, bool) { return []string{"todo_x"}, true }},
		{name: "index cannot answer", id: "todo_aaa", want: []string{"todo_bbb", "todo_ccc"},
			index: func(goal, id string) ([]string, bool) { return nil, false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := NewView(files, "rev", tcT0)
			if c.index != nil {
				v.UseDependents(c.index)
			}
			got, err := Dependents(v, "g", c.id)
			if err != nil || got == nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
