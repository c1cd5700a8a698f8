package loopx_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/loopx-dev/loopx/lease"
)

// growHistory appends n commits to the state ref with git fast-import, each
// rewriting one todo's record with trailers like a todo.update, so commands
// can be measured on a long history without n loopx processes.
func growHistory(t testing.TB, dir string, n int) {
	t.Helper()
	head := git(t, dir, "rev-parse", "refs/loopx/state")
	path := lease.TodoPath("g", "todo_history")
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		rec := fmt.Sprintf("todo_id: todo_history\ntext: revision %d\nstatus: open\npriority: P2\ncreated_by: agent-a\ncreated_at: 2026-01-01T00:00:00Z\nupdated_by: agent-a\nupdated_at: 2026-01-01T00:00:00Z\n", i)
		msg := fmt.Sprintf("todo update g/todo_history by agent-a\n\nLoopx-Operation: todo.update\nLoopx-Goal: g\nLoopx-Todo: todo_history\nLoopx-Actor: agent-a\nLoopx-Status: applied\n")
		fmt.Fprintf(&in, "commit refs/loopx/state\ncommitter agent-a <agent-a@loopx.invalid> %d +0000\ndata %d\n%s", 1767225600+i, len(msg), msg)
		if i == 0 {
			fmt.Fprintf(&in, "from %s\n", head)
		}
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", path, len(rec), rec)
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--force")
	cmd.Dir = dir
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
}

// addCounter names the todos benchmark iterations add (b.N restarts at 0).
var addCounter int

// BenchmarkLongHistory compares commands on a fresh store and on one whose
// state ref has 100,000 more commits: a short log, a filtered log whose
// matches are recent, todo show, the commit-time guard check, and a todo add
// (board delivered).
func BenchmarkLongHistory(b *testing.B) {
	setup := func(b *testing.B, history int) string {
		dir := newStore(b, "g", "agent-a", "agent-b")
		must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_history", "--text", "h")
		must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_scoped", "--text", "s")
		must(b, dir, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_scoped", "--owner", "agent-a",
			"--idempotency-key", "k1", "--ttl-seconds", "86400", "--write-scope", "src/**")
		if history > 0 {
			growHistory(b, dir, history)
			must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_recent", "--text", "r")
		}
		must(b, dir, "gc")
		return dir
	}
	cmds := map[string][]string{
		"log-limit-20":    {"log", "--limit", "20"},
		"log-todo-recent": {"log", "--todo-id", "todo_history", "--limit", "20"},
		"todo-show":       {"todo", "show", "--goal-id", "g", "--todo-id", "todo_history"},
		"guard-check":     {"guard", "check", "--agent-id", "agent-b", "docs/readme.md", "lib/x.go"},
	}
	for _, history := range []int{0, 100000} {
		dir := setup(b, history)
		if n := git(b, dir, "rev-list", "--count", "refs/loopx/state"); history > 0 && !strings.HasPrefix(n, "1000") {
			b.Fatalf("history has %s commits", n)
		}
		for _, name := range []string{"log-limit-20", "log-todo-recent", "todo-show", "guard-check"} {
			b.Run(fmt.Sprintf("%s/history=%d", name, history), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					must(b, dir, cmds[name]...)
				}
			})
		}
		b.Run(fmt.Sprintf("todo-add/history=%d", history), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				addCounter++
				must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_added_%06d", addCounter), "--text", "x")
			}
		})
	}
}
