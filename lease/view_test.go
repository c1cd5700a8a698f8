package lease

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"testing"
)

// TestScansInPathOrder: a full scan visits records in path order, the
// decision's own writes included, with a record cache or without one.
func TestScansInPathOrder(t *testing.T) {
	files := &hashedFiles{MemFiles: MemFiles{}}
	v := NewView(files, "r1", tlT0)
	for _, i := range []int{3, 1, 4, 0, 2} {
		v.PutTodo("g", &Todo{ID: fmt.Sprintf("todo_n%03d", i), Text: "x", Status: TodoOpen, Priority: "P2"})
	}
	files.Apply(v.Changes())
	ids := func(cache bool) []string {
		w := NewView(files, "r1", tlT0)
		if cache {
			w.UseCache(NewRecordCache(nil))
		}
		w.PutTodo("g", &Todo{ID: "todo_n001a", Text: "pending", Status: TodoOpen, Priority: "P2"})
		todos, err := w.Todos("g")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, td := range todos {
			out = append(out, td.ID)
		}
		return out
	}
	want := []string{"todo_n000", "todo_n001", "todo_n001a", "todo_n002", "todo_n003", "todo_n004"}
	slices.SortFunc(want, func(a, b string) int { return cmp.Compare(TodoPath("g", a), TodoPath("g", b)) })
	for _, cache := range []bool{false, true} {
		if got := ids(cache); !slices.Equal(got, want) {
			t.Errorf("cache %v: scan order %v, want %v", cache, got, want)
		}
	}
}

// TestChangesSortedByPath: a decision's writes come out sorted by path, so
// the commit they make does not depend on the order of the decision's steps.
func TestChangesSortedByPath(t *testing.T) {
	v := NewView(MemFiles{}, "r1", tlT0)
	for _, id := range []string{"todo_ccc", "todo_aaa", "todo_bbb"} {
		v.PutTodo("g", &Todo{ID: id, Text: "x", Status: TodoOpen, Priority: "P2"})
	}
	v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: tlT0, UpdatedAt: tlT0})
	ch := v.Changes()
	if len(ch) != 4 || !sort.SliceIsSorted(ch, func(i, j int) bool { return ch[i].Path < ch[j].Path }) {
		t.Fatalf("changes %v", ch)
	}
}

// TestIsRecordPath: true exactly where the path is the one TodoPath and
// LeasePath build.
func TestIsRecordPath(t *testing.T) {
	for _, id := range []string{"todo_a", "todo_seed_000001", "x", "a/b", ""} {
		for _, dir := range []string{TodosDir("g"), LeasesDir("goal-2")} {
			p := dir + "/" + bucket(id) + "/" + id + ".yaml"
			if !isRecordPath(p, dir, id) {
				t.Errorf("%s: not the path of %q", p, id)
			}
			for b := 0; b < 256; b++ {
				if other := fmt.Sprintf("%02x", b); other != bucket(id) && isRecordPath(dir+"/"+other+"/"+id+".yaml", dir, id) {
					t.Errorf("bucket %s taken for %q's %s", other, id, bucket(id))
				}
			}
			for _, bad := range []string{dir + "/" + bucket(id) + "/" + id + ".yml",
				dir + "/" + bucket(id) + "/" + id + "x.yaml", dir + "x/" + bucket(id) + "/" + id + ".yaml", dir + "/" + bucket(id) + "-" + id + ".yaml",
				dir + "/" + bucket(id) + "/" + id + ".yaml/", "", dir} {
				if isRecordPath(bad, dir, id) {
					t.Errorf("%s: taken for the path of %q", bad, id)
				}
			}
		}
	}
}
