package loopx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// waiter is one `loopx … --wait` process running in the background.
type waiter struct {
	name  string
	cmd   *exec.Cmd
	out   bytes.Buffer
	errb  bytes.Buffer
	res   result
	stats waitStats
}

// waitStats is what LOOPX_WAIT_STATS=1 reports on stderr.
type waitStats struct {
	Attempts      int   `json:"attempts"`
	Polls         int   `json:"polls"`
	Notifications int   `json:"notifications"`
	Changes       int   `json:"changes"`
	ExpiryWakes   int   `json:"expiry_wakes"`
	WaitedMS      int64 `json:"waited_ms"`
}

var waitStatsLine = regexp.MustCompile(`(?m)^loopx: wait: (\{.*\})$`)

// startWaiter starts loopx args in dir (JSON, LOOPX_WAIT_STATS=1); the
// waiter is sent on done when the process exits.
func startWaiter(t testing.TB, dir, name string, done chan<- *waiter, args ...string) *waiter {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &waiter{name: name, cmd: exec.Command(exe, args...)}
	w.cmd.Dir = dir
	w.cmd.Env = append(os.Environ(), "LOOPX_TEST_CLI=1", "LOOPX_FORMAT=json", "LOOPX_LOCK_TIMEOUT=60s", "LOOPX_WAIT_STATS=1")
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.errb
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill() })
	go func() {
		err := w.cmd.Wait()
		w.res.raw = w.out.String() + w.errb.String()
		if ee, ok := err.(*exec.ExitError); ok {
			w.res.code = ee.ExitCode()
		}
		_ = json.Unmarshal(w.out.Bytes(), &w.res.out)
		if m := waitStatsLine.FindStringSubmatch(w.errb.String()); m != nil {
			_ = json.Unmarshal([]byte(m[1]), &w.stats)
		}
		done <- w
	}()
	return w
}

// TestWaitersTakeTurns: 8 agents wait (task-lease acquire --wait) on one
// held lease. Each release lets exactly one of them in: epochs rise by one,
// no two hold it at once (the audit trail alternates acquire, release), and
// each waiter decided a bounded number of times (at most once per change
// of the ref, plus its first decision and the one at a wake-up).
func TestWaitersTakeTurns(t *testing.T) {
	t.Parallel()
	const n = 8
	agents := []string{"holder"}
	for i := 0; i < n; i++ {
		agents = append(agents, fmt.Sprintf("agent-%d", i))
	}
	dir := newStore(t, "g", agents...)
	must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_turn", "--text", "one at a time")
	must(t, dir, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_turn", "--owner", "holder",
		"--idempotency-key", "exec-holder", "--ttl-seconds", "600")

	done := make(chan *waiter, n)
	for i := 0; i < n; i++ {
		startWaiter(t, dir, agents[i+1], done, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_turn",
			"--owner", agents[i+1], "--idempotency-key", fmt.Sprintf("exec-%d", i), "--ttl-seconds", "600", "--wait", "2m")
	}
	time.Sleep(500 * time.Millisecond) // let them all find it held
	select {
	case w := <-done:
		t.Fatalf("%s did not wait: %s", w.name, w.res.raw)
	default:
	}

	owner, key, version, epoch := "holder", "exec-holder", int64(1), int64(1)
	var latencies []time.Duration
	refMoves := 0
	for turn := 0; turn < n; turn++ {
		released := time.Now()
		must(t, dir, "task-lease", "release", "--goal-id", "g", "--todo-id", "todo_turn", "--owner", owner,
			"--idempotency-key", key, "--expected-version", fmt.Sprint(version))
		refMoves++
		var w *waiter
		select {
		case w = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("turn %d: nobody took the released lease", turn)
		}
		latencies = append(latencies, time.Since(released))
		if w.res.code != 0 || w.res.out["status"] != "applied" {
			t.Fatalf("turn %d: %s exited %d: %s", turn, w.name, w.res.code, w.res.raw)
		}
		refMoves++
		if got := leaseStr(w.res, "owner"); got != w.name {
			t.Fatalf("turn %d: lease owner %s, want %s", turn, got, w.name)
		}
		if got := leaseInt(w.res, "epoch"); got != epoch+1 {
			t.Fatalf("turn %d: epoch %d, want %d", turn, got, epoch+1)
		}
		// Nobody else gets in while it holds the lease.
		select {
		case w2 := <-done:
			t.Fatalf("turn %d: %s got in while %s holds the lease: %s", turn, w2.name, w.name, w2.res.raw)
		case <-time.After(200 * time.Millisecond):
		}
		owner, key, version, epoch = w.name, leaseStr(w.res, "idempotency_key"), leaseInt(w.res, "version"), leaseInt(w.res, "epoch")
		if w.stats.Attempts == 0 {
			t.Fatalf("%s reported no wait stats: %s", w.name, w.res.raw)
		}
		// A waiter decides once at the start, then at most once per ref
		// move it saw (several moves may wake it once) and at a wake-up.
		if max := 1 + refMoves + 1; w.stats.Attempts > max {
			t.Errorf("%s decided %d times over %d ref moves (max %d)", w.name, w.stats.Attempts, refMoves, max)
		}
		// Locally the ref is read on notifications plus once a second.
		if max := w.stats.Attempts + w.stats.Notifications + int(w.stats.WaitedMS/1000) + 2; w.stats.Polls > max {
			t.Errorf("%s read the ref %d times (max %d): %+v", w.name, w.stats.Polls, max, w.stats)
		}
		t.Logf("turn %d: %s after %v: %+v", turn, w.name, latencies[turn].Round(time.Millisecond), w.stats)
	}

	// The audit trail: one execution after the other, never two at once:
	// acquire and release alternate, each pair by one agent at one epoch,
	// epochs 1..n+1, the version +1 per acquire, every agent exactly once.
	subjects := strings.Split(git(t, dir, "log", "--reverse", "--format=%s", "--grep", "^task-lease", "refs/loopx/state"), "\n")
	if len(subjects) != 2*(n+1)-1 {
		t.Fatalf("%d lease commits, want %d:\n%s", len(subjects), 2*(n+1)-1, strings.Join(subjects, "\n"))
	}
	line := regexp.MustCompile(`^task-lease (acquire|release) g/todo_turn by (\S+): v(\d+) e(\d+)$`)
	seen := map[string]bool{}
	for i, s := range subjects {
		m := line.FindStringSubmatch(s)
		turn := i / 2
		wantOp := map[bool]string{true: "acquire", false: "release"}[i%2 == 0]
		if m == nil || m[1] != wantOp || m[3] != fmt.Sprint(turn+1) || m[4] != fmt.Sprint(turn+1) {
			t.Fatalf("commit %d: %q, want a %s at v%d e%d", i, s, wantOp, turn+1, turn+1)
		}
		if i%2 == 0 {
			if seen[m[2]] {
				t.Fatalf("%s had two turns", m[2])
			}
			seen[m[2]] = true
		} else if a := line.FindStringSubmatch(subjects[i-1]); a[2] != m[2] {
			t.Fatalf("%s's execution released by %s", a[2], m[2])
		}
	}
	checkLinear(t, dir)
}

// TestWaitersTakeTurnsRemote: 3 machines wait through a `git daemon` for a
// lease a fourth one holds. Each release lets one in (epochs rise by one),
// and each waiter polled the server (ls-remote) no more often than the
// backoff allows: intervals from 200ms growing by 1.6 up to 5s, each at
// least half its interval, so at most 8 polls in the first 6.8s and one per
// 2.5s after that (plus the one before its first decision).
func TestWaitersTakeTurnsRemote(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real git daemon and several seconds per turn")
	}
	const n = 3
	srv, _ := daemonServer(t)
	bareRepo(t, srv.base, "state")
	holder := machine(t, srv.url("state"))
	must(t, holder, "goal", "create", "--goal-id", "g")
	for _, a := range []string{"holder", "agent-0", "agent-1", "agent-2"} {
		must(t, holder, "agent", "register", "--goal-id", "g", "--agent-id", a)
	}
	must(t, holder, "todo", "add", "--goal-id", "g", "--todo-id", "todo_turn", "--text", "one at a time")
	must(t, holder, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_turn", "--owner", "holder",
		"--idempotency-key", "exec-holder", "--ttl-seconds", "600")
	dirs := map[string]string{"holder": holder}
	done := make(chan *waiter, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("agent-%d", i)
		dirs[name] = machine(t, srv.url("state"))
		startWaiter(t, dirs[name], name, done, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_turn",
			"--owner", name, "--idempotency-key", fmt.Sprintf("exec-%d", i), "--ttl-seconds", "600", "--wait", "2m")
	}
	time.Sleep(time.Second)
	owner, key, version, epoch := "holder", "exec-holder", int64(1), int64(1)
	seen := map[string]bool{}
	for turn := 0; turn < n; turn++ {
		must(t, dirs[owner], "task-lease", "release", "--goal-id", "g", "--todo-id", "todo_turn", "--owner", owner,
			"--idempotency-key", key, "--expected-version", fmt.Sprint(version))
		var w *waiter
		select {
		case w = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("turn %d: nobody took the released lease", turn)
		}
		if w.res.code != 0 || w.res.out["status"] != "applied" || leaseInt(w.res, "epoch") != epoch+1 || seen[w.name] {
			t.Fatalf("turn %d: %s exited %d (epoch %d, want %d): %s", turn, w.name, w.res.code, leaseInt(w.res, "epoch"), epoch+1, w.res.raw)
		}
		seen[w.name] = true
		select {
		case w2 := <-done:
			t.Fatalf("turn %d: %s got in while %s holds the lease: %s", turn, w2.name, w.name, w2.res.raw)
		case <-time.After(200 * time.Millisecond):
		}
		waited := time.Duration(w.stats.WaitedMS) * time.Millisecond
		max := 1 + 8
		if waited > 6800*time.Millisecond {
			max += int((waited - 6800*time.Millisecond) / (2500 * time.Millisecond))
		}
		if w.stats.Polls > max || w.stats.Polls < 2 {
			t.Errorf("%s polled %d times in %v (max %d): %+v", w.name, w.stats.Polls, waited, max, w.stats)
		}
		t.Logf("turn %d: %s: %+v", turn, w.name, w.stats)
		owner, key, version, epoch = w.name, leaseStr(w.res, "idempotency_key"), leaseInt(w.res, "version"), leaseInt(w.res, "epoch")
	}
}
