package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// Fence workers (TestMain → worker → fenceWorker), selected by
// GITSTORE_WORKER:
//
//   - "fence-hold": take the fence (GITSTORE_FENCE=exclusive|shared), print
//     "HELD", hold it until stdin closes.
//   - "fence-wait": print "WAITING", take the exclusive fence, print
//     "GOT <unix nanos>", hold it GITSTORE_FENCE_HOLD, exit.
//   - "fence-loop": until GITSTORE_FENCE_UNTIL (unix nanos): take the
//     exclusive fence with GITSTORE_FENCE_ALGO (block: Store.Lock; poll: the
//     polling wait loopx used before, for comparison), hold it
//     GITSTORE_FENCE_HOLD, release, wait GITSTORE_FENCE_THINK; print each
//     op's latency (from asking to releasing) in microseconds.
func fenceWorker(mode string) int {
	repo := os.Getenv(envRepo)
	s, err := Open(repo, Options{FenceTimeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	hold, _ := time.ParseDuration(os.Getenv("GITSTORE_FENCE_HOLD"))
	switch mode {
	case "fence-hold":
		unlock, err := s.Lock(context.Background(), os.Getenv("GITSTORE_FENCE") != "shared")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("HELD")
		io.Copy(io.Discard, os.Stdin)
		unlock()
	case "fence-wait":
		fmt.Println("WAITING")
		unlock, err := s.Lock(context.Background(), true)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("GOT", time.Now().UnixNano())
		time.Sleep(hold)
		unlock()
	case "fence-loop":
		think, _ := time.ParseDuration(os.Getenv("GITSTORE_FENCE_THINK"))
		// With GITSTORE_FENCE_SPIN, holding and thinking burn CPU (a
		// loopx process decides and encodes) instead of sleeping.
		pause := time.Sleep
		if os.Getenv("GITSTORE_FENCE_SPIN") != "" {
			pause = func(d time.Duration) {
				for end := time.Now().Add(d); time.Now().Before(end); {
				}
			}
		}
		until, _ := strconv.ParseInt(os.Getenv("GITSTORE_FENCE_UNTIL"), 10, 64)
		lock := func() (func(), error) { return s.Lock(context.Background(), true) }
		if os.Getenv("GITSTORE_FENCE_ALGO") == "poll" {
			lock = func() (func(), error) { return pollLock(filepath.Join(s.CommonDir(), fenceFile), time.Minute) }
		}
		w := bufio.NewWriter(os.Stdout)
		defer w.Flush()
		for time.Now().UnixNano() < until {
			t0 := time.Now()
			unlock, err := lock()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			pause(hold)
			unlock()
			fmt.Fprintln(w, time.Since(t0).Microseconds())
			pause(think/2 + rand.N(think))
		}
	default:
		return 2
	}
	return 0
}

// pollLock is the writer fence as loopx took it before the blocking wait:
// a non-blocking flock polled with a jittered backoff capped at 10ms.
func pollLock(path string, timeout time.Duration) (func(), error) {
	fl := flock.New(path, flock.SetPermissions(0o666))
	deadline := time.Now().Add(timeout)
	delay := 500 * time.Microsecond
	for {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, err
		}
		if ok {
			return func() { fl.Close() }, nil
		}
		if !time.Now().Before(deadline) {
			fl.Close()
			return nil, ErrBusy
		}
		time.Sleep(delay/2 + rand.N(delay))
		delay = min(2*delay, 10*time.Millisecond)
	}
}

// fenceProc is a running fence worker with its stdout lines.
type fenceProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startFenceProc(t testing.TB, mode, repo string, env ...string) *fenceProc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), envWorker+"="+mode, envRepo+"="+repo), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &fenceProc{cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return p
}

// expect waits for the next line, which must start with prefix.
func (p *fenceProc) expect(t testing.TB, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			t.Fatalf("worker said %q (open %v), want %s...", l, ok, prefix)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not say %s", prefix)
	}
	return ""
}

// release lets a fence-hold worker go and waits for it to exit.
func (p *fenceProc) release(t testing.TB) {
	t.Helper()
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("worker: %v", err)
	}
}

// tryLock takes the fence without waiting.
func tryLock(s *Store, exclusive bool) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.Lock(ctx, exclusive)
}

// The deadline is kept: a waiter gives up with ErrBusy when the
// FenceTimeout passes or its context ends, and the fence it was waiting for
// is never left held by the abandoned wait: once the holder lets go, the
// fence is free at once (for this process and for others).
func TestFenceDeadlineAndAbandonedWait(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{FenceTimeout: 300 * time.Millisecond})
	holder := startFenceProc(t, "fence-hold", dir)
	holder.expect(t, "HELD")

	t0 := time.Now()
	_, err := s.Lock(context.Background(), true)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "not obtained within 300ms") {
		t.Fatalf("Lock while held: %v", err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond || d > 10*time.Second {
		t.Fatalf("gave up after %v, want the 300ms deadline", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, false); !errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shared Lock with a context deadline: %v", err)
	}
	if _, err := tryLock(s, true); !errors.Is(err, ErrBusy) {
		t.Fatalf("single try: %v", err)
	}
	if s.holdsExclusive() {
		t.Fatal("a failed Lock counts as held")
	}

	// Two waits were abandoned while blocked in flock. When the holder
	// goes, each of them obtains the fence and lets go at once: another
	// process and this one get it within moments.
	holder.release(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		other := startFenceProc(t, "fence-wait", dir, "GITSTORE_FENCE_HOLD=0s")
		other.expect(t, "WAITING")
		got := make(chan bool, 1)
		go func() {
			l, ok := <-other.lines
			got <- ok && strings.HasPrefix(l, "GOT")
		}()
		select {
		case ok := <-got:
			if !ok {
				t.Fatal("the other process failed to take the fence")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the fence stayed held after its holder exited: an abandoned wait kept it")
		}
		other.cmd.Wait()
		unlock, err := tryLock(s, true)
		if err == nil {
			unlock()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("this process cannot take the fence after the abandoned waits: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Shared holders exclude an exclusive one and not each other, across
// processes; an exclusive holder excludes both.
func TestFenceSharedAndExclusive(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{FenceTimeout: 100 * time.Millisecond})
	reader := startFenceProc(t, "fence-hold", dir, "GITSTORE_FENCE=shared")
	reader.expect(t, "HELD")
	unlock, err := s.Lock(context.Background(), false)
	if err != nil {
		t.Fatalf("second shared holder: %v", err)
	}
	unlock()
	if _, err := s.Lock(context.Background(), true); !errors.Is(err, ErrBusy) {
		t.Fatalf("exclusive while shared is held: %v", err)
	}
	reader.release(t)
	writer := startFenceProc(t, "fence-hold", dir)
	writer.expect(t, "HELD")
	if _, err := s.Lock(context.Background(), false); !errors.Is(err, ErrBusy) {
		t.Fatalf("shared while exclusive is held: %v", err)
	}
	writer.release(t)
	unlock, err = s.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

// Waiters are served in the order they arrived: each of 6 processes starts
// waiting once the previous one is blocked in flock while the fence is
// held; after the
// holder lets go they obtain it one after the other, in arrival order (a
// polling wait serves whoever polls first).
func TestFenceServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	holder := startFenceProc(t, "fence-hold", dir)
	holder.expect(t, "HELD")
	const n = 6
	waiters := make([]*fenceProc, n)
	for i := range waiters {
		waiters[i] = startFenceProc(t, "fence-wait", dir, "GITSTORE_FENCE_HOLD=20ms")
		waiters[i].expect(t, "WAITING")
		waitBlockedInFlock(t, waiters[i].cmd.Process.Pid)
	}
	holder.release(t)
	type got struct {
		i  int
		at int64
	}
	var order []got
	for i, w := range waiters {
		l := w.expect(t, "GOT ")
		at, _ := strconv.ParseInt(strings.TrimPrefix(l, "GOT "), 10, 64)
		order = append(order, got{i, at})
		w.cmd.Wait()
	}
	sort.Slice(order, func(a, b int) bool { return order[a].at < order[b].at })
	for k, g := range order {
		if g.i != k {
			t.Fatalf("acquisition order %v, want arrival order", order)
		}
	}
}

// BenchmarkFenceContention: N processes each loop take the exclusive fence,
// hold it 4ms (a commit's fsyncs), let go and think 4–12ms (a loopx
// process's start and decision), for 3 seconds; the blocking wait
// ("block", what Lock does) against the polling wait loopx used before
// ("poll"), side by side. The "cpu" runs burn CPU for those times instead
// of sleeping (more processes than cores: a woken waiter may have to wait
// for a core). Reported: fence ops/s over all processes, and
// the p50, p99 and max latency of one op (asking → released).
func BenchmarkFenceContention(b *testing.B) {
	for _, c := range []struct {
		n    int
		spin bool
	}{{8, false}, {16, false}, {8, true}, {16, true}} {
		n := c.n
		for _, algo := range []string{"poll", "block"} {
			name := fmt.Sprintf("agents=%d/%s", n, algo)
			if c.spin {
				name = fmt.Sprintf("agents=%d/cpu/%s", n, algo)
			}
			b.Run(name, func(b *testing.B) {
				dir := newRepo(b)
				var lat []int64
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					start := time.Now()
					until := start.Add(3 * time.Second).UnixNano()
					procs := make([]*exec.Cmd, n)
					outs := make([]bytes.Buffer, n)
					for j := range procs {
						cmd := exec.Command(os.Args[0])
						cmd.Env = append(os.Environ(), envWorker+"=fence-loop", envRepo+"="+dir,
							"GITSTORE_FENCE_ALGO="+algo, "GITSTORE_FENCE_HOLD=4ms", "GITSTORE_FENCE_THINK=8ms",
							"GITSTORE_FENCE_UNTIL="+strconv.FormatInt(until, 10))
						if c.spin {
							cmd.Env = append(cmd.Env, "GITSTORE_FENCE_SPIN=1")
						}
						cmd.Stdout, cmd.Stderr = &outs[j], os.Stderr
						if err := cmd.Start(); err != nil {
							b.Fatal(err)
						}
						procs[j] = cmd
					}
					for _, cmd := range procs {
						if err := cmd.Wait(); err != nil {
							b.Fatal(err)
						}
					}
					elapsed += time.Since(start)
					for _, o := range outs {
						for _, f := range strings.Fields(o.String()) {
							v, _ := strconv.ParseInt(f, 10, 64)
							lat = append(lat, v)
						}
					}
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				pct := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))]) / 1000 }
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "ops/s")
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(pct(1), "max-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// waitBlockedInFlock waits until process pid is blocked waiting for an
// flock: /proc/locks shows a waiter as a "->" line with its pid. (A fixed
// pause instead would race with the process on a loaded machine: it may
// not have reached flock yet, and then arrives after the next waiter.)
// Where there is no /proc/locks it pauses 40ms.
func waitBlockedInFlock(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat("/proc/locks"); err != nil {
		time.Sleep(40 * time.Millisecond)
		return
	}
	want := strconv.Itoa(pid)
	for deadline := time.Now().Add(30 * time.Second); ; {
		data, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			// 1: -> FLOCK  ADVISORY  WRITE <pid> <dev:inode> 0 EOF
			if f := strings.Fields(l); len(f) >= 6 && f[1] == "->" && f[2] == "FLOCK" && f[5] == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is not blocked in flock after 30s", pid)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
