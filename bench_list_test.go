package loopx_test

import (
	"io"
	"os"
	"testing"

	lx "github.com/loopx-dev/loopx"
)

// BenchmarkListProcess is what one `todo list` and one `todo ready`
// process does on a goal of 10,000 todos, past its start-up: open the
// store, list from its saved listing, write the JSON, close. (The issue's
// target, ≤ 30 ms a process, is measured whole by bench/scale.sh.)
// LOOPX_BENCH_STORE names an existing store to measure instead.
func BenchmarkListProcess(b *testing.B) {
	dir := os.Getenv("LOOPX_BENCH_STORE")
	if dir == "" {
		dir = newStore(b, "g", "seed-agent", "bench-agent")
		seedTodos(b, dir, 10000, 10)
		must(b, dir, "todo", "list", "--goal-id", "g", "--limit", "1") // the listing saved
	}
	for _, c := range []struct {
		name string
		run  func(s *lx.Store) (interface{ WriteJSON(io.Writer) error }, error)
	}{
		{"list", func(s *lx.Store) (interface{ WriteJSON(io.Writer) error }, error) {
			return s.ListTodos(lx.TodoFilter{Goal: "g"})
		}},
		{"list-limit-50", func(s *lx.Store) (interface{ WriteJSON(io.Writer) error }, error) {
			return s.ListTodos(lx.TodoFilter{Goal: "g", Page: lx.Page{Limit: 50}})
		}},
		{"ready", func(s *lx.Store) (interface{ WriteJSON(io.Writer) error }, error) {
			return s.Ready("g", "bench-agent")
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := lx.Open(lx.Options{Dir: dir})
				if err != nil {
					b.Fatal(err)
				}
				r, err := c.run(s)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.WriteJSON(io.Discard); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
