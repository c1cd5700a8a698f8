package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

func demoCmd(e *env) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:     "demo",
		Short:   "Run a whole work loop on a scratch repository and print the todo list and the log",
		Example: "  go run ./cmd/loopx demo\n  loopx demo --dir /tmp/loopx-demo",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runDemo(e, dir)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "where to create the scratch repository (default: a new temporary folder)")
	return c
}

// demoSteps is the demo's script: every step is a real loopx command line,
// printed before it runs, so the demo doubles as a tutorial.
var demoSteps = [][]string{
	{"init"},
	{"goal", "create", "--goal-id", "demo", "--title", "Ship the parser", "--handoff-mode", "hard_lease"},
	{"agent", "register", "--agent-id", "agent-a"},
	{"agent", "register", "--agent-id", "agent-b"},
	{"todo", "add", "--todo-id", "todo_parser", "--text", "Write the parser", "--priority", "P1", "--required-write-scope", "src/parser/**"},
	{"todo", "add", "--todo-id", "todo_docs", "--text", "Document the parser", "--depends-on", "todo_parser", "--required-write-scope", "docs/**"},
	{"todo", "add", "--todo-id", "todo_tests", "--text", "Test the parser", "--required-write-scope", "tests/parser/**"},
	{"todo", "list"},
	// Two agents find work: each claims the first todo it may take.
	{"todo", "ready", "--agent-id", "agent-a", "--claim"},
	{"todo", "ready", "--agent-id", "agent-b", "--claim"},
	// agent-a starts an execution on its todo, renews it, then hands the
	// execution and the claim over to agent-b in one commit.
	{"task-lease", "acquire", "--todo-id", "todo_parser", "--owner", "agent-a", "--idempotency-key", "exec-a1",
		"--expected-version", "0", "--ttl-seconds", "600", "--write-scope", "src/parser/**"},
	{"task-lease", "renew", "--todo-id", "todo_parser", "--owner", "agent-a", "--idempotency-key", "exec-a1",
		"--expected-version", "1", "--ttl-seconds", "600"},
	{"task-lease", "transfer", "--todo-id", "todo_parser", "--owner", "agent-a", "--idempotency-key", "exec-a1",
		"--expected-version", "2", "--new-owner", "agent-b", "--new-idempotency-key", "exec-b1", "--ttl-seconds", "600", "--transfer-claim"},
	{"task-lease", "inspect", "--todo-id", "todo_parser"},
	// The receiver continues with its proof and completes; the lease is released in the same commit.
	{"todo", "update", "--todo-id", "todo_parser", "--agent-id", "agent-b", "--note", "Picked up from agent-a",
		"--task-lease-idempotency-key", "exec-b1", "--task-lease-expected-version", "3"},
	{"todo", "complete", "--todo-id", "todo_parser", "--agent-id", "agent-b", "--evidence", "parser merged",
		"--task-lease-idempotency-key", "exec-b1", "--task-lease-expected-version", "3"},
	// agent-b's own todo: an execution it releases, then completes.
	{"task-lease", "acquire", "--todo-id", "todo_tests", "--owner", "agent-b", "--idempotency-key", "exec-b2",
		"--expected-version", "0", "--ttl-seconds", "600", "--write-scope", "tests/parser/**"},
	{"task-lease", "release", "--todo-id", "todo_tests", "--owner", "agent-b", "--idempotency-key", "exec-b2", "--expected-version", "1"},
	{"todo", "complete", "--todo-id", "todo_tests", "--agent-id", "agent-b", "--evidence", "12 tests pass"},
	{"todo", "list"},
	{"log", "--limit", "30"},
}

func runDemo(e *env, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "loopx-demo-")
		if err != nil {
			return err
		}
		dir = d
	}
	if loopx.HasStore(dir) {
		return lease.Errorf(lease.CodeInvalidRequest, "%s already holds a loopx store: the demo makes its own scratch repository; give a new folder (or none)", dir).With("field", "dir")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "# scratch repository: %s\n", dir)
	fmt.Fprintf(e.stdout, "# the board: git -C %s show refs/loopx/state:goals/demo/TODO.md\n", dir)
	for _, step := range demoSteps {
		fmt.Fprintf(e.stdout, "\n$ loopx %s\n", quoteArgs(step))
		args := append([]string{"--repo", dir, "--format", "text"}, step...)
		if code := Run(args, e.stdout, e.stdout); code != 0 {
			return fmt.Errorf("demo step %q failed with exit code %d", quoteArgs(step), code)
		}
	}
	return nil
}

// quoteArgs writes args as a shell would read them back: an argument with
// a space or a shell character is single-quoted, a quote inside it closed,
// escaped and reopened.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '*?\"$`\\;&|<>()[]{}!#~\t\n") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
