// Package clock is the time source of every loop in loopx that waits or
// measures how long it waited: the compare-and-swap retries and the
// contention they remember (gitstore), the fence wait where flock cannot
// block (gitstore), --wait and the renewals of a held lease (agent), and
// init's publish-or-adopt (remote). One interface, Clock, with the
// machine's clock (Real) for programs and a Fake for tests, whose Step
// fires the timers that fall due, so a test drives hours of renewals and
// backoff without sleeping. The model is k8s.io/utils/clock (Clock,
// PassiveClock, a fake clock whose Step fires timers), kept to what loopx
// uses.
//
// A Clock is the clock that waits, and the real time. The time a decision
// is made at is another thing: a store's decision clock (Options.Now, which
// LOOPX_NOW can fix) stamps commits and judges expiries, and never sleeps.
package clock

import (
	"context"
	"time"
)

// PassiveClock reads the time.
type PassiveClock interface {
	Now() time.Time
	// Since is Now().Sub(t).
	Since(t time.Time) time.Duration
}

// Clock reads the time and waits for it.
type Clock interface {
	PassiveClock
	// NewTimer returns a timer that fires once, d from now (at once when
	// d ≤ 0).
	NewTimer(d time.Duration) Timer
	// After is NewTimer(d).C(): a channel that receives the time once, d
	// from now. Prefer NewTimer where the wait can end early (Stop).
	After(d time.Duration) <-chan time.Time
}

// Timer fires once (see Clock.NewTimer).
type Timer interface {
	// C receives the time when the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; false when it already fired
	// or was stopped.
	Stop() bool
}

// Real is the machine's clock.
var Real Clock = realClock{}

// Or returns c, or Real when c is nil (the zero value of an option).
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) Since(t time.Time) time.Duration        { return time.Since(t) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Sleep waits d on c, or until ctx is done: then it returns ctx's error
// (nil when the wait ran its course). A wait of d ≤ 0 still returns ctx's
// error when ctx is already done, so a loop that sleeps between attempts
// never makes one more attempt after its context ended.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// SleepUntil waits until at on c, or until ctx is done (Sleep).
func SleepUntil(ctx context.Context, c Clock, at time.Time) error {
	return Sleep(ctx, c, at.Sub(c.Now()))
}
