package loopx_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
	"github.com/loopx-dev/loopx/internal/soak"
)

// The test binary doubles as the loopx binary: with LOOPX_TEST_CLI=1 it runs
// the command line, so these tests drive many real processes against one repo.
func TestMain(m *testing.M) {
	if os.Getenv("LOOPX_TEST_CLI") == "1" {
		os.Exit(cli.Main())
	}
	flag.Parse()
	parallelWaiters()
	os.Exit(m.Run())
}

// parallelWaiters lets four of this package's parallel tests run at once
// (go test's default is one per core) unless -parallel was given: most of
// them spend their time waiting, on a git daemon killed and restarted, a
// server's ref lock held for 10 s, a lease's expiry, other processes, so two
// at a time left a 2-core machine mostly idle while the package took the
// longest of the suite.
func parallelWaiters() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "4")
	}
}

// result is what one loopx process printed and how it exited.
type result struct {
	code int
	out  map[string]any
	raw  string
}

func (r result) errCode() string {
	if e, ok := r.out["error"].(map[string]any); ok {
		return fmt.Sprint(e["code"])
	}
	return ""
}

// loopx runs one loopx process in dir with JSON output.
func loopx(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LOOPX_TEST_CLI=1", "LOOPX_FORMAT=json", "LOOPX_LOCK_TIMEOUT=60s"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := result{raw: stdout.String() + stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(stdout.Bytes(), &r.out)
	return r
}

// must runs loopx and fails the test unless it exits 0.
func must(t testing.TB, dir string, args ...string) result {
	t.Helper()
	r := loopx(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("loopx %v: exit %d: %s", args, r.code, r.raw)
	}
	return r
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newStore makes a repository with a store, one goal and the given agents.
func newStore(t testing.TB, goal string, agents ...string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, dir, "init")
	must(t, dir, "goal", "create", "--goal-id", goal)
	for _, a := range agents {
		must(t, dir, "agent", "register", "--goal-id", goal, "--agent-id", a)
	}
	return dir
}

// checkLinear asserts the state ref's history is one chain and fsck is clean.
func checkLinear(t testing.TB, dir string) int {
	t.Helper()
	total, _ := strconv.Atoi(git(t, dir, "rev-list", "--count", "refs/loopx/state"))
	first, _ := strconv.Atoi(git(t, dir, "rev-list", "--count", "--first-parent", "refs/loopx/state"))
	if merges := git(t, dir, "rev-list", "--merges", "refs/loopx/state"); merges != "" || total != first {
		t.Fatalf("history is not linear: %d commits, %d on the first-parent chain", total, first)
	}
	git(t, dir, "fsck", "--no-dangling")
	return total
}

// countOps counts state commits of one operation on the ref.
func countOps(t testing.TB, dir, op string) int {
	out := git(t, dir, "log", "--format=%(trailers:key=Loopx-Operation,valueonly)", "refs/loopx/state")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == op {
			n++
		}
	}
	return n
}

// TestProcessesAddTodos: 8 processes add 20 todos each (100 in a soak
// run) to one store at once: every add is applied, once, on a linear
// history.
func TestProcessesAddTodos(t *testing.T) {
	t.Parallel()
	procs, each := 8, soak.Pick(20, 100)
	if testing.Short() {
		each = 10
	}
	dir := newStore(t, "g")
	var wg sync.WaitGroup
	errs := make(chan string, procs*each)
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("todo_p%d_%03d", p, i)
				if r := loopx(t, dir, nil, "todo", "add", "--goal-id", "g", "--todo-id", id, "--text", id); r.code != 0 {
					errs <- fmt.Sprintf("%s: exit %d %s", id, r.code, r.raw)
				}
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	list := must(t, dir, "todo", "list", "--goal-id", "g")
	if got := int(list.out["count"].(float64)); got != procs*each {
		t.Fatalf("%d todos listed, want %d", got, procs*each)
	}
	checkLinear(t, dir)
	if got := countOps(t, dir, "todo.add"); got != procs*each {
		t.Fatalf("%d todo.add commits, want %d", got, procs*each)
	}
}

func TestProcessesRaceToRegister(t *testing.T) {
	t.Parallel()
	// 8 processes register one agent id at once, half of them as an
	// orchestrator: exactly one registration is applied; the others with
	// the winner's facts are replays, the rest agent_exists.
	dir := newStore(t, "g")
	const procs = 8
	results := make([]result, procs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			<-start
			role := []string{"agent", "orchestrator"}[p%2]
			results[p] = loopx(t, dir, nil, "agent", "register", "--goal-id", "g", "--agent-id", "same-agent", "--role", role)
		}(p)
	}
	close(start)
	wg.Wait()
	applied, replayed, exists := 0, 0, 0
	winner := ""
	for p, r := range results {
		switch {
		case r.code == 0 && r.out["status"] == "applied":
			applied++
			winner = []string{"agent", "orchestrator"}[p%2]
		case r.code == 0 && r.out["status"] == "replayed":
			replayed++
		case r.code == 1 && r.errCode() == "agent_exists":
			exists++
		default:
			t.Errorf("unexpected result: exit %d %s", r.code, r.raw)
		}
	}
	if applied != 1 || replayed != procs/2-1 || exists != procs/2 {
		t.Fatalf("%d applied (%s), %d replayed, %d agent_exists; want 1, %d, %d", applied, winner, replayed, exists, procs/2-1, procs/2)
	}
	if got := countOps(t, dir, "agent.register"); got != 1 {
		t.Fatalf("%d register commits, want 1", got)
	}
	checkLinear(t, dir)
}
