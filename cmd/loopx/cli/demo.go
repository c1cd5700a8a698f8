package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
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
	{"todo", "add", "--todo-id", "todo_tests", "--text", "Test the parser", "--required-write-scope", "src/parser/*_test.go"},
	{"todo", "list"},
	{"log", "--limit", "10"},
}

func runDemo(e *env, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "loopx-demo-")
		if err != nil {
			return err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "# scratch repository: %s\n", dir)
	for _, step := range demoSteps {
		fmt.Fprintf(e.stdout, "\n$ loopx %s\n", quoteArgs(step))
		args := append([]string{"--repo", dir, "--format", "text"}, step...)
		if code := Run(args, e.stdout, e.stdout); code != 0 {
			return fmt.Errorf("demo step %q failed with exit code %d", quoteArgs(step), code)
		}
	}
	return nil
}

func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " '*") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
