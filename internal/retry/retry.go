// Package retry is the one policy of loopx's loops that wait between
// attempts: the compare-and-swap retries of a transaction and the
// contention a clone remembers (gitstore), the ref lock and the fence where
// flock cannot block (gitstore), --wait's polling and a held lease's
// renewals and retries (agent), and init's publish-or-adopt (remote). A
// Policy says how long the n-th wait may be; Wait waits it on a clock
// (internal/clock), honouring the context. The model is client-go's
// wait.Backoff, with the window that grows and then shrinks that
// gitstore's retries need.
package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/loopx-dev/loopx/internal/clock"
)

// Policy spaces a loop's attempts. After the n-th failed attempt (n ≥ 1)
// the loop waits a time drawn uniformly from a window [lo, hi):
//
//	hi = max(Base, Min) × Factor^e(n), at most Max (when Max > 0)
//	lo = max(Min, hi × (1 − Jitter))
//	e(n) = n                    while n ≤ GrowFor, or always when GrowFor is 0
//	e(n) = max(0, 2·GrowFor − n) after GrowFor failures: the window shrinks
//	                            back to Base, one Factor a failure
//
// so Base is the slot the window counts in (Ethernet's binary exponential
// backoff: after n collisions, up to 2^n slots), Factor 0 or 1 keeps every
// window at Base (a period), Jitter 1 draws from the whole window (full
// jitter) and Jitter 0.1 shortens a period by up to a tenth. When hi ≤ lo
// the wait is lo.
type Policy struct {
	// Base is the slot: the window's top is Base×Factor^e.
	Base time.Duration
	// Factor is the window's growth per failure (0: 1, a constant window).
	Factor float64
	// Max caps the window's top (0: no cap).
	Max time.Duration
	// Min is the shortest wait (and the smallest slot).
	Min time.Duration
	// Jitter in [0,1] is the fraction of the window's top a wait may fall
	// short of it by (0: exactly the top; 1: anywhere from Min).
	Jitter float64
	// GrowFor is the number of failures over which the window grows;
	// after that it shrinks again, one Factor a failure, down to Base (0:
	// it grows to Max and stays). A loop that has failed many times in a
	// row then retries sooner than ones that just arrived: age wins.
	GrowFor int
	// MaxAttempts bounds a loop's attempts (0: no bound); Timeout the
	// whole loop (0: none beyond its context).
	MaxAttempts int
	Timeout     time.Duration
}

// Exp is the window's exponent e(n) after the n-th failure.
func (p Policy) Exp(n int) int {
	n = max(n, 0)
	if p.GrowFor <= 0 || n <= p.GrowFor {
		return n
	}
	return max(0, 2*p.GrowFor-n)
}

// Window is the range [lo, hi) the wait after the n-th failure is drawn
// from (lo == hi: exactly lo).
func (p Policy) Window(n int) (lo, hi time.Duration) {
	return p.window(p.Exp(n))
}

// Peak is the window of n failures as if it never shrank: the window a
// loop that failed n times in a row last waited in, at most GrowFor
// failures' (gitstore's contention memory starts a new transaction there).
func (p Policy) Peak(n int) (lo, hi time.Duration) {
	if p.GrowFor > 0 {
		n = min(n, p.GrowFor)
	}
	return p.window(max(n, 0))
}

func (p Policy) window(e int) (lo, hi time.Duration) {
	f := p.Factor
	if f <= 0 {
		f = 1
	}
	top := float64(max(p.Base, p.Min)) * math.Pow(f, float64(e))
	if p.Max > 0 && top > float64(p.Max) {
		top = float64(p.Max)
	}
	if top >= math.MaxInt64 {
		top = math.MaxInt64
	}
	hi = time.Duration(top)
	j := min(max(p.Jitter, 0), 1)
	lo = max(p.Min, time.Duration(float64(hi)*(1-j)))
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Delay is the wait after the n-th failure for a draw r in [0,1).
func (p Policy) Delay(n int, r float64) time.Duration {
	return draw(p.Window(n))(r)
}

// PeakDelay is Delay in the Peak window.
func (p Policy) PeakDelay(n int, r float64) time.Duration {
	return draw(p.Peak(n))(r)
}

func draw(lo, hi time.Duration) func(float64) time.Duration {
	return func(r float64) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(float64(hi-lo)*min(max(r, 0), 1))
	}
}

// Wait waits the n-th wait (a random draw in Window(n)) on clk; it returns
// ctx's error when ctx ends first.
func (p Policy) Wait(ctx context.Context, clk clock.Clock, n int) error {
	return clock.Sleep(ctx, clk, p.Delay(n, rand.Float64()))
}

// Exhausted reports whether a loop that has made n attempts may make no
// more (MaxAttempts).
func (p Policy) Exhausted(n int) bool { return p.MaxAttempts > 0 && n >= p.MaxAttempts }

// Bound returns ctx bounded by Timeout (when set).
func (p Policy) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.Timeout > 0 {
		return context.WithTimeout(ctx, p.Timeout)
	}
	return ctx, func() {}
}

// WithBase is p with another slot (a slot measured as the loop runs).
func (p Policy) WithBase(base time.Duration) Policy {
	p.Base = base
	return p
}
