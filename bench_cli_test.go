package loopx_test

import (
	"fmt"
	"testing"
)

// BenchmarkCLITodoAdd measures one `loopx todo add` process against stores
// of 100 and 10,000 todos (board projection included).
func BenchmarkCLITodoAdd(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("todos=%d", n), func(b *testing.B) {
			dir := newStore(b, "g", "seed-agent")
			seedTodos(b, dir, n, 0)
			must(b, dir, "todo", "project-markdown", "--goal-id", "g")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_bench_%06d", i), "--text", "bench")
			}
		})
	}
}
