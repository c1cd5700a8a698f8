package agent

// --wait DURATION on `todo ready --claim` and `task-lease acquire`
// (contract section 4): instead of refusing because the lease is held, a
// scope conflicts, the todo is claimed or nothing is ready, wait until the
// request can be applied, then apply it; at the deadline, answer what the
// request answers then (the refusal it would have given).
//
//	for {
//	    base := the head as last seen
//	    answer := decide the request (an ordinary mutation: nothing special)
//	    if the answer is not a waitable refusal, or the deadline passed: return it
//	    sleep until the head differs from base, or the soonest expiry of a
//	    claim or lease in force passes, or the deadline
//	}
//
// Only the refusals in waitableCodes (and "nothing ready", the no_change of
// ready --claim) wait; anything else (a malformed request, a version
// mismatch, an unknown todo, a transient failure) returns at once.
//
// A ready --claim wait also ends early, with the answer it has (nothing
// claimed), when nothing can become ready for the agent: no open todo is
// ready and every open todo of the goal excludes the agent or is bound to
// another (none open at all: every todo is closed). Waiting would only
// end at the deadline with the same answer. (A todo added, or an
// exclusion lifted, later is not waited for: the agent asks again.) An
// acquire or claim needs no such rule: a closed todo, an excluded or
// unregistered agent are refusals that do not wait.
//
// Each time a wait goes to sleep it tells WaitOptions.Notify what it waits
// for (the refusal: who holds the lease and until when; or why each open
// todo is not ready), so that a person at a terminal sees it.
//
// Locally the head is the ref file: the wait wakes on file notifications
// (gitstore.RefWatch) and reads the ref every second as a fallback (every
// 100ms without notifications). With a remote, the head is the server's:
// polled with ls-remote (one ref advertisement, no pack) at intervals that
// grow from 200ms to 5s, each drawn at random from the upper half of the
// interval, so many waiting agents neither hammer the server nor poll in
// step. A changed head, and the expiry of whatever blocks, wake a new
// decision; waking on the expiry needs no polling at all.

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/retry"
	"github.com/loopx-dev/loopx/lease"
)

// waitableCodes are the refusals a --wait request waits out.
var waitableCodes = []lease.Code{lease.CodeTodoLeaseConflict, lease.CodeWriteScopeConflict, lease.CodeClaimConflict}

// Waitable reports whether a --wait request waits out err.
func Waitable(err error) bool {
	e, ok := lease.AsError(err)
	return ok && slices.Contains(waitableCodes, e.Code)
}

// WaitOptions configure a waiting request.
type WaitOptions struct {
	// Timeout is how long to wait at most (the --wait DURATION); zero
	// decides once, as without --wait.
	Timeout time.Duration
	// Stats, when set, is filled with what the wait did.
	Stats *WaitStats
	// Poll overrides the polling intervals (tests and benchmarks).
	Poll *PollPolicy
	// Notify, when set, is told what the wait waits for each time it goes
	// to sleep, and once more when it ends early (Final). It runs on the
	// waiting goroutine.
	Notify func(WaitNotice)
}

// WaitNotice is what a wait waits for.
type WaitNotice struct {
	// Refusal is the refusal waited out (acquire, claim): its message
	// says who holds what, until when.
	Refusal *lease.Error
	// Agent and NotReady: for ready --claim, why each open todo is not
	// ready for Agent (at most lease.MaxNotReady).
	Agent    string
	NotReady []lease.NotReady
	// Deadline is when the wait ends at the latest (the wait's clock).
	Deadline time.Time
	// Final: the wait ends now, early: nothing can become ready.
	Final bool
}

// WaitStats counts what one waiting request did.
type WaitStats struct {
	// Attempts is the number of decisions made (1 without waiting).
	Attempts int `json:"attempts"`
	// Polls is the number of times the head was read to see whether it
	// moved: ls-remote requests with a remote, ref reads locally.
	Polls int `json:"polls"`
	// Notifications is the number of file notifications that woke the wait.
	Notifications int `json:"notifications"`
	// Changes is the number of times the head was found moved.
	Changes int `json:"changes"`
	// ExpiryWakes is the number of wake-ups at a holder's expiry.
	ExpiryWakes int `json:"expiry_wakes"`
	// WaitedMS is the time spent waiting, in milliseconds.
	WaitedMS int64 `json:"waited_ms"`
	// EndedEarly: the wait ended before its deadline because nothing
	// could become ready.
	EndedEarly bool `json:"ended_early,omitempty"`
}

// PollPolicy is how often a wait looks at the head.
type PollPolicy struct {
	// Local is the fallback interval of ref reads with file notifications;
	// LocalNoNotify without them.
	Local, LocalNoNotify time.Duration
	// Remote spaces the polls of the server's head: the n-th poll of a
	// wait waits in Remote's window n (growing, each drawn from the upper
	// half of its window).
	Remote retry.Policy
	// Spread is the wait before deciding again once the head moved: the
	// writers that woke together spread their decisions, since each takes
	// the writer fence.
	Spread retry.Policy
}

// DefaultPollPolicy is the polling of --wait: locally a ref read every
// second besides notifications (every 100ms without them); remotely polls
// from 200ms, growing by 1.6 to 5s; decisions spread over 20ms.
var DefaultPollPolicy = PollPolicy{Local: time.Second, LocalNoNotify: 100 * time.Millisecond,
	Remote: retry.Policy{Base: 125 * time.Millisecond, Factor: 1.6, Max: 5 * time.Second, Jitter: 0.5},
	Spread: retry.Policy{Base: 20 * time.Millisecond, Jitter: 1}}

// expirySlack is added to an expiry before re-deciding: the decision time
// is whole seconds, and the expiry must be strictly in the past.
const expirySlack = 50 * time.Millisecond

// AcquireWait is Acquire with --wait: while the lease is held by another
// effective execution or a scope conflicts, it waits (up to w.Timeout).
func AcquireWait(ctx context.Context, s Store, req lease.AcquireRequest, w WaitOptions) (*loopx.Result[lease.LeaseResult], error) {
	return waitFor(ctx, s, req.Goal, w, func() (*loopx.Result[lease.LeaseResult], error) { return s.Acquire(req) }, waitRefused, nil)
}

// ClaimWait is Claim with --wait (used by `loopx run --claim --wait`).
func ClaimWait(ctx context.Context, s Store, req lease.ClaimRequest, w WaitOptions) (*loopx.Result[lease.TodoResult], error) {
	return waitFor(ctx, s, req.Goal, w, func() (*loopx.Result[lease.TodoResult], error) { return s.Claim(req) }, waitRefused, nil)
}

// ReadyClaimWait is ReadyClaim with --wait: while nothing is ready (or the
// one ready todo cannot be claimed for a waitable reason) it waits; it
// ends early when nothing can become ready (see the file comment).
func ReadyClaimWait(ctx context.Context, s Store, req lease.ReadyClaimRequest, w WaitOptions) (*loopx.Result[lease.TodoResult], error) {
	explain := func(n *WaitNotice) bool {
		res, err := s.Ready(req.Goal, req.Actor)
		if err != nil {
			return false // the next decision says what is wrong
		}
		d := res.Data
		n.Agent, n.NotReady = d.AgentID, d.NotReady
		return d.Count == 0 && d.NotReadyMore == 0 && !slices.ContainsFunc(d.NotReady, func(t lease.NotReady) bool { return !barred(t) })
	}
	return waitFor(ctx, s, req.Goal, w, func() (*loopx.Result[lease.TodoResult], error) { return s.ReadyClaim(req) }, func(res *loopx.Result[lease.TodoResult], err error) bool {
		if err != nil {
			return Waitable(err)
		}
		return nothingClaimed(res)
	}, explain)
}

// barred reports whether a todo that is not ready stays so whatever
// others do: it excludes the agent, or is bound to another agent.
func barred(t lease.NotReady) bool {
	return slices.ContainsFunc(t.Reasons, func(r lease.NotReadyReason) bool {
		return r.Kind == lease.NotReadyExcluded || r.Kind == lease.NotReadyBound
	})
}

func waitRefused[T any](_ *loopx.Result[T], err error) bool { return Waitable(err) }

// nothingClaimed reports a ready --claim that found nothing to claim.
func nothingClaimed(res *loopx.Result[lease.TodoResult]) bool {
	if res == nil || res.Status != lease.StatusNoChange {
		return false
	}
	return res.Data.Claimed != nil && !*res.Data.Claimed
}

// waitFor decides attempt until it is not blocked or the deadline passes
// (see the file comment). It waits on the store's clock and ends, with the
// last answer and ctx's error, when ctx does.
//
// explain, when set, fills in why nothing is ready and reports whether
// nothing can become ready: the wait then ends early with the answer it has.
func waitFor[T any](ctx context.Context, s Store, goal string, w WaitOptions, attempt func() (*loopx.Result[T], error), blocked func(*loopx.Result[T], error) bool, explain func(*WaitNotice) bool) (*loopx.Result[T], error) {
	stats := w.Stats
	if stats == nil {
		stats = &WaitStats{}
	}
	policy := DefaultPollPolicy
	if w.Poll != nil {
		policy = *w.Poll
	}
	clk := s.Clock()
	start := clk.Now()
	deadline := start.Add(w.Timeout)
	defer func() { stats.WaitedMS = clk.Since(start).Milliseconds() }()
	remote := s.PollsRemote()
	var watch gitstore.Watcher
	defer func() {
		if watch != nil {
			watch.Close()
		}
	}()
	polls := 0 // remote polls so far: their spacing grows with each

	base, baseOK := waitHead(ctx, s, stats)
	for {
		res, err := attempt()
		stats.Attempts++
		if !blocked(res, err) || !clk.Now().Before(deadline) {
			return res, err
		}
		if explain != nil || w.Notify != nil {
			n := WaitNotice{Deadline: deadline}
			n.Refusal, _ = lease.AsError(err)
			if explain != nil && explain(&n) {
				stats.EndedEarly = true
				if w.Notify != nil {
					n.Final = true
					w.Notify(n)
				}
				return res, err
			}
			if w.Notify != nil {
				w.Notify(n)
			}
		}
		wake := deadline
		if d, ok := s.NextExpiry(goal); ok {
			// d is counted from the decision time, whole seconds of the
			// machine's clock (or LOOPX_NOW).
			if at := clk.Now().Truncate(time.Second).Add(d + expirySlack); at.Before(wake) {
				wake = at
			}
		}
		if !remote && watch == nil {
			watch = s.WatchRef()
		}
		var changed bool
		if remote {
			changed, base, baseOK, polls = pollRemote(ctx, s, clk, base, baseOK, wake, polls, policy, stats)
		} else {
			changed, base, baseOK = watchLocal(ctx, s, clk, watch, base, baseOK, wake, policy, stats)
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if !changed && !clk.Now().Before(wake) && wake.Before(deadline) {
			stats.ExpiryWakes++
		}
	}
}

// waitHead reads the head a wait compares with: the local ref, or the
// server's (ls-remote). ok is false when it could not be read; any head
// read later then counts as a change.
func waitHead(ctx context.Context, s Store, stats *WaitStats) (gitstore.Hash, bool) {
	stats.Polls++
	h, err := s.ProbeHead(ctx)
	return h, err == nil
}

// watchLocal waits until the local ref differs from base, or until wake,
// or until ctx ends: it wakes on the watch's notifications and reads the
// ref every p.Local (p.LocalNoNotify without notifications) as a fallback.
func watchLocal(ctx context.Context, s Store, clk clock.Clock, watch gitstore.Watcher, base gitstore.Hash, baseOK bool, wake time.Time, p PollPolicy, stats *WaitStats) (bool, gitstore.Hash, bool) {
	every := p.Local
	if !watch.Native() {
		every = p.LocalNoNotify
	}
	timer := clk.NewTimer(wake.Sub(clk.Now()))
	defer timer.Stop()
	for {
		tick := clk.NewTimer(every)
		select {
		case <-ctx.Done():
			tick.Stop()
			return false, base, baseOK
		case <-timer.C():
			tick.Stop()
			return false, base, baseOK
		case <-watch.Changed():
			stats.Notifications++
		case <-tick.C():
		}
		tick.Stop()
		h, ok := waitHead(ctx, s, stats)
		if ok && (!baseOK || h != base) {
			stats.Changes++
			_ = clock.Sleep(ctx, clk, p.Spread.Delay(1, rand.Float64()))
			return true, h, true
		}
	}
}

// pollRemote polls the server's head, the n-th poll of the wait after a
// wait in p.Remote's window n, until it differs from base, or until wake,
// or until ctx ends. It returns the polls made so far.
func pollRemote(ctx context.Context, s Store, clk clock.Clock, base gitstore.Hash, baseOK bool, wake time.Time, polls int, p PollPolicy, stats *WaitStats) (bool, gitstore.Hash, bool, int) {
	for {
		polls++
		sleep := min(p.Remote.Delay(polls, rand.Float64()), wake.Sub(clk.Now()))
		if clock.Sleep(ctx, clk, sleep) != nil || !clk.Now().Before(wake) {
			return false, base, baseOK, polls
		}
		h, ok := waitHead(ctx, s, stats)
		if ok && (!baseOK || h != base) {
			stats.Changes++
			return true, h, true, polls
		}
	}
}
