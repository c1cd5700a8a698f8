package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/clock"
)

const guard = 10 * time.Second // real time: only a failing test waits this long

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The windows DefaultRetry promises a transaction whose attempts take a
// slot of 50 ms: full jitter from 2 ms, growing over 4 lost races to 16
// slots, then shrinking back to one; capped at 2 s.
func TestDefaultRetryWindows(t *testing.T) {
	t.Parallel()
	p := DefaultRetry.WithBase(50 * time.Millisecond)
	for _, c := range []struct {
		lost int
		hi   time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {3, 400 * time.Millisecond}, {4, 800 * time.Millisecond},
		{5, 400 * time.Millisecond}, {6, 200 * time.Millisecond}, {7, 100 * time.Millisecond}, {8, 50 * time.Millisecond}, {50, 50 * time.Millisecond}} {
		if lo, hi := p.Window(c.lost); lo != 2*time.Millisecond || hi != c.hi {
			t.Errorf("after %d lost races: [%v, %v), want [2ms, %v)", c.lost, lo, hi, c.hi)
		}
	}
	if _, hi := DefaultRetry.WithBase(time.Second).Window(4); hi != 2*time.Second {
		t.Errorf("16 slots of 1s: %v, want the 2s cap", hi)
	}
	if lo, hi := DefaultRetry.Window(1); lo != 2*time.Millisecond || hi != 4*time.Millisecond {
		t.Errorf("no slot measured: [%v, %v), want a slot of Min", lo, hi)
	}
}

// casSubject is a Repo whose head a foreign writer can move behind the
// fence, on a fake clock.
type casSubject struct {
	name    string
	repo    Repo
	clk     *clock.Fake
	foreign func(i int) // commits behind the fence
}

func casSubjects(t *testing.T, policy RetryPolicy) []casSubject {
	return []casSubject{
		func() casSubject {
			clk := clock.NewFake(t0)
			m := NewMemRepo(policy).WithClock(clk)
			return casSubject{"mem", m, clk, func(i int) {
				if _, err := m.ForeignCommit([]Change{put("n", fmt.Sprint(i))}, CommitInfo{Message: "foreign"}); err != nil {
					t.Error(err)
				}
			}}
		}(),
		func() casSubject {
			clk := clock.NewFake(t0)
			s := openT(t, newRepo(t), Options{Clock: clk})
			return casSubject{"git", s.Bind(LocalRef(), policy), clk, func(i int) {
				h, _ := s.Head()
				if _, err := s.Commit(h, []Change{put("n", fmt.Sprint(i))}, CommitInfo{Message: "foreign"}); err != nil {
					t.Error(err)
				}
			}}
		}(),
	}
}

// interfered runs a transaction on c whose first n decisions (all, for
// n < 0) a foreign commit overtakes.
func interfered(ctx context.Context, c casSubject, n int) (TxResult, error) {
	calls := 0
	return c.repo.Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
		calls++
		if n < 0 || calls <= n {
			c.foreign(calls)
		}
		return &Proposal{Changes: []Change{put("mine", "1")}, Info: CommitInfo{Message: "mine"}}, nil
	})
}

// A transaction that keeps losing its compare-and-swap waits, after each
// lost race, a time drawn from the policy's window for that many losses,
// on the store's clock; it gives up after MaxAttempts, and ends when its
// context does. No real time passes.
func TestTransactBacksOffOnItsClock(t *testing.T) {
	t.Parallel()
	policy := DefaultRetry
	policy.MaxAttempts = 10
	const losses = 9
	for _, c := range casSubjects(t, policy) {
		t.Run(c.name, func(t *testing.T) {
			clk := c.clk
			type outcome struct {
				res TxResult
				err error
			}
			done := make(chan outcome)
			go func() {
				res, err := interfered(context.Background(), c, losses)
				done <- outcome{res, err}
			}()
			start := clk.Now()
			var waited time.Duration
			for n := 1; n <= losses; n++ {
				d, ok := clk.NextTimer(guard)
				if !ok {
					t.Fatalf("no wait after lost race %d", n)
				}
				if lo, hi := policy.Window(n); d < lo || (hi > lo && d >= hi) || (hi == lo && d != lo) {
					t.Fatalf("wait %v after lost race %d, outside [%v, %v)", d, n, lo, hi)
				}
				clk.Step(d)
				waited += d
			}
			o := <-done
			if o.err != nil || o.res.Conflicts != losses || o.res.Attempts != losses+1 || o.res.State.IsZero() {
				t.Fatalf("result %+v, %v", o.res, o.err)
			}
			if got := clk.Since(start); got != waited {
				t.Fatalf("the clock moved %v, the waits were %v", got, waited)
			}
		})
	}
	t.Run("gives up", func(t *testing.T) {
		for _, c := range casSubjects(t, policy) {
			clk := c.clk
			done := make(chan error)
			go func() { _, err := interfered(context.Background(), c, -1); done <- err }()
			for n := 1; n < policy.MaxAttempts; n++ {
				d, ok := clk.NextTimer(guard)
				if !ok {
					t.Fatalf("%s: no wait after lost race %d", c.name, n)
				}
				clk.Step(d)
			}
			if err := <-done; !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "gave up after 10 attempts") {
				t.Fatalf("%s: after %d attempts: %v", c.name, policy.MaxAttempts, err)
			}
		}
	})
	t.Run("honours its context", func(t *testing.T) {
		for _, c := range casSubjects(t, policy) {
			clk := c.clk
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { _, err := interfered(ctx, c, -1); done <- err }()
			if _, ok := clk.NextTimer(guard); !ok {
				t.Fatalf("%s: no wait", c.name)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrConflict) {
				t.Fatalf("%s: cancelled during its backoff: %v", c.name, err)
			}
		}
	})
}

func TestContentionMemory(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	s := openT(t, newRepoIn(t, t.TempDir()), Options{Clock: clk})
	if s.contention(LocalRef()) != nil {
		t.Fatal("the local ref keeps a contention note (its writers queue on the fence)")
	}
	r := &Remote{Name: "origin"}
	p := DefaultRetry
	// waitedOn runs m's before and returns the wait it made (0: none).
	waitedOn := func(m *contentionMemory) time.Duration {
		t.Helper()
		done := make(chan error)
		go func() { done <- m.before(context.Background(), p) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return 0
		case <-waitTimer(clk):
		}
		d, _ := clk.NextTimer(guard)
		clk.Step(d)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return d
	}
	waited := func() time.Duration { t.Helper(); return waitedOn(s.contention(r)) }
	// Nothing noted: no wait, and a transaction that lost nothing writes
	// nothing.
	s.contention(r).after(0, time.Second)
	if data, _ := s.ReadSideFile(s.contention(r).name); data != nil {
		t.Fatalf("an uncontended transaction wrote %q", data)
	}
	if d := waited(); d != 0 {
		t.Fatalf("no note, and a wait of %v", d)
	}
	// A transaction that lost races leaves a note; the next one starts
	// with a wait in that contention's window: 4 losses of 100 ms
	// attempts, [2ms, 1.6s); 8 losses are the window of 4 (its peak), not
	// the window an old loser has shrunk back to ([2ms, 100ms): 20 draws
	// all under 100ms in [2ms, 1.6s) have odds below 10^-24).
	for _, lost := range []int{4, 8} {
		longest := time.Duration(0)
		for range 20 {
			s.contention(r).after(lost, 100*time.Millisecond)
			d := waited()
			if d < 2*time.Millisecond || d >= 1600*time.Millisecond {
				t.Fatalf("after %d lost races the next waited %v, outside [2ms, 1.6s)", lost, d)
			}
			longest = max(longest, d)
		}
		if longest < 100*time.Millisecond {
			t.Fatalf("after %d lost races the next waited at most %v in 20 draws", lost, longest)
		}
	}
	s.contention(r).after(1, 100*time.Millisecond)
	if d := waited(); d < 2*time.Millisecond || d >= 200*time.Millisecond {
		t.Fatalf("after 1 lost race the next waited %v, outside [2ms, 200ms)", d)
	}
	// A transaction that wins at once while a note is in force (its clone
	// lost races a moment ago, and the writers it beat are still waiting
	// out their backoff) leaves the note one race smaller, down to none:
	// a winner does not take every turn from the writers it just beat.
	s.contention(r).after(3, 100*time.Millisecond)
	for _, want := range []string{"2 100000 ", "1 100000 ", ""} {
		m := s.contention(r)
		if d := waitedOn(m); d == 0 {
			t.Fatalf("a note in force (next: %q) and no wait", want)
		}
		m.after(0, 0)
		data, _ := s.ReadSideFile(m.name)
		if want == "" && data != nil || !strings.HasPrefix(string(data), want) {
			t.Fatalf("after a transaction that won at once the note is %q, want %q…", data, want)
		}
	}
	// A note older than memoryFor is ignored; an uncontended transaction
	// removes the note.
	clk.Step(memoryFor + time.Millisecond)
	if d := waited(); d != 0 {
		t.Fatalf("a stale note made the transaction wait %v", d)
	}
	m := s.contention(r)
	_ = m.before(context.Background(), p)
	m.after(0, 0)
	if data, _ := s.ReadSideFile(m.name); data != nil {
		t.Fatalf("note left after an uncontended transaction: %q", data)
	}
	// Another remote (or ref) has its own note.
	if s.contention(&Remote{Name: "backup"}).name == s.contention(r).name {
		t.Fatal("two remotes share a note")
	}
	// A damaged note is ignored.
	if err := s.WriteSideFile(m.name, []byte("garbage"), false); err != nil {
		t.Fatal(err)
	}
	if d := waited(); d != 0 {
		t.Fatalf("a damaged note made the transaction wait %v", d)
	}
	// A wait ends with its context.
	s.contention(r).after(4, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.contention(r).before(ctx, p) }()
	if !clk.BlockUntil(1, guard) {
		t.Fatal("no wait")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// waitTimer is closed once clk has a pending timer.
func waitTimer(clk *clock.Fake) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		if clk.BlockUntil(1, guard) {
			close(c)
		}
	}()
	return c
}
