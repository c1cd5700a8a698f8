package loopxtest_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/loopx-dev/loopx/loopxtest"
)

func TestMain(m *testing.M) {
	loopxtest.Main(m)
}

// TestScripts runs testdata/*.txtar as a user's suite would: scratch
// repository, HOME, clock, identity, the kit's commands.
func TestScripts(t *testing.T) {
	loopxtest.Run(t, loopxtest.Options{})
}

// TestEmptyWork: with EmptyWork a script starts outside any repository.
func TestEmptyWork(t *testing.T) {
	loopxtest.Run(t, loopxtest.Options{Dir: "testdata/empty", EmptyWork: true})
}

// TestOptions: the clock, an extra command and an extra setup reach the
// scripts.
func TestOptions(t *testing.T) {
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	setupRan := false
	p := loopxtest.Params(loopxtest.Options{Now: now, Setup: func(e *testscript.Env) error {
		setupRan = e.Getenv("LOOPX_NOW") == "2030-06-01T12:00:00Z"
		e.Setenv("MINE", "set")
		return nil
	}})
	p.Dir = ""
	p.Files = []string{writeScript(t, "options.txtar", `
exec loopx init
exec git log -1 --format=%cI refs/loopx/state
stdout '^2030-06-01T12:00:00(Z|\+00:00)$'
hello $MINE
stdout '^hello set$'
`)}
	p.Cmds["hello"] = func(ts *testscript.TestScript, neg bool, args []string) {
		fmt.Fprintf(ts.Stdout(), "hello %s\n", strings.Join(args, " "))
	}
	t.Run("scripts", func(t *testing.T) { testscript.Run(t, p) }) // waits for the parallel scripts
	if !setupRan {
		t.Error("Options.Setup did not run after the kit's setup")
	}
	if got := loopxtest.Env(time.Time{})["LOOPX_NOW"]; got != "2026-01-01T00:00:00Z" {
		t.Errorf("Env(zero) LOOPX_NOW = %s, want the default clock", got)
	}
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	p := t.TempDir() + "/" + name
	if err := writeFile(p, strings.TrimPrefix(body, "\n")); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBrokenScriptsFail: a script whose assertion does not hold fails, with
// the reason in its log; the kit's commands fail as they should.
func TestBrokenScriptsFail(t *testing.T) {
	p := loopxtest.Params(loopxtest.Options{Dir: "testdata/broken"})
	r := &recorder{}
	testscript.RunT(r, p)
	want := map[string]string{
		"wrong_exit":      "exit code 1, want 0",
		"jq_not_json":     "jq: stdout is not JSON",
		"claim_not_shown": "no match for `^agent-a$` found in stdout",
	}
	for name, msg := range want {
		log, failed := r.result(name)
		if !failed {
			t.Errorf("%s: passed, want a failure", name)
			continue
		}
		if !strings.Contains(log, msg) {
			t.Errorf("%s: log lacks %q:\n%s", name, msg, log)
		}
	}
	if n := r.count(); n != len(want) {
		t.Errorf("%d scripts ran, want %d", n, len(want))
	}
}

// recorder is a testscript.T that records each script's log and failure
// instead of failing the test.
type recorder struct {
	mu     sync.Mutex
	name   string
	root   *recorder
	logs   map[string]*strings.Builder
	failed map[string]bool
	ran    []string
}

func (r *recorder) top() *recorder {
	if r.root != nil {
		return r.root
	}
	return r
}

func (r *recorder) Run(name string, f func(testscript.T)) {
	sub := &recorder{name: name, root: r.top()}
	top := r.top()
	top.mu.Lock()
	top.ran = append(top.ran, name)
	top.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(sub)
	}()
	<-done
}

func (r *recorder) Log(args ...any) {
	top := r.top()
	top.mu.Lock()
	defer top.mu.Unlock()
	if top.logs == nil {
		top.logs, top.failed = map[string]*strings.Builder{}, map[string]bool{}
	}
	if top.logs[r.name] == nil {
		top.logs[r.name] = &strings.Builder{}
	}
	fmt.Fprintln(top.logs[r.name], args...)
}

func (r *recorder) FailNow() {
	r.Log() // makes the entry
	top := r.top()
	top.mu.Lock()
	top.failed[r.name] = true
	top.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Log(args...); r.FailNow() }
func (r *recorder) Skip(args ...any)  { r.Log(args...); runtime.Goexit() }
func (r *recorder) Parallel()         {}
func (r *recorder) Verbose() bool     { return false }

func (r *recorder) result(name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.logs[name] == nil {
		return "", false
	}
	return r.logs[name].String(), r.failed[name]
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ran)
}
