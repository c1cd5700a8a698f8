package loopx_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRunOverhead measures `loopx run … -- true` (one process:
// acquire, start the command, release) against the same by hand (`loopx
// task-lease acquire`, `true`, `loopx task-lease release`: three
// processes), side by side: each op does one of each, alternating, so both
// see the same machine load. Reported as run-ms/op and by-hand-ms/op, on a
// local store; each is a new execution of the same todo.
//
//	go test -run '^$' -bench BenchmarkRunOverhead -benchtime 30x .
func BenchmarkRunOverhead(b *testing.B) {
	dir := newStore(b, "g", "agent")
	must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_bench", "--text", "bench")
	var runT, handT time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		must(b, dir, "run", "--goal-id", "g", "--todo-id", "todo_bench", "--owner", "agent",
			"--idempotency-key", fmt.Sprintf("run-%d", i), "--ttl-seconds", "60", "--", "true")
		t1 := time.Now()
		key := fmt.Sprintf("hand-%d", i)
		r := must(b, dir, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_bench", "--owner", "agent",
			"--idempotency-key", key, "--ttl-seconds", "60")
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		must(b, dir, "task-lease", "release", "--goal-id", "g", "--todo-id", "todo_bench", "--owner", "agent",
			"--idempotency-key", key, "--expected-version", fmt.Sprint(leaseInt(r, "version")))
		runT += t1.Sub(t0)
		handT += time.Since(t1)
	}
	b.ReportMetric(float64(runT.Microseconds())/1000/float64(b.N), "run-ms/op")
	b.ReportMetric(float64(handT.Microseconds())/1000/float64(b.N), "by-hand-ms/op")
}

// countingDaemon is a `git daemon --verbose` on 127.0.0.1 whose
// connections are counted (one per ls-remote, fetch or push).
type countingDaemon struct {
	cmd   *exec.Cmd
	conns atomic.Int64
	done  chan struct{}
}

func startCountingDaemon(b *testing.B, base string, port int) *countingDaemon {
	exe := needGit(b, "daemon")
	d := &countingDaemon{done: make(chan struct{})}
	d.cmd = exec.Command(exe, "daemon", "--verbose", "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--base-path="+base, "--export-all", "--enable=receive-pack", base)
	d.cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "Ready to rumble") {
				once.Do(func() { close(ready) })
			}
			if strings.Contains(line, "Connection from") {
				d.conns.Add(1)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		b.Fatal("git daemon did not start")
	}
	b.Cleanup(func() {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		d.cmd.Wait()
	})
	return d
}

// BenchmarkWaitersServerLoad measures the load that agents waiting on one
// held lease put on the Git server: 50 machines (each its own clone, one
// `loopx task-lease acquire --wait` process each) wait through a `git
// daemon` on 127.0.0.1 while the lease stays held and nothing changes. It
// reports the server's connections per second over the first 10 s (the
// polling intervals grow from 200ms) and over the next 20 s (steady state:
// intervals of 2.5–5 s, drawn at random), in total and per waiter.
//
//	go test -run '^$' -bench BenchmarkWaitersServerLoad -benchtime 1x .
func BenchmarkWaitersServerLoad(b *testing.B) {
	const waiters = 50
	base := b.TempDir()
	bareRepo(b, base, "state")
	port := freePort(b)
	d := startCountingDaemon(b, base, port)
	url := fmt.Sprintf("git://127.0.0.1:%d/state.git", port)
	holder := machine(b, url)
	must(b, holder, "goal", "create", "--goal-id", "g")
	for i := 0; i < waiters; i++ {
		must(b, holder, "agent", "register", "--goal-id", "g", "--agent-id", fmt.Sprintf("agent-%d", i))
	}
	must(b, holder, "agent", "register", "--goal-id", "g", "--agent-id", "holder")
	must(b, holder, "todo", "add", "--goal-id", "g", "--todo-id", "todo_hot", "--text", "everybody wants it")
	must(b, holder, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_hot", "--owner", "holder",
		"--idempotency-key", "exec-holder", "--ttl-seconds", "3600")
	dirs := make([]string, waiters)
	for i := range dirs {
		dirs[i] = machine(b, url)
	}
	for i := 0; i < b.N; i++ {
		done := make(chan *waiter, waiters)
		var ws []*waiter
		start := d.conns.Load()
		t0 := time.Now()
		for j := 0; j < waiters; j++ {
			ws = append(ws, startWaiter(b, dirs[j], fmt.Sprintf("agent-%d", j), done, "task-lease", "acquire",
				"--goal-id", "g", "--todo-id", "todo_hot", "--owner", fmt.Sprintf("agent-%d", j),
				"--idempotency-key", fmt.Sprintf("exec-%d-%d", i, j), "--ttl-seconds", "60", "--wait", "10m"))
		}
		time.Sleep(10*time.Second - time.Since(t0))
		warm := d.conns.Load() - start
		mid := d.conns.Load()
		t1 := time.Now()
		time.Sleep(20 * time.Second)
		steady := d.conns.Load() - mid
		span := time.Since(t1)
		select {
		case w := <-done:
			b.Fatalf("%s stopped waiting: %s", w.name, w.res.raw)
		default:
		}
		for _, w := range ws {
			w.cmd.Process.Kill()
		}
		b.ReportMetric(float64(warm)/10, "conn/s-first-10s")
		b.ReportMetric(float64(steady)/span.Seconds(), "conn/s-steady")
		b.ReportMetric(float64(steady)/span.Seconds()/waiters, "conn/s-per-waiter")
		b.Logf("%d waiters: %d connections in the first 10s (start-up decisions included), %d in the next %v",
			waiters, warm, steady, span.Round(time.Millisecond))
	}
}
