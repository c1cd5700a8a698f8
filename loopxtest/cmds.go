package loopxtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/loopx-dev/loopx/lease"
)

// Cmds are the script commands the kit adds to testscript's own; the map is
// new on every call, so a suite may add its own commands to it:
//
//	jq .PATH
//	    Prints a field of the JSON the previous command printed, like jq
//	    on its stdout: "jq .claimed_by", "jq .lease.version",
//	    "jq .todos[0].todo_id". Strings print raw (as jq -r), other values
//	    as JSON, a missing field as null. What it prints becomes stdout,
//	    so stdout and cmp check it.
//	exits CODE PROGRAM [ARGS...]
//	    Runs a program and checks its exit code, which loopx's contract
//	    fixes (1 rejected, 2 usage, 3 transient): "exits 1 loopx todo
//	    claim ...". stdout and stderr are kept for the assertions after it.
//	path VAR todo|lease GOAL TODO
//	    Sets VAR to the path of a todo's record, or of its lease, in the
//	    state ref's tree: "path P todo g todo_lexer", then
//	    "exec git show refs/loopx/state:$P".
//	envfile VAR FILE
//	    Sets VAR to the content of FILE, trimmed of surrounding space:
//	    "cp stdout rev" then "envfile REV rev".
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(*testscript.TestScript, bool, []string){
		"jq":      cmdJQ,
		"exits":   cmdExits,
		"path":    cmdPath,
		"envfile": cmdEnvFile,
	}
}

var jqPart = regexp.MustCompile(`\.[A-Za-z0-9_]+|\[\d+\]`)

// cmdJQ is the jq command (see Cmds).
func cmdJQ(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("jq does not support negation")
	}
	if len(args) != 1 {
		ts.Fatalf("usage: jq .path")
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
		ts.Fatalf("jq: stdout is not JSON: %v", err)
	}
	for _, part := range jqPart.FindAllString(args[0], -1) {
		if name, ok := strings.CutPrefix(part, "."); ok {
			m, _ := v.(map[string]any)
			v = m[name]
			continue
		}
		i, _ := strconv.Atoi(strings.Trim(part, "[]"))
		a, _ := v.([]any)
		v = nil
		if i < len(a) {
			v = a[i]
		}
	}
	out, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		out = string(b)
	}
	// What a custom command prints becomes stdout for later assertions.
	fmt.Fprintf(ts.Stdout(), "%s\n", out)
}

// cmdExits is the exits command (see Cmds).
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

// cmdPath is the path command (see Cmds).
func cmdPath(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 || neg {
		ts.Fatalf("usage: path VAR todo|lease GOAL TODO")
	}
	switch args[1] {
	case "todo":
		ts.Setenv(args[0], lease.TodoPath(args[2], args[3]))
	case "lease":
		ts.Setenv(args[0], lease.LeasePath(args[2], args[3]))
	default:
		ts.Fatalf("path: unknown kind %q", args[1])
	}
}

// cmdEnvFile is the envfile command (see Cmds).
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: envfile VAR FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}
