package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/retry"
	"github.com/loopx-dev/loopx/lease"
)

// --wait against a fake clock and a fake store: the store refuses the
// acquire while the test says the lease is held, and moves its head when
// the test says so; every timer the wait starts is reported to the test,
// which moves the clock. Nothing sleeps.

// waitStore is a Store for waits (only Acquire and how the store moves).
type waitStore struct {
	holdOps // unused: a wait renews nothing
	clk     *clock.Fake
	remote  bool
	watch   *fakeWatch

	mu       sync.Mutex
	head     gitstore.Hash
	held     bool          // acquire is refused (todo_lease_conflict)
	expiry   time.Duration // NextExpiry's answer (0: none known)
	attempts []time.Time   // when each acquire was decided
	probes   int
}

func newWaitStore(clk *clock.Fake, remote, native bool) *waitStore {
	return &waitStore{clk: clk, remote: remote, held: true, head: gitstore.Hash{1},
		watch: &fakeWatch{c: make(chan struct{}, 1), native: native}}
}

func (s *waitStore) Acquire(lease.AcquireRequest) (*loopx.Result[lease.LeaseResult], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, s.clk.Now())
	if s.held {
		return nil, lease.Errorf(lease.CodeTodoLeaseConflict, "held by agent-b")
	}
	return leaseRes("agent-a", "k1", 1, 1, true), nil
}

func (s *waitStore) Claim(lease.ClaimRequest) (*loopx.Result[lease.TodoResult], error) {
	panic("not used")
}

func (s *waitStore) ReadyClaim(lease.ReadyClaimRequest) (*loopx.Result[lease.TodoResult], error) {
	panic("not used")
}

func (s *waitStore) Ready(goal, agent string) (*loopx.Result[loopx.ReadyList], error) {
	panic("not used")
}

func (s *waitStore) ProbeHead(ctx context.Context) (gitstore.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probes++
	return s.head, nil
}

func (s *waitStore) PollsRemote() bool          { return s.remote }
func (s *waitStore) WatchRef() gitstore.Watcher { return s.watch }
func (s *waitStore) Clock() clock.Clock         { return s.clk }

func (s *waitStore) NextExpiry(goal string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expiry, s.expiry > 0
}

// release frees the lease and moves the head (another agent released).
func (s *waitStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
	s.head = gitstore.Hash{2}
}

type fakeWatch struct {
	c      chan struct{}
	native bool
	closed atomic.Bool // set by the loop's goroutine
}

func (w *fakeWatch) Changed() <-chan struct{} { return w.c }
func (w *fakeWatch) Native() bool             { return w.native }
func (w *fakeWatch) Close() error             { w.closed.Store(true); return nil }

// closedSoon reports whether the loop closes w once it has ended: its
// goroutine closes the watch on the way out, after the answer the test
// already has.
func (w *fakeWatch) closedSoon() bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if w.closed.Load() {
			return true
		}
	}
	return false
}

// testPoll is a polling policy without randomness: local reads every 1s
// (100ms without notifications), remote polls from 200ms doubling to 1s,
// a spread of 10ms.
var testPoll = PollPolicy{Local: time.Second, LocalNoNotify: 100 * time.Millisecond,
	Remote: retry.Policy{Base: 100 * time.Millisecond, Factor: 2, Max: time.Second},
	Spread: retry.Policy{Base: 10 * time.Millisecond}}

type waitRun struct {
	t     *testing.T
	s     *waitStore
	stats WaitStats
	done  chan error
	res   *loopx.Result[lease.LeaseResult]
}

// startWait starts AcquireWait with timeout on s.
func startWait(t *testing.T, ctx context.Context, s *waitStore, timeout time.Duration) *waitRun {
	r := &waitRun{t: t, s: s, done: make(chan error, 1)}
	poll := testPoll
	go func() {
		res, err := AcquireWait(ctx, s, lease.AcquireRequest{Goal: "g", Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "k1", TTLSeconds: 60},
			WaitOptions{Timeout: timeout, Stats: &r.stats, Poll: &poll})
		r.res = res
		r.done <- err
	}()
	return r
}

// timer expects the wait to start a timer of d.
func (r *waitRun) timer(d time.Duration) {
	r.t.Helper()
	got, ok := r.s.clk.NextTimer(guard)
	if !ok {
		r.t.Fatalf("no timer started (want %v)", d)
	}
	if got != d {
		r.t.Fatalf("timer of %v, want %v", got, d)
	}
}

func (r *waitRun) end() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(guard):
		r.t.Fatal("the wait did not end")
	}
	return nil
}

func (r *waitRun) running() {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.t.Fatalf("the wait ended: %v", err)
	default:
	}
}

func TestWaitWakesOnANotifiedRefChange(t *testing.T) {
	clk := clock.NewFake(holdT0)
	s := newWaitStore(clk, false, true)
	r := startWait(t, context.Background(), s, time.Minute)
	r.timer(time.Minute) // until the deadline
	r.timer(time.Second) // the fallback read
	clk.Step(time.Second)
	r.timer(time.Second) // nothing moved: the next fallback read
	r.running()
	s.release()
	s.watch.c <- struct{}{}
	r.timer(10 * time.Millisecond) // the spread before deciding again
	clk.Step(10 * time.Millisecond)
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if r.res.Data.Lease.Owner != "agent-a" || len(s.attempts) != 2 || !s.attempts[1].Equal(holdT0.Add(1010*time.Millisecond)) {
		t.Fatalf("result %+v, attempts at %v", r.res, s.attempts)
	}
	if st := r.stats; st.Attempts != 2 || st.Notifications != 1 || st.Changes != 1 || st.ExpiryWakes != 0 || st.WaitedMS != 1010 {
		t.Fatalf("stats %+v", st)
	}
	if !s.watch.closedSoon() {
		t.Fatal("the watch was left open")
	}
}

func TestWaitWakesOnAPolledRefChange(t *testing.T) {
	// Without file notifications, the ref is read every 100ms.
	clk := clock.NewFake(holdT0)
	s := newWaitStore(clk, false, false)
	r := startWait(t, context.Background(), s, time.Minute)
	r.timer(time.Minute)
	r.timer(100 * time.Millisecond)
	s.release()
	clk.Step(100 * time.Millisecond)
	r.timer(10 * time.Millisecond)
	clk.Step(10 * time.Millisecond)
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if st := r.stats; st.Attempts != 2 || st.Notifications != 0 || st.Changes != 1 || st.Polls != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWaitWakesAtTheHoldersExpiry(t *testing.T) {
	// The lease in the way expires in 5s (whole seconds of the decision):
	// the wait decides again 50ms after, without any ref change.
	clk := clock.NewFake(holdT0.Add(300 * time.Millisecond))
	s := newWaitStore(clk, false, true)
	s.expiry = 5 * time.Second
	r := startWait(t, context.Background(), s, time.Minute)
	r.timer(4750 * time.Millisecond) // holdT0 + 5s + 50ms
	r.timer(time.Second)
	for range 4 {
		clk.Step(time.Second)
		r.timer(time.Second)
	}
	r.running()
	s.mu.Lock()
	s.held, s.expiry = false, 0 // expired: the next decision grants it
	s.mu.Unlock()
	clk.Step(750 * time.Millisecond)
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if !s.attempts[1].Equal(holdT0.Add(5050 * time.Millisecond)) {
		t.Fatalf("decided again at %v", s.attempts[1].Sub(holdT0))
	}
	if st := r.stats; st.Attempts != 2 || st.ExpiryWakes != 1 || st.Changes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWaitEndsAtTheDeadline(t *testing.T) {
	for _, remote := range []bool{false, true} {
		clk := clock.NewFake(holdT0)
		s := newWaitStore(clk, remote, true)
		r := startWait(t, context.Background(), s, 3*time.Second)
		if remote {
			// Polls after 200ms, 400ms, 800ms, then every second (capped).
			for _, d := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second} {
				r.timer(d)
				clk.Step(d)
			}
			r.timer(600 * time.Millisecond) // the last poll is cut to the deadline
			clk.Step(600 * time.Millisecond)
		} else {
			r.timer(3 * time.Second)
			for range 3 {
				r.timer(time.Second)
				clk.Step(time.Second)
			}
		}
		err := r.end()
		if e, ok := lease.AsError(err); !ok || e.Code != lease.CodeTodoLeaseConflict {
			t.Fatalf("remote %v: at the deadline: %v", remote, err)
		}
		if len(s.attempts) != 2 || !s.attempts[1].Equal(holdT0.Add(3*time.Second)) || r.stats.WaitedMS != 3000 {
			t.Fatalf("remote %v: attempts at %v, stats %+v", remote, s.attempts, r.stats)
		}
	}
}

func TestWaitHonoursItsContext(t *testing.T) {
	for _, remote := range []bool{false, true} {
		clk := clock.NewFake(holdT0)
		s := newWaitStore(clk, remote, true)
		ctx, cancel := context.WithCancel(context.Background())
		r := startWait(t, ctx, s, time.Hour)
		if !clk.BlockUntil(1, guard) {
			t.Fatal("the wait started no timer")
		}
		cancel()
		err := r.end()
		if !errors.Is(err, context.Canceled) || len(s.attempts) != 1 {
			t.Fatalf("remote %v: cancelled: %v after %d attempts", remote, err, len(s.attempts))
		}
		if clk.Waiters() != 0 {
			t.Fatalf("remote %v: %d timers left pending", remote, clk.Waiters())
		}
	}
	// Cancelled while spreading its decision after a change: no decision.
	clk := clock.NewFake(holdT0)
	s := newWaitStore(clk, false, true)
	ctx, cancel := context.WithCancel(context.Background())
	r := startWait(t, ctx, s, time.Hour)
	r.timer(time.Hour)
	r.timer(time.Second)
	s.release()
	s.watch.c <- struct{}{}
	r.timer(10 * time.Millisecond)
	cancel()
	if err := r.end(); !errors.Is(err, context.Canceled) || len(s.attempts) != 1 {
		t.Fatalf("cancelled in the spread: %v after %d attempts", err, len(s.attempts))
	}
}

func TestWaitPollsTheServerWithGrowingIntervals(t *testing.T) {
	clk := clock.NewFake(holdT0)
	s := newWaitStore(clk, true, false)
	r := startWait(t, context.Background(), s, time.Minute)
	for _, d := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second} {
		r.timer(d)
		clk.Step(d)
	}
	r.timer(time.Second)
	s.release()
	clk.Step(time.Second)
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	// One head read before the first decision, then one per poll.
	if st := r.stats; st.Attempts != 2 || st.Polls != 6 || st.Changes != 1 || st.WaitedMS != 3400 {
		t.Fatalf("stats %+v", st)
	}
}
