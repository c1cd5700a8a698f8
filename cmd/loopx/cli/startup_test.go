package cli

import (
	"io"
	"slices"
	"testing"
)

// TestTopCommandsNameTheTree: the table of top-level commands names each
// command it builds, and the whole tree is the table (with help and
// completion), so a run that builds one command finds the one it names.
func TestTopCommandsNameTheTree(t *testing.T) {
	e := &env{stdout: io.Discard, stderr: io.Discard}
	var names []string
	for _, c := range topCommands() {
		if got := c.make(e).Name(); got != c.name {
			t.Errorf("topCommands names %q, its command is %q", c.name, got)
		}
		names = append(names, c.name)
	}
	var tree []string
	for _, c := range newRoot(e, nil).Commands() {
		if c.Name() != "help" && c.Name() != "completion" {
			tree = append(tree, c.Name())
		}
	}
	slices.Sort(names)
	slices.Sort(tree)
	if !slices.Equal(names, tree) {
		t.Fatalf("the tree has %v, the table %v", tree, names)
	}
}

// TestCommandWord: the command a run names is found past the global flags
// and their values, as cobra finds it.
func TestCommandWord(t *testing.T) {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard}, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"todo", "list"}, "todo"},
		{[]string{"--repo", "status", "todo", "list"}, "todo"},
		{[]string{"--repo=x", "status"}, "status"},
		{[]string{"--offline", "sync"}, "sync"},
		{[]string{"--format", "json", "--goal-id", "g", "task-lease", "acquire"}, "task-lease"},
		{[]string{"--unknown", "todo"}, "todo"},
		{[]string{"-v"}, ""},
		{[]string{"--", "todo"}, ""},
	} {
		if got := commandWord(root, c.args); got != c.want {
			t.Errorf("commandWord(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestRunBuildsOnlyItsCommand: a run naming a command builds that one;
// help and a run naming none build every command.
func TestRunBuildsOnlyItsCommand(t *testing.T) {
	count := func(args []string) int {
		n := 0
		for _, c := range newRoot(&env{stdout: io.Discard, stderr: io.Discard}, args).Commands() {
			if c.Name() != "help" && c.Name() != "completion" {
				n++
			}
		}
		return n
	}
	if n := count([]string{"--repo", "r", "todo", "list"}); n != 1 {
		t.Errorf("todo list built %d commands, want 1", n)
	}
	for _, args := range [][]string{{"help", "todo"}, {"tood"}, {"gen-docs"}, {"--version"}} {
		if n := count(args); n != len(topCommands()) {
			t.Errorf("%q built %d commands, want all %d", args, n, len(topCommands()))
		}
	}
}
