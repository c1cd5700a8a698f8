package clock

import (
	"slices"
	"sync"
	"time"
)

// Fake is a clock for tests: its time moves only when told (Step,
// SetTime), and moving it fires the timers that fall due, in the order of
// their times. A test learns what the code under test waits for without
// sleeping: NextTimer returns the duration of each timer started, in order,
// and BlockUntil waits (in real time, as a guard) until so many timers are
// pending.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	pending []*fakeTimer
	started []time.Duration // timers started and not yet taken by NextTimer
	changed chan struct{}   // closed (and replaced) when a timer starts or stops
}

// NewFake is a fake clock at t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t, changed: make(chan struct{})}
}

var _ Clock = (*Fake)(nil)

type fakeTimer struct {
	f  *Fake
	at time.Time
	c  chan time.Time
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since is Now().Sub(t).
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer starts a timer that fires when the fake time reaches d from
// now (at once for d ≤ 0).
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
	} else {
		f.pending = append(f.pending, t)
	}
	f.started = append(f.started, d)
	f.signal()
	return t
}

// After is NewTimer(d).C().
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.pending, t)
	if i < 0 {
		return false
	}
	f.pending = slices.Delete(f.pending, i, i+1)
	f.signal()
	return true
}

// signal wakes BlockUntil and NextTimer (f.mu held).
func (f *Fake) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Step moves the time forward by d, firing the timers that fall due.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// SetTime moves the time to t (forward or back), firing the timers that
// fall due.
func (f *Fake) SetTime(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t)
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	slices.SortStableFunc(f.pending, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	kept := f.pending[:0]
	fired := false
	for _, tm := range f.pending {
		if tm.at.After(t) {
			kept = append(kept, tm)
			continue
		}
		tm.c <- t // buffered, and each timer fires once
		fired = true
	}
	clear(f.pending[len(kept):])
	f.pending = kept
	if fired {
		f.signal()
	}
}

// Waiters is the number of timers started and not yet fired or stopped.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// BlockUntil waits until at least n timers are pending; false when guard
// (real time: a test's safety net, not part of what it measures) passed
// first.
func (f *Fake) BlockUntil(n int, guard time.Duration) bool {
	return f.await(guard, func() bool { return len(f.pending) >= n })
}

// NextTimer returns the duration of the next timer started (in the order
// they were started, including those started before the call and not yet
// taken); false when none started within guard (real time).
func (f *Fake) NextTimer(guard time.Duration) (time.Duration, bool) {
	var d time.Duration
	ok := f.await(guard, func() bool {
		if len(f.started) == 0 {
			return false
		}
		d = f.started[0]
		f.started = f.started[1:]
		return true
	})
	return d, ok
}

// await waits until cond (called with f.mu held) holds, or guard passes.
func (f *Fake) await(guard time.Duration, cond func() bool) bool {
	g := time.NewTimer(guard)
	defer g.Stop()
	for {
		f.mu.Lock()
		if cond() {
			f.mu.Unlock()
			return true
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-g.C:
			return false
		}
	}
}
