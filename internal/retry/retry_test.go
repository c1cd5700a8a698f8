package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/clock"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// The windows each shape of policy promises, wait by wait.
func TestWindows(t *testing.T) {
	type win struct{ lo, hi time.Duration }
	cases := []struct {
		name string
		p    Policy
		want []win // after failure 1, 2, ...
	}{
		{
			// gitstore's compare-and-swap: full jitter in slots of 10ms,
			// growing over 4 lost races, then shrinking back to one slot.
			"grow then shrink",
			Policy{Base: 10 * ms, Factor: 2, Min: 2 * ms, Max: 2 * s, Jitter: 1, GrowFor: 4},
			[]win{{2 * ms, 20 * ms}, {2 * ms, 40 * ms}, {2 * ms, 80 * ms}, {2 * ms, 160 * ms},
				{2 * ms, 80 * ms}, {2 * ms, 40 * ms}, {2 * ms, 20 * ms}, {2 * ms, 10 * ms}, {2 * ms, 10 * ms}},
		},
		{
			// A slot shorter than Min counts as Min; Max caps the top.
			"min slot, capped",
			Policy{Base: 0, Factor: 2, Min: 2 * ms, Max: 10 * ms, Jitter: 1, GrowFor: 4},
			[]win{{2 * ms, 4 * ms}, {2 * ms, 8 * ms}, {2 * ms, 10 * ms}, {2 * ms, 10 * ms}, {2 * ms, 10 * ms}, {2 * ms, 8 * ms}, {2 * ms, 4 * ms}, {2 * ms, 2 * ms}},
		},
		{
			// --wait's remote polling: 200ms growing by 1.6 to 5s, each
			// wait in the upper half of its window.
			"upper half, growing to a cap",
			Policy{Base: 125 * ms, Factor: 1.6, Max: 5 * s, Jitter: 0.5},
			[]win{{100 * ms, 200 * ms}, {160 * ms, 320 * ms}, {256 * ms, 512 * ms}, {409600 * time.Microsecond, 819200 * time.Microsecond},
				{655360 * time.Microsecond, 1310720 * time.Microsecond}, {1048576 * time.Microsecond, 2097152 * time.Microsecond},
				{1677721600, 3355443200}, {2500 * ms, 5 * s}, {2500 * ms, 5 * s}},
		},
		{
			// A held lease's renewal period: constant, shortened by up to 10%.
			"period with 10% jitter",
			Policy{Base: 10 * s, Jitter: 0.1},
			[]win{{9 * s, 10 * s}, {9 * s, 10 * s}, {9 * s, 10 * s}},
		},
		{
			"exact period",
			Policy{Base: 2 * s, Factor: 1},
			[]win{{2 * s, 2 * s}, {2 * s, 2 * s}},
		},
	}
	for _, c := range cases {
		for i, w := range c.want {
			n := i + 1
			lo, hi := c.p.Window(n)
			if lo != w.lo || hi != w.hi {
				t.Errorf("%s: window %d = [%v, %v), want [%v, %v)", c.name, n, lo, hi, w.lo, w.hi)
			}
			if d := c.p.Delay(n, 0); d != lo {
				t.Errorf("%s: Delay(%d, 0) = %v, want %v", c.name, n, d, lo)
			}
			if d := c.p.Delay(n, 0.999999); d < lo || (hi > lo && d >= hi) || (hi == lo && d != lo) {
				t.Errorf("%s: Delay(%d, ≈1) = %v, outside [%v, %v)", c.name, n, d, lo, hi)
			}
		}
	}
}

func TestPeak(t *testing.T) {
	p := Policy{Base: 10 * ms, Factor: 2, Min: 2 * ms, Max: 2 * s, Jitter: 1, GrowFor: 4}
	for _, c := range []struct {
		n  int
		hi time.Duration
	}{{0, 10 * ms}, {1, 20 * ms}, {4, 160 * ms}, {7, 160 * ms}, {100, 160 * ms}} {
		if lo, hi := p.Peak(c.n); lo != 2*ms || hi != c.hi {
			t.Errorf("Peak(%d) = [%v, %v), want [2ms, %v)", c.n, lo, hi, c.hi)
		}
	}
	if _, hi := (Policy{Base: ms, Factor: 2, Max: s}).Peak(5); hi != 32*ms {
		t.Errorf("Peak without GrowFor = %v, want 32ms", hi)
	}
}

func TestAttemptsAndTimeout(t *testing.T) {
	p := Policy{MaxAttempts: 3}
	if p.Exhausted(2) || !p.Exhausted(3) || (Policy{}).Exhausted(1000) {
		t.Error("Exhausted")
	}
	ctx, cancel := Policy{Timeout: time.Hour}.Bound(context.Background())
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 59*time.Minute {
		t.Errorf("Bound: deadline %v %v", dl, ok)
	}
	ctx, cancel = Policy{}.Bound(context.Background())
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("Bound without a timeout set a deadline")
	}
}

// Wait waits a draw of its window on the clock it is given, and ends when
// its context does.
func TestWaitOnAFakeClock(t *testing.T) {
	p := Policy{Base: 10 * ms, Factor: 2, Min: 2 * ms, Max: 2 * s, Jitter: 1, GrowFor: 4}
	f := clock.NewFake(time.Unix(0, 0))
	for n := 1; n <= 9; n++ {
		done := make(chan error, 1)
		go func() { done <- p.Wait(context.Background(), f, n) }()
		d, ok := f.NextTimer(10 * time.Second)
		if !ok {
			t.Fatalf("wait %d started no timer", n)
		}
		lo, hi := p.Window(n)
		if d < lo || d >= hi {
			t.Fatalf("wait %d of %v, outside its window [%v, %v)", n, d, lo, hi)
		}
		f.Step(d - time.Nanosecond)
		select {
		case <-done:
			t.Fatalf("wait %d ended before its time", n)
		default:
		}
		f.Step(time.Nanosecond)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Policy{Base: time.Hour}.Wait(ctx, f, 1) }()
	if !f.BlockUntil(1, 10*time.Second) {
		t.Fatal("no timer")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel = %v", err)
	}
}
