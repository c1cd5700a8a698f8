// Package loopxtest runs txtar scripts that call loopx, with
// github.com/rogpeppe/go-internal/testscript: the regression suite of a
// project that uses loopx, or of loopx itself (its testscripts folder uses
// this package).
//
// The loopx command runs inside the test binary (no build step, no loopx on
// the PATH). Each script starts in its own scratch Git repository ($WORK)
// with its own HOME, a fixed clock (LOOPX_NOW), JSON output, and a Git
// identity whose commits are dated at that clock too, so the same script
// gives the same records, commits and bytes on every run. A suite is two
// functions:
//
//	func TestMain(m *testing.M) {
//		loopxtest.Main(m)
//	}
//
//	func TestScripts(t *testing.T) {
//		loopxtest.Run(t, loopxtest.Options{}) // the scripts in testdata/*.txtar
//	}
//
// and a script, testdata/claim.txtar:
//
//	exec loopx init
//	exec loopx goal create --goal-id g
//	exec loopx agent register --agent-id agent-a
//	exec loopx agent register --agent-id agent-b
//	exec loopx todo add --todo-id todo_lexer --text 'Write the lexer'
//	exec loopx todo claim --todo-id todo_lexer --claimed-by agent-a --claim-ttl-minutes 30
//	jq .todo.claim_expires_at
//	stdout '^2026-01-01T00:30:00Z$'
//	exits 1 loopx todo claim --todo-id todo_lexer --claimed-by agent-b
//	stdout '"code":"claim_conflict"'
//
// Besides testscript's own commands, scripts have jq, exits, path and
// envfile (see Cmds). Scripts run with (?m), so stdout '^$' matches any
// output: assert an empty output with `! stdout .`.
//
// To add commands of your own, change the Params before running them:
//
//	p := loopxtest.Params(loopxtest.Options{})
//	p.Cmds["mycmd"] = myCmd
//	testscript.Run(t, p)
//
// and to add programs of your own next to loopx, call testscript.Main with
// Programs() and yours.
package loopxtest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
	"github.com/loopx-dev/loopx/gitstore"
)

// DefaultNow is the fixed clock of every script unless Options.Now says
// otherwise.
var DefaultNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options configure the scripts' parameters.
type Options struct {
	// Dir is the folder of the .txtar scripts; default "testdata".
	Dir string
	// Now is the fixed clock: LOOPX_NOW, and the author and committer
	// dates of hand-made commits; default DefaultNow.
	Now time.Time
	// EmptyWork starts each script in an empty folder instead of a Git
	// repository, for scripts that make their repositories themselves or
	// test what loopx does outside one (loopx's own suite does).
	EmptyWork bool
	// Setup, when set, runs after the kit's setup of each script.
	Setup func(*testscript.Env) error
}

// Programs are the programs scripts run in the test binary, for
// testscript.Main: "loopx", the command line (cli.Main). The map is new on
// every call; add your own to it.
func Programs() map[string]func() {
	return map[string]func(){
		"loopx": func() { os.Exit(cli.Main()) },
	}
}

// Main runs the tests of m with the programs of Programs installed: call it
// from TestMain. It does not return.
func Main(m testscript.TestingM) {
	testscript.Main(m, Programs())
}

// Run runs the scripts of o.Dir as subtests of t.
func Run(t *testing.T, o Options) {
	t.Helper()
	testscript.Run(t, Params(o))
}

// Params are the testscript parameters of scripts that call loopx: the
// scripts of o.Dir, the setup of Setup, the commands of Cmds, and commands
// run without "exec" allowed ("loopx init" is "exec loopx init"). Each call
// returns new maps, so a suite may add its own commands.
func Params(o Options) testscript.Params {
	dir := o.Dir
	if dir == "" {
		dir = "testdata"
	}
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: false,
		Setup:               Setup(o),
		Cmds:                Cmds(),
	}
}

// Env is the environment Setup gives each script (HOME aside): the fixed
// clock, JSON output, a bounded wait for the writer fence, and a Git
// identity that ignores the machine's Git configuration, with hand-made
// commits dated at the fixed clock (a commit dated at the real time would
// be a head in the future, which loopx refuses as clock_skew).
func Env(now time.Time) map[string]string {
	if now.IsZero() {
		now = DefaultNow
	}
	at := now.UTC().Format(time.RFC3339)
	return map[string]string{
		"LOOPX_NOW":           at,
		"LOOPX_FORMAT":        "json",
		"LOOPX_LOCK_TIMEOUT":  "5s",
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Test",
		"GIT_AUTHOR_EMAIL":    "test@example.com",
		"GIT_COMMITTER_NAME":  "Test",
		"GIT_COMMITTER_EMAIL": "test@example.com",
		"GIT_AUTHOR_DATE":     at,
		"GIT_COMMITTER_DATE":  at,
	}
}

// Setup returns the setup of each script: HOME is $WORK/.home (empty, so no
// Git or loopx configuration of the machine applies), the variables of Env
// are set, and $WORK is made a Git repository (unless o.EmptyWork) whose
// .git/info/exclude leaves .home and testscript's .tmp (TMPDIR) out of
// `git status` and `git add`. The script's files are already in $WORK,
// untracked. `loopx init` then makes the state ref.
func Setup(o Options) func(*testscript.Env) error {
	return func(e *testscript.Env) error {
		home := filepath.Join(e.WorkDir, ".home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			return err
		}
		e.Setenv("HOME", home)
		env := Env(o.Now)
		for _, k := range slices.Sorted(maps.Keys(env)) { // a stable log
			e.Setenv(k, env[k])
		}
		if !o.EmptyWork {
			if err := scratchRepo(e.WorkDir); err != nil {
				return err
			}
		}
		if o.Setup != nil {
			return o.Setup(e)
		}
		return nil
	}
}

// scratchRepo makes dir a Git repository (as `loopx init` would) whose
// .home and .tmp are excluded.
func scratchRepo(dir string) error {
	if err := gitstore.InitRepo(dir); err != nil {
		return fmt.Errorf("loopxtest: scratch repository: %w", err)
	}
	info := filepath.Join(dir, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(info, "exclude"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("/.home/\n/.tmp/\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
