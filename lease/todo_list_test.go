package lease

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// stableSortTodos is SortTodos as it was: a stable sort comparing the
// todos themselves.
func stableSortTodos(todos []*Todo) {
	slices.SortStableFunc(todos, func(x, y *Todo) int {
		if c := cmp.Compare(PriorityRank(x.Priority), PriorityRank(y.Priority)); c != 0 {
			return c
		}
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
}

// TestSortTodos: priority first (unknown ones last), then creation
// instant (whatever the zone), then id, and todos equal in all three keep
// their order: the order of a stable sort, which it no longer is.
func TestSortTodos(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, c := range []struct {
		name string
		in   []*Todo
		want []string
	}{
		{"priority first", []*Todo{{ID: "a", Priority: "P3", CreatedAt: at}, {ID: "b", Priority: "P0", CreatedAt: at.Add(time.Hour)}}, []string{"b", "a"}},
		{"unknown priority last", []*Todo{{ID: "a", Priority: "", CreatedAt: at}, {ID: "b", Priority: "P3", CreatedAt: at}}, []string{"b", "a"}},
		{"oldest next", []*Todo{{ID: "a", Priority: "P1", CreatedAt: at.Add(time.Nanosecond)}, {ID: "b", Priority: "P1", CreatedAt: at}}, []string{"b", "a"}},
		{"instant, not zone", []*Todo{{ID: "a", Priority: "P1", CreatedAt: at.Add(time.Second)}, {ID: "b", Priority: "P1", CreatedAt: at.In(time.FixedZone("", -3600))}}, []string{"b", "a"}},
		{"then id", []*Todo{{ID: "b", Priority: "P1", CreatedAt: at}, {ID: "a", Priority: "P1", CreatedAt: at.In(time.FixedZone("", 7200))}}, []string{"a", "b"}},
		{"equal keep order", []*Todo{{ID: "x", Text: "1", Priority: "P1", CreatedAt: at}, {ID: "x", Text: "2", Priority: "P1", CreatedAt: at}, {ID: "x", Text: "3", Priority: "P1", CreatedAt: at}}, []string{"x1", "x2", "x3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			SortTodos(c.in)
			var got []string
			for _, td := range c.in {
				got = append(got, td.ID+td.Text)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	// Against the stable sort, on many todos with few distinct keys.
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 50; round++ {
		var todos []*Todo
		for i := 0; i < 500; i++ {
			todos = append(todos, &Todo{ID: fmt.Sprint("t", r.IntN(20)), Text: fmt.Sprint(i), Priority: []string{"P0", "P1", "P2", "P3", "?"}[r.IntN(5)],
				CreatedAt: at.Add(time.Duration(r.IntN(3)) * time.Nanosecond).Add(time.Duration(r.IntN(3)) * time.Hour)})
		}
		want := slices.Clone(todos)
		stableSortTodos(want)
		SortTodos(todos)
		if !slices.Equal(todos, want) {
			t.Fatalf("round %d: the order differs from the stable sort's", round)
		}
	}
}

// BenchmarkSortTodos sorts 10,000 todos as a list shows them: mostly one
// priority and one creation time, so the id decides; they come in path
// order, whose buckets (hashes of the ids) shuffle them.
func BenchmarkSortTodos(b *testing.B) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	todos := make([]*Todo, 10000)
	for i := range todos {
		todos[i] = &Todo{ID: fmt.Sprintf("todo_seed_%06d", i), Priority: "P3", CreatedAt: at}
		if i%10 == 0 {
			todos[i].Priority = "P1"
		}
	}
	slices.SortFunc(todos, func(x, y *Todo) int { return strings.Compare(TodoPath("g", x.ID), TodoPath("g", y.ID)) })
	work := make([]*Todo, len(todos))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, todos)
		SortTodos(work)
	}
}
