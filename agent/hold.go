package agent

// Holding a task lease while work runs: the loop of `loopx run`, for
// programs that embed loopx too. It is modelled on client-go's
// leaderelection: the holder renews every RenewEvery (a third of the TTL,
// with jitter); a renewal that fails transiently (exit-3 class: fence
// busy, remote unreachable, I/O) is retried every RetryPeriod with the SAME
// arguments, so one that was applied but whose answer was lost replays; if
// no renewal succeeds within RenewDeadline of the last one (two thirds of
// the TTL), or a renewal is refused (taken over, transferred, released by
// hand, owner unregistered, claim moved), the lease is lost: Lost() closes
// and OnLost runs, once. The epoch is the fencing token: the work started
// under one epoch, and a new holder always has a higher one.
//
// Decisions written down here:
//   - A version_mismatch is not by itself a loss: the work may have used
//     the lease proof itself (todo update --task-lease-expected-version
//     bumps the version). The lease is read (inspect): if it is still this
//     execution (owner, key, epoch), active and effective, its version is
//     adopted and the renewal made at once; otherwise the lease is lost
//     with the version_mismatch refusal.
//   - A renewal answered "replayed" returns the current lease; it counts
//     only if that is still this execution.
//   - Between renewals the holder watches the store (when it has one:
//     HoldLease), so a lease taken over, transferred, released by hand or
//     made ineffective is noticed within seconds, not at the next renewal:
//     locally it wakes on the ref's file notifications (and reads the ref
//     every PollPolicy.Local as a fallback, LocalNoNotify without
//     notifications); with a remote it polls the server's head every
//     HoldPolicy.Poll (default a sixth of the TTL within 2s..30s, one
//     ref advertisement: DefaultHoldPoll). When the head
//     moved, it reads the lease: still this execution (a newer version,
//     from work that used the proof, is adopted) or not, and then it renews
//     at once. The loss is that renewal's refusal, the same as at a
//     scheduled renewal: the store decides, never a read alone.
//   - The deadline is counted from when the last successful renewal was
//     SENT, a lower bound of its decision time, so the holder gives up
//     before the store could judge the lease expired (up to a third of the
//     TTL before, less the clock difference between machines).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/retry"
	"github.com/loopx-dev/loopx/lease"
)

// HoldPolicy is when a holder renews, retries and gives up.
type HoldPolicy struct {
	// RenewEvery is the time between successful renewals (before jitter).
	RenewEvery time.Duration
	// RetryPeriod is the time between attempts after a transient failure.
	RetryPeriod time.Duration
	// RenewDeadline is how long after the last successful renewal the
	// lease counts as lost when no renewal succeeded since.
	RenewDeadline time.Duration
	// Jitter in [0,1): each wait is shortened by a random fraction up to
	// Jitter, so holders started together do not renew in step.
	Jitter float64
	// Poll is how often the server's head is polled between renewals
	// with a remote (0: DefaultHoldPoll); locally the ref is watched.
	Poll time.Duration
}

// DefaultHoldPoll is how often a holder of a lease of ttl polls the
// server's head between renewals unless told: a sixth of the TTL, within
// 2s..30s. A lost lease is noticed within about this long; each poll is a
// connection to the server and, when the head moved, a fetch of what every
// other agent committed since. A fixed 2 s made 64 holders (60 s TTL) cost
// 32 connections and fetches a second, both cores busy; at a sixth of the
// TTL they cost 6.4, and a loss is still noticed within half a renewal
// period.
func DefaultHoldPoll(ttl time.Duration) time.Duration {
	return min(max(ttl/6, 2*time.Second), 30*time.Second)
}

// DefaultHoldPolicy is the policy of `loopx run` for a lease of ttl:
// renew every ttl/3, retry every ttl/12 (50ms..2s), give up after 2ttl/3,
// jitter 10%.
func DefaultHoldPolicy(ttl time.Duration) HoldPolicy {
	return HoldPolicy{RenewEvery: ttl / 3, RetryPeriod: min(max(ttl/12, 50*time.Millisecond), 2*time.Second),
		RenewDeadline: ttl * 2 / 3, Jitter: 0.1}
}

// Check refuses a policy that could let the lease expire unnoticed.
func (p HoldPolicy) Check(ttl time.Duration) error {
	switch {
	case p.RenewEvery <= 0 || p.RetryPeriod <= 0:
		return lease.Errorf(lease.CodeInvalidRequest, "renew and retry periods must be positive")
	case p.RenewDeadline <= p.RenewEvery:
		return lease.Errorf(lease.CodeInvalidRequest, "the renew deadline (%v) must be longer than the renew period (%v)", p.RenewDeadline, p.RenewEvery)
	case p.RenewDeadline >= ttl:
		return lease.Errorf(lease.CodeInvalidRequest, "the renew deadline (%v) must be shorter than the TTL (%v)", p.RenewDeadline, ttl)
	case p.Jitter < 0 || p.Jitter >= 1:
		return lease.Errorf(lease.CodeInvalidRequest, "jitter %v: want 0 <= jitter < 1", p.Jitter)
	case p.Poll < 0:
		return lease.Errorf(lease.CodeInvalidRequest, "poll period %v: want 0 (the default) or more", p.Poll)
	}
	return nil
}

// period is a wait of d shortened by up to Jitter, as the retry policy
// draws it (r in [0,1): r=0 is the whole period).
func (p HoldPolicy) period(d time.Duration, r float64) time.Duration {
	return retry.Policy{Base: d, Jitter: p.Jitter}.Delay(1, 1-r)
}

// renewAt is when to renew after a successful renewal sent at lastOK.
func (p HoldPolicy) renewAt(lastOK time.Time, r float64) time.Time {
	return lastOK.Add(p.period(p.RenewEvery, r))
}

// deadline is when the lease counts as lost after lastOK.
func (p HoldPolicy) deadline(lastOK time.Time) time.Time { return lastOK.Add(p.RenewDeadline) }

// retryAt is when to retry after a transient failure at now: a retry
// period later, never after the deadline.
func (p HoldPolicy) retryAt(now, lastOK time.Time, r float64) time.Time {
	at := now.Add(p.period(p.RetryPeriod, r))
	if d := p.deadline(lastOK); at.After(d) {
		return d
	}
	return at
}

// renewAction is what a holder does with the answer to a renewal.
type renewAction int

const (
	actRenewed renewAction = iota // the lease is extended: adopt its version
	actRetry                      // transient: retry with the same arguments
	actResync                     // version_mismatch: read the lease, maybe adopt its version
	actLost                       // refused: the lease is lost
)

// execution identifies the holder's execution of a lease.
type execution struct {
	owner, key string
	epoch      int64
}

// ours reports whether lv is still this execution, active and effective.
func (x execution) ours(lv *lease.LeaseView) bool {
	return lv != nil && lv.Lease != nil && lv.Owner == x.owner && lv.IdempotencyKey == x.key &&
		lv.Epoch == x.epoch && lv.Status == lease.LeaseActive && lv.Effective
}

// classifyRenew decides what an answer to a renewal means (pure).
func classifyRenew(res *loopx.Result[lease.LeaseResult], err error, x execution) (renewAction, *lease.Error) {
	if err == nil {
		lv := res.Data.Lease
		if x.ours(lv) {
			return actRenewed, nil
		}
		return actLost, notCurrent(lv)
	}
	le, ok := lease.AsError(err)
	switch {
	case !ok || lease.ClassOf(le.Code) == lease.Transient:
		// An error without a contract code is a local failure (I/O):
		// retrying with the same arguments is always safe.
		return actRetry, nil
	case le.Code == lease.CodeVersionMismatch:
		return actResync, le
	}
	return actLost, le
}

// notCurrent is the loss of a renewal that succeeded (a replay) but whose
// lease is no longer this execution.
func notCurrent(lv *lease.LeaseView) *lease.Error {
	if lv == nil || lv.Lease == nil {
		return lease.Errorf(lease.CodeExecutionNotCurrent, "the todo has no lease any more")
	}
	return lease.Errorf(lease.CodeExecutionNotCurrent, "the lease is now %s by %s (epoch %d, effective %v)",
		lv.Status, lv.Owner, lv.Epoch, lv.Effective)
}

// HeldLease is the lease a Hold holds, as last known.
type HeldLease struct {
	Goal, Todo, Owner, IdempotencyKey string
	Version, Epoch                    int64
	WriteScopes                       []string
	// ExpiresAt is the expiry the store recorded (its clock).
	ExpiresAt time.Time
	// Generated: the key was generated (the request had none). Adopted:
	// the execution was acquired before, and adopted (HoldLease).
	Generated, Adopted bool
}

// HoldRequest is what to hold.
type HoldRequest struct {
	// Acquire is the lease request. Goal and Owner may be left to the
	// defaults, as for Acquire.
	Acquire lease.AcquireRequest
	// Claim also claims the todo for the owner in the same commit
	// (Store.Claim with the lease key and TTL; the lease then takes the
	// todo's required write scopes, so Acquire.WriteScopes must be empty).
	Claim bool
	// Wait waits for the lease as AcquireWait does (zero: no waiting).
	Wait WaitOptions
	// Policy is the renewal policy; zero: DefaultHoldPolicy(TTL).
	Policy HoldPolicy
	// Poll, with the default policy, is how often the server's head is
	// polled between renewals (0: DefaultHoldPoll(TTL)): how soon a lost lease
	// is noticed, against one connection to the server per poll (and a
	// fetch when the head moved).
	Poll time.Duration
	// OnLost runs once, on the renewing goroutine, when the lease is lost
	// (before Lost() closes).
	OnLost func(*lease.Error)
}

// holdOps are the store operations a Hold uses (a fake in tests).
type holdOps interface {
	Renew(lease.RenewRequest) (*loopx.Result[lease.LeaseResult], error)
	Release(lease.ReleaseRequest) (*loopx.Result[lease.LeaseResult], error)
	Complete(lease.CompleteRequest) (*loopx.Result[lease.TodoResult], error)
	Inspect(goal, todo string) (*loopx.Result[lease.LeaseResult], error)
}

// headSource is how a holder sees the store move between renewals (a
// Store; nil: it does not watch).
type headSource interface {
	ProbeHead(ctx context.Context) (gitstore.Hash, error)
	PollsRemote() bool
	WatchRef() gitstore.Watcher
}

// Hold is a lease being held: renewed in the background until Stop,
// Release or Complete, or until it is lost.
type Hold struct {
	ops    holdOps
	src    headSource // nil: no watching between renewals
	poll   PollPolicy // the local watch's fallback reads
	watch  gitstore.Watcher
	head   gitstore.Hash
	headOK bool
	clk    clock.Clock // the store's (Store.Clock)
	rnd    func() float64
	policy HoldPolicy
	ttl    int64
	x      execution
	onLost func(*lease.Error)

	mu       sync.Mutex
	cur      HeldLease
	lastOK   time.Time
	lostErr  *lease.Error
	renewals int

	lost    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// HoldLease acquires (or replays) the lease, or with req.Claim claims the
// todo and acquires it in one commit, and renews it in the background. The
// result is the acquire's (or claim's).
//
// Without an idempotency key, a fresh one is generated (NewExecutionKey):
// each hold is then a new execution, and the key is the held lease's. A
// refusal or a transient failure of the acquire is returned as is (with
// the generated key as the detail idempotency_key): retry with the same
// arguments and key.
//
// The current execution of the owner and key is adopted whatever TTL,
// expected version or write scopes it was acquired with (contract section
// 4: a lease acquired by hand, or by a run that was cut off): the acquire's
// idempotency_key_reuse for such a request is answered by renewing that
// execution at once with this request's TTL, and the renewal is the
// result. Adoption needs the owner named, and write scopes that are none
// or the lease's own (a run must not work on paths its lease does not
// cover); otherwise the refusal stands.
func HoldLease(ctx context.Context, s Store, req HoldRequest) (*Hold, loopx.Reply, error) {
	ttl := time.Duration(req.Acquire.TTLSeconds) * time.Second
	policy := req.Policy
	if policy == (HoldPolicy{}) {
		policy = DefaultHoldPolicy(ttl)
		policy.Poll = req.Poll
	}
	if err := lease.CheckTTL(req.Acquire.TTLSeconds); err != nil {
		return nil, nil, err
	}
	if err := policy.Check(ttl); err != nil {
		return nil, nil, err
	}
	a := req.Acquire
	generated := a.IdempotencyKey == ""
	if generated {
		a.IdempotencyKey = NewExecutionKey()
	}
	if req.Claim && len(a.WriteScopes) > 0 {
		return nil, nil, lease.Errorf(lease.CodeInvalidRequest, "a claim acquires the lease with the todo's required write scopes: give no write scopes")
	}
	stats := req.Wait.Stats
	if stats == nil {
		stats = &WaitStats{}
	}
	w := req.Wait
	w.Stats = stats
	clk := s.Clock()
	var (
		sent    time.Time
		granted loopx.Reply
		lv      *lease.LeaseView
		goal    string
		err     error
	)
	if req.Claim {
		var res *loopx.Result[lease.TodoResult]
		res, err = waitIf(ctx, s, a.Goal, w, func() (*loopx.Result[lease.TodoResult], error) {
			sent = clk.Now()
			return s.Claim(lease.ClaimRequest{Goal: a.Goal, Todo: a.Todo, Actor: a.Owner, LeaseKey: a.IdempotencyKey,
				LeaseTTLSeconds: a.TTLSeconds})
		})
		if res != nil {
			granted, lv, goal = res, res.Data.Lease, res.Data.GoalID
		}
	} else {
		var res *loopx.Result[lease.LeaseResult]
		res, err = waitIf(ctx, s, a.Goal, w, func() (*loopx.Result[lease.LeaseResult], error) {
			sent = clk.Now()
			return s.Acquire(a)
		})
		if le, ok := lease.AsError(err); ok && le.Code == lease.CodeIdempotencyKeyReuse && !generated {
			sent = clk.Now()
			res, err = adoptExecution(s, a, le)
		}
		if res != nil {
			granted, lv, goal = res, res.Data.Lease, res.Data.GoalID
		}
	}
	if err != nil {
		if le, ok := lease.AsError(err); ok && generated {
			err = le.With("idempotency_key", a.IdempotencyKey)
		}
		return nil, granted, err
	}
	if lv == nil || lv.Lease == nil || !lv.Effective || lv.Status != lease.LeaseActive {
		return nil, granted, lease.Errorf(lease.CodeLeaseNotActive, "the lease was not granted (%s)", granted.Env().Status)
	}
	h := newHold(s, clk, policy, req.OnLost, HeldLease{Goal: goal, Todo: lv.TodoID, Owner: lv.Owner,
		IdempotencyKey: lv.IdempotencyKey, Version: lv.Version, Epoch: lv.Epoch, WriteScopes: lv.WriteScopes,
		ExpiresAt: lv.ExpiresAt, Generated: generated, Adopted: granted.Env().Operation == lease.OpLeaseRenew}, a.TTLSeconds, sent)
	h.src = s
	if req.Wait.Poll != nil {
		h.poll = *req.Wait.Poll
	}
	return h.start(), granted, nil
}

// NewExecutionKey returns a fresh idempotency key for a new execution:
// "run-" and 16 random hex digits (64 bits: two runs never pick the same).
func NewExecutionKey() string {
	return fmt.Sprintf("run-%016x", rand.Uint64())
}

// adoptExecution answers an acquire refused as idempotency_key_reuse
// (refusal): when the todo's current lease is the owner's execution of
// this key, active and effective, and the request's write scopes are none
// or the lease's, it is renewed at once with the request's TTL (its
// version as read: a renewal in between is a version_mismatch, and the
// refusal stands). Otherwise the refusal is returned, explained when the
// scopes are what stopped it.
func adoptExecution(s holdOps, a lease.AcquireRequest, refusal *lease.Error) (*loopx.Result[lease.LeaseResult], error) {
	if a.Owner == "" {
		return nil, refusal
	}
	res, err := s.Inspect(a.Goal, a.Todo)
	if err != nil {
		return nil, refusal
	}
	lv := res.Data.Lease
	if lv == nil || lv.Lease == nil || lv.Owner != a.Owner || lv.IdempotencyKey != a.IdempotencyKey {
		return nil, refusal
	}
	if lv.Status != lease.LeaseActive || !lv.Effective {
		e := *refusal
		e.Message += fmt.Sprintf("; execution %s of %s is not current (%s, effective %v): a new execution needs a new key, or none",
			a.IdempotencyKey, a.Owner, lv.Status, lv.Effective)
		return nil, &e
	}
	if len(a.WriteScopes) > 0 && !sameScopes(a.WriteScopes, lv.WriteScopes) {
		e := *refusal
		e.Message += fmt.Sprintf("; execution %s of %s holds the lease with write scopes %q, not the %q asked for: give the same scopes, or none, to adopt it",
			a.IdempotencyKey, a.Owner, lv.WriteScopes, a.WriteScopes)
		return nil, (&e).With("current_lease", lv)
	}
	v := lv.Version
	return s.Renew(lease.RenewRequest{Goal: a.Goal, Todo: a.Todo, Owner: a.Owner, IdempotencyKey: a.IdempotencyKey,
		ExpectedVersion: &v, TTLSeconds: a.TTLSeconds})
}

// sameScopes reports whether two scope sets are equal as sets.
func sameScopes(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// waitIf decides attempt once, or with a wait timeout waits while it is
// refused for a waitable reason (waitFor).
func waitIf[T any](ctx context.Context, s Store, goal string, w WaitOptions, attempt func() (*loopx.Result[T], error)) (*loopx.Result[T], error) {
	if w.Timeout > 0 {
		return waitFor(ctx, s, goal, w, attempt, waitRefused, nil)
	}
	return attempt()
}

func newHold(ops holdOps, clk clock.Clock, policy HoldPolicy, onLost func(*lease.Error), cur HeldLease, ttl int64, lastOK time.Time) *Hold {
	h := &Hold{ops: ops, clk: clk, rnd: rand.Float64, policy: policy, ttl: ttl, onLost: onLost, poll: DefaultPollPolicy,
		x: execution{owner: cur.Owner, key: cur.IdempotencyKey, epoch: cur.Epoch}, cur: cur, lastOK: lastOK,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	return h
}

// start starts renewing.
func (h *Hold) start() *Hold {
	go h.loop()
	return h
}

// Lease is the held lease as last known.
func (h *Hold) Lease() HeldLease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// Renewals counts the successful renewals so far.
func (h *Hold) Renewals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewals
}

// Lost is closed when the lease is lost.
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// LostErr says why the lease was lost (nil while it is held).
func (h *Hold) LostErr() *lease.Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr
}

// Stop stops renewing and waits for a renewal in flight to finish. The
// lease stays as it is (it expires unless released).
func (h *Hold) Stop() HeldLease {
	h.stopped.Do(func() { close(h.stop) })
	<-h.done
	return h.Lease()
}

func (h *Hold) lose(e *lease.Error) {
	h.mu.Lock()
	if h.lostErr != nil {
		h.mu.Unlock()
		return
	}
	cur := h.cur
	e = lostError(e, cur)
	h.lostErr = e
	h.mu.Unlock()
	if h.onLost != nil {
		h.onLost(e)
	}
	close(h.lost)
}

// lostError is cause as the reason a held lease was lost.
func lostError(cause *lease.Error, cur HeldLease) *lease.Error {
	e := &lease.Error{Code: cause.Code, Message: "lease lost: " + cause.Message}
	for k, v := range cause.Details {
		e = e.With(k, v)
	}
	return e.With("goal_id", cur.Goal).With("todo_id", cur.Todo).With("owner", cur.Owner).
		With("idempotency_key", cur.IdempotencyKey).With("lost_epoch", cur.Epoch).With("lost_version", cur.Version)
}

type renewReply struct {
	res *loopx.Result[lease.LeaseResult]
	err error
}

func (h *Hold) adopt(lv *lease.LeaseView, sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.Version, h.cur.ExpiresAt = lv.Version, lv.ExpiresAt
	if !sent.IsZero() {
		h.lastOK = sent
		h.renewals++
	}
}

// sleep waits until at on the clock, or until the watch sees the lease
// is no longer this execution (then the renewal is made at once); false
// when stopped first.
func (h *Hold) sleep(at time.Time) bool {
	for {
		d := at.Sub(h.clk.Now())
		if d <= 0 {
			select {
			case <-h.stop:
				return false
			default:
				return true
			}
		}
		t := h.clk.NewTimer(d)
		var changed <-chan struct{}
		var tick clock.Timer
		var tickC <-chan time.Time
		if h.src != nil {
			if h.watch != nil {
				changed = h.watch.Changed()
			}
			tick = h.clk.NewTimer(h.watchEvery())
			tickC = tick.C()
		}
		stopped, due := false, false
		select {
		case <-h.stop:
			stopped = true
		case <-t.C():
			due = true
		case <-changed:
		case <-tickC:
		}
		t.Stop()
		if tick != nil {
			tick.Stop()
		}
		switch {
		case stopped:
			return false
		case due:
			return true
		case !h.leaseStillOurs():
			return true
		}
	}
}

// watchEvery is how often the holder looks at the head between renewals:
// the server's every Poll; the local ref as a fallback to notifications.
func (h *Hold) watchEvery() time.Duration {
	switch {
	case h.src.PollsRemote():
		if h.policy.Poll > 0 {
			return h.policy.Poll
		}
		return DefaultHoldPoll(time.Duration(h.ttl) * time.Second)
	case h.watch != nil && h.watch.Native():
		return h.poll.Local
	}
	return h.poll.LocalNoNotify
}

// startWatch begins watching the store (nothing without a source).
func (h *Hold) startWatch() {
	if h.src == nil {
		return
	}
	if !h.src.PollsRemote() {
		h.watch = h.src.WatchRef()
	}
	h.head, h.headOK = h.probe()
}

func (h *Hold) probe() (gitstore.Hash, bool) {
	hd, err := h.src.ProbeHead(context.Background())
	return hd, err == nil
}

// leaseStillOurs reads the head and, when it moved, the lease: false when
// the lease is seen to be no longer this execution, active and effective.
// A newer version of this execution is adopted. A read that fails says
// nothing: the renewals decide.
func (h *Hold) leaseStillOurs() bool {
	hd, ok := h.probe()
	if !ok || (h.headOK && hd == h.head) {
		return true
	}
	h.head, h.headOK = hd, true
	cur := h.Lease()
	lv, err := h.current(cur)
	if err != nil {
		return true
	}
	if !h.x.ours(lv) {
		return false
	}
	if lv.Version > cur.Version {
		h.adopt(lv, time.Time{})
	}
	return true
}

// loop renews until stopped or lost (see the file comment).
func (h *Hold) loop() {
	defer close(h.done)
	h.startWatch()
	if h.watch != nil {
		defer h.watch.Close()
	}
	h.mu.Lock()
	next := h.policy.renewAt(h.lastOK, h.rnd())
	h.mu.Unlock()
	var lastErr error
	for {
		if !h.sleep(next) {
			return
		}
		h.mu.Lock()
		cur, lastOK := h.cur, h.lastOK
		h.mu.Unlock()
		deadline := h.policy.deadline(lastOK)
		sent := h.clk.Now()
		if !sent.Before(deadline) {
			h.lose(deadlineError(h.policy, lastErr))
			return
		}
		ch := make(chan renewReply, 1)
		go func() {
			v := cur.Version
			res, err := h.ops.Renew(lease.RenewRequest{Goal: cur.Goal, Todo: cur.Todo, Owner: cur.Owner,
				IdempotencyKey: cur.IdempotencyKey, ExpectedVersion: &v, TTLSeconds: h.ttl})
			ch <- renewReply{res, err}
		}()
		var rep renewReply
		guard := h.clk.NewTimer(deadline.Sub(sent))
		select {
		case rep = <-ch:
			guard.Stop()
		case <-guard.C():
			h.lose(deadlineError(h.policy, lastErr))
			rep = <-ch // the store is the caller's again only after this call
			if act, _ := classifyRenew(rep.res, rep.err, h.x); act == actRenewed {
				h.adopt(rep.res.Data.Lease, time.Time{})
			}
			return
		case <-h.stop:
			guard.Stop()
			rep = <-ch
			if act, _ := classifyRenew(rep.res, rep.err, h.x); act == actRenewed {
				h.adopt(rep.res.Data.Lease, sent)
			}
			return
		}
		act, refusal := classifyRenew(rep.res, rep.err, h.x)
		switch act {
		case actRenewed:
			h.adopt(rep.res.Data.Lease, sent)
			lastErr = nil
			next = h.policy.renewAt(sent, h.rnd())
		case actRetry:
			lastErr = rep.err
			next = h.policy.retryAt(h.clk.Now(), lastOK, h.rnd())
		case actResync:
			lv, err := h.current(cur)
			switch {
			case err != nil:
				lastErr = err
				next = h.policy.retryAt(h.clk.Now(), lastOK, h.rnd())
			case h.x.ours(lv):
				h.adopt(lv, time.Time{}) // a newer version of this execution: renew with it at once
				next = h.clk.Now()
			default:
				h.lose(refusal.With("current_lease", lv))
				return
			}
		case actLost:
			h.lose(refusal)
			return
		}
	}
}

// current reads the todo's current lease (for a version_mismatch).
func (h *Hold) current(cur HeldLease) (*lease.LeaseView, error) {
	res, err := h.ops.Inspect(cur.Goal, cur.Todo)
	if err != nil {
		return nil, err
	}
	return res.Data.Lease, nil
}

// deadlineError is the loss when no renewal succeeded in time.
func deadlineError(p HoldPolicy, last error) *lease.Error {
	e := lease.Errorf(lease.CodeLeaseNotActive, "no renewal succeeded within the renew deadline (%v)", p.RenewDeadline)
	if last != nil {
		e.Message += fmt.Sprintf("; last error: %v", last)
		if le, ok := lease.AsError(last); ok {
			e = e.With("last_error_code", le.Code)
		}
	}
	return e.With("renew_deadline_ms", p.RenewDeadline.Milliseconds())
}

// Release stops renewing and releases the lease with its current version.
// Transient failures are retried with the same arguments until the lease
// would have expired; a version_mismatch adopts a newer version of this
// execution, as renewals do.
func (h *Hold) Release() (*loopx.Result[lease.LeaseResult], error) {
	h.Stop()
	return finish(h, func(cur HeldLease) (*loopx.Result[lease.LeaseResult], error) {
		v := cur.Version
		return h.ops.Release(lease.ReleaseRequest{Goal: cur.Goal, Todo: cur.Todo, Owner: cur.Owner,
			IdempotencyKey: cur.IdempotencyKey, ExpectedVersion: &v})
	})
}

// Complete stops renewing and completes the todo with the lease proof,
// which releases the lease in the same commit (retries as Release).
func (h *Hold) Complete(evidence []string, note string) (*loopx.Result[lease.TodoResult], error) {
	h.Stop()
	return finish(h, func(cur HeldLease) (*loopx.Result[lease.TodoResult], error) {
		return h.ops.Complete(lease.CompleteRequest{Goal: cur.Goal, Todo: cur.Todo, Actor: cur.Owner,
			Evidence: evidence, Note: note, Proof: &lease.Proof{IdempotencyKey: cur.IdempotencyKey, ExpectedVersion: cur.Version}})
	})
}

// finish runs a final operation of h with the lease proof.
func finish[T any](h *Hold, call func(HeldLease) (*loopx.Result[T], error)) (*loopx.Result[T], error) {
	resynced := false
	for {
		h.mu.Lock()
		cur, lastOK := h.cur, h.lastOK
		h.mu.Unlock()
		res, err := call(cur)
		if err == nil {
			return res, nil
		}
		le, ok := lease.AsError(err)
		switch {
		case ok && le.Code == lease.CodeVersionMismatch && !resynced:
			resynced = true
			lv, ierr := h.current(cur)
			if ierr != nil || !h.x.ours(lv) || lv.Version == cur.Version {
				return res, err
			}
			h.adopt(lv, time.Time{})
		case !ok || lease.ClassOf(le.Code) == lease.Transient:
			expiry := lastOK.Add(time.Duration(h.ttl) * time.Second)
			at := h.clk.Now().Add(h.policy.period(h.policy.RetryPeriod, h.rnd()))
			if !at.Before(expiry) {
				return res, err
			}
			_ = clock.SleepUntil(context.Background(), h.clk, at)
			if !h.clk.Now().Before(expiry) {
				return res, err
			}
		default:
			return res, err
		}
	}
}
