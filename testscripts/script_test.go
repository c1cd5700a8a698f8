// Package testscripts runs the loopx command line against txtar scripts, one
// behaviour per file. Each script starts in a fresh folder with a fixed clock
// (LOOPX_NOW) and JSON output; see README.md in this folder.
package testscripts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"loopx": func() { os.Exit(cli.Main()) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, Params())
}

// Params are the testscript parameters of loopx's suite; other suites can
// reuse them.
func Params() testscript.Params {
	return testscript.Params{
		Dir:                 ".",
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			for k, v := range map[string]string{
				"HOME":                home,
				"LOOPX_NOW":           "2026-01-01T00:00:00Z",
				"LOOPX_FORMAT":        "json",
				"LOOPX_LOCK_TIMEOUT":  "5s",
				"GIT_CONFIG_NOSYSTEM": "1",
				"GIT_AUTHOR_NAME":     "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
				"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
				// Hand-made commits are dated at the fixed clock too: a commit
				// dated now would be a head in the future (clock_skew).
				"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
			} {
				e.Setenv(k, v)
			}
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"jq":      cmdJQ,
			"path":    cmdPath,
			"exits":   cmdExits,
			"envfile": cmdEnvFile,
		},
	}
}

// cmdJQ prints a field of the JSON the previous command printed, like
// `jq PATH` on its stdout: "jq .claimed_by", "jq .lease.version",
// "jq .todos[0].todo_id". Strings print raw (as jq -r), others as JSON.
// The printed value becomes the new stdout, so stdout/cmp can check it.
func cmdJQ(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: jq .path")
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
		ts.Fatalf("jq: stdout is not JSON: %v", err)
	}
	for _, part := range regexp.MustCompile(`\.[A-Za-z0-9_]+|\[\d+\]`).FindAllString(args[0], -1) {
		switch {
		case strings.HasPrefix(part, "."):
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[part[1:]]
		default:
			i, _ := strconv.Atoi(strings.Trim(part, "[]"))
			a, ok := v.([]any)
			if !ok || i >= len(a) {
				v = nil
				break
			}
			v = a[i]
		}
	}
	out := ""
	if s, ok := v.(string); ok {
		out = s
	} else {
		b, _ := json.Marshal(v)
		out = string(b)
	}
	if neg {
		ts.Fatalf("jq does not support negation")
	}
	// What a custom command prints becomes stdout for later assertions.
	fmt.Fprintf(ts.Stdout(), "%s\n", out)
}

// cmdPath sets an environment variable to the tree path of a record on the
// state ref: "path VAR todo GOAL TODO" or "path VAR lease GOAL TODO".
func cmdPath(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: path VAR todo|lease GOAL TODO")
	}
	switch args[1] {
	case "todo":
		ts.Setenv(args[0], todoPath(args[2], args[3]))
	case "lease":
		ts.Setenv(args[0], leasePath(args[2], args[3]))
	default:
		ts.Fatalf("path: unknown kind %q", args[1])
	}
}

// cmdExits runs a program and checks its exit code, which the contract fixes
// (1 rejected, 2 usage, 3 transient): "exits 3 loopx todo add --text x".
// stdout and stderr are kept for later assertions.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

// cmdEnvFile sets an environment variable to the content of a file, trimmed
// of surrounding space: "envfile REV $WORK/rev" after "cp stdout $WORK/rev".
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: envfile VAR FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}
