package agent

import (
	"sync"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/lease"
)

// The renewal loop against a fake clock and fake store operations: every
// timer the loop starts is reported to the test (clock.Fake's NextTimer),
// which moves the clock, and every store call waits for the test's reply.
// Nothing sleeps: the only real-time waits are guards against a hung test.

const guard = 5 * time.Second

type fakeCall struct {
	op      string
	version int64 // the expected version (renew, release, complete)
	reply   chan renewReply
}

type fakeOps struct{ calls chan fakeCall }

func (f *fakeOps) call(op string, v int64) (*loopx.Result[lease.LeaseResult], error) {
	c := fakeCall{op: op, version: v, reply: make(chan renewReply)}
	f.calls <- c
	r := <-c.reply
	return r.res, r.err
}

func (f *fakeOps) Renew(r lease.RenewRequest) (*loopx.Result[lease.LeaseResult], error) {
	return f.call("renew", *r.ExpectedVersion)
}
func (f *fakeOps) Release(r lease.ReleaseRequest) (*loopx.Result[lease.LeaseResult], error) {
	return f.call("release", *r.ExpectedVersion)
}
func (f *fakeOps) Complete(r lease.CompleteRequest) (*loopx.Result[lease.TodoResult], error) {
	res, err := f.call("complete", r.Proof.ExpectedVersion)
	if res == nil {
		return nil, err
	}
	return &loopx.Result[lease.TodoResult]{Envelope: res.Envelope, Data: lease.TodoResult{GoalID: res.Data.GoalID, Lease: res.Data.Lease}}, err
}
func (f *fakeOps) Inspect(goal, todo string) (*loopx.Result[lease.LeaseResult], error) {
	return f.call("inspect", 0)
}

var holdT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// holdFix is a Hold on todo_work by agent-a (key k1, epoch 2, version 1),
// TTL 30s: renew every 10s, retry every 2s, deadline 20s, no jitter.
type holdFix struct {
	t      *testing.T
	clk    *clock.Fake
	ops    *fakeOps
	h      *Hold
	lostMu sync.Mutex
	losts  []*lease.Error
}

func newHoldFix(t *testing.T) *holdFix { return newWatchedHoldFix(t, nil) }

// newWatchedHoldFix is newHoldFix watching src between renewals (nil: not
// watching), with testPoll's fallback reads.
func newWatchedHoldFix(t *testing.T, src headSource) *holdFix {
	f := &holdFix{t: t, clk: clock.NewFake(holdT0), ops: &fakeOps{calls: make(chan fakeCall)}}
	p := HoldPolicy{RenewEvery: 10 * time.Second, RetryPeriod: 2 * time.Second, RenewDeadline: 20 * time.Second}
	cur := HeldLease{Goal: "g", Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "k1", Version: 1, Epoch: 2}
	f.h = newHold(f.ops, f.clk, p, func(e *lease.Error) {
		f.lostMu.Lock()
		f.losts = append(f.losts, e)
		f.lostMu.Unlock()
	}, cur, 30, holdT0)
	f.h.rnd = func() float64 { return 0 }
	if src != nil {
		f.h.src, f.h.poll = src, testPoll
		f.h.policy.Poll = 3 * time.Second
	}
	f.h.start()
	t.Cleanup(func() {
		go func() { // answer whatever a stopping loop still asks
			for c := range f.ops.calls {
				c.reply <- renewReply{err: lease.Errorf(lease.CodeStoreBusy, "test over")}
			}
		}()
		f.h.Stop()
	})
	return f
}

// after expects the loop to start a timer of d.
func (f *holdFix) after(d time.Duration) {
	f.t.Helper()
	got, ok := f.clk.NextTimer(guard)
	if !ok {
		f.t.Fatalf("no timer started (want %v)", d)
	}
	if got != d {
		f.t.Fatalf("timer of %v, want %v", got, d)
	}
}

// expect expects a store call.
func (f *holdFix) expect(op string, version int64) fakeCall {
	f.t.Helper()
	select {
	case c := <-f.ops.calls:
		if c.op != op || (op != "inspect" && c.version != version) {
			f.t.Fatalf("call %s v%d, want %s v%d", c.op, c.version, op, version)
		}
		return c
	case <-time.After(guard):
		f.t.Fatalf("no %s call", op)
	}
	return fakeCall{}
}

// leaseRes is a lease result: this execution (or another) at version v.
func leaseRes(owner, key string, epoch, v int64, effective bool) *loopx.Result[lease.LeaseResult] {
	return &loopx.Result[lease.LeaseResult]{Envelope: loopx.Envelope{Status: lease.StatusApplied}, Data: lease.LeaseResult{GoalID: "g", TodoID: "todo_work",
		Lease: &lease.LeaseView{Lease: &lease.Lease{TodoID: "todo_work", Owner: owner, IdempotencyKey: key,
			Epoch: epoch, Version: v, Status: lease.LeaseActive}, Effective: effective}}}
}

func ours(v int64) renewReply { return renewReply{res: leaseRes("agent-a", "k1", 2, v, true)} }

func refused(code lease.Code) renewReply {
	return renewReply{err: lease.Errorf(code, "refused: %s", code)}
}

// renewAt advances to the next renewal (the loop sleeps d first) and
// expects the renewal at version v.
func (f *holdFix) renewAfter(d time.Duration, deadlineIn time.Duration, v int64) fakeCall {
	f.t.Helper()
	f.after(d)
	f.clk.Step(d)
	f.after(deadlineIn) // the deadline guard while the renewal is in flight
	return f.expect("renew", v)
}

func (f *holdFix) lost() *lease.Error {
	f.t.Helper()
	select {
	case <-f.h.Lost():
	case <-time.After(guard):
		f.t.Fatal("the lease was not lost")
	}
	f.lostMu.Lock()
	defer f.lostMu.Unlock()
	if len(f.losts) != 1 {
		f.t.Fatalf("OnLost ran %d times", len(f.losts))
	}
	if f.h.LostErr() != f.losts[0] {
		f.t.Fatal("LostErr differs from what OnLost got")
	}
	return f.losts[0]
}

func (f *holdFix) notLost() {
	f.t.Helper()
	select {
	case <-f.h.Lost():
		f.t.Fatalf("lost: %v", f.h.LostErr())
	default:
	}
}

func TestHoldRenewsRetriesAndGivesUpAtTheDeadline(t *testing.T) {
	f := newHoldFix(t)
	// t0+10: renew at version 1 → version 2.
	f.renewAfter(10*time.Second, 10*time.Second, 1).reply <- ours(2)
	// t0+20: renew at 2 → transient; retried 2s later with the SAME version.
	f.renewAfter(10*time.Second, 10*time.Second, 2).reply <- refused(lease.CodeStoreBusy)
	// t0+22: the retry was applied but its answer is a replay: version 3.
	f.renewAfter(2*time.Second, 8*time.Second, 2).reply <- renewReply{res: &loopx.Result[lease.LeaseResult]{Envelope: loopx.Envelope{Status: lease.StatusReplayed},
		Data: leaseRes("agent-a", "k1", 2, 3, true).Data}}
	f.after(10 * time.Second) // the loop took the answer and sleeps until t0+32
	if l := f.h.Lease(); l.Version != 3 || l.Epoch != 2 {
		t.Fatalf("lease %+v, want v3 e2", l)
	}
	f.notLost()
	// t0+32..: every renewal fails transiently; the deadline is t0+22+20.
	f.clk.Step(10 * time.Second)
	f.after(10 * time.Second)
	f.expect("renew", 3).reply <- refused(lease.CodeRemoteUnavailable)
	for i, left := 0, 8*time.Second; left > 0; i, left = i+1, left-2*time.Second {
		f.renewAfter(2*time.Second, left, 3).reply <- refused(lease.CodeRemoteUnavailable)
		f.notLost()
	}
	// t0+42: the retry is due at the deadline itself: lost, no renewal sent.
	f.after(2 * time.Second)
	f.clk.Step(2 * time.Second)
	e := f.lost()
	// The loop has ended without sending anything (one that sent a
	// renewal would wait for its answer).
	select {
	case <-f.h.done:
	case c := <-f.ops.calls:
		c.reply <- refused(lease.CodeStoreBusy)
		t.Fatalf("a %s was sent at the deadline", c.op)
	case <-time.After(guard):
		t.Fatal("the loop did not end")
	}
	select {
	case c := <-f.ops.calls:
		c.reply <- refused(lease.CodeStoreBusy)
		t.Fatalf("a %s was sent at the deadline", c.op)
	default:
	}
	if e.Code != lease.CodeLeaseNotActive || e.Details["last_error_code"] != lease.CodeRemoteUnavailable {
		t.Fatalf("lost with %v %v", e.Code, e.Details)
	}
	if e.Details["lost_epoch"] != int64(2) || e.Details["lost_version"] != int64(3) || e.Details["todo_id"] != "todo_work" {
		t.Fatalf("details %v", e.Details)
	}
	if n := f.h.Renewals(); n != 2 {
		t.Fatalf("renewals %d, want 2", n)
	}
}

func TestHoldLosesOnRefusal(t *testing.T) {
	for _, code := range []lease.Code{lease.CodeAgentNotRegistered, lease.CodeLeaseNotActive,
		lease.CodeLeaseProofMismatch, lease.CodeClaimConflict, lease.CodeTodoNotOpen} {
		t.Run(string(code), func(t *testing.T) {
			f := newHoldFix(t)
			f.renewAfter(10*time.Second, 10*time.Second, 1).reply <- refused(code)
			if e := f.lost(); e.Code != code {
				t.Fatalf("lost with %s, want %s", e.Code, code)
			}
		})
	}
}

func TestHoldReplayOfAnotherExecutionIsALoss(t *testing.T) {
	f := newHoldFix(t)
	f.renewAfter(10*time.Second, 10*time.Second, 1).reply <- renewReply{res: leaseRes("agent-b", "kb", 3, 2, true)}
	if e := f.lost(); e.Code != lease.CodeExecutionNotCurrent {
		t.Fatalf("lost with %s", e.Code)
	}
}

func TestHoldVersionMismatch(t *testing.T) {
	t.Run("this execution moved on: adopt and renew at once", func(t *testing.T) {
		f := newHoldFix(t)
		f.renewAfter(10*time.Second, 10*time.Second, 1).reply <- refused(lease.CodeVersionMismatch)
		f.expect("inspect", 0).reply <- ours(4)
		f.after(10 * time.Second) // the deadline guard: no sleep before the renewal
		f.expect("renew", 4).reply <- ours(5)
		f.after(10 * time.Second)
		f.notLost()
		if l := f.h.Lease(); l.Version != 5 {
			t.Fatalf("version %d, want 5", l.Version)
		}
	})
	t.Run("taken over: lost with the refusal", func(t *testing.T) {
		f := newHoldFix(t)
		f.renewAfter(10*time.Second, 10*time.Second, 1).reply <- refused(lease.CodeVersionMismatch)
		f.expect("inspect", 0).reply <- renewReply{res: leaseRes("agent-b", "kb", 3, 2, true)}
		e := f.lost()
		if e.Code != lease.CodeVersionMismatch || e.Details["current_lease"] == nil {
			t.Fatalf("lost with %s %v", e.Code, e.Details)
		}
	})
	t.Run("this execution, but no longer effective", func(t *testing.T) {
		f := newHoldFix(t)
		f.renewAfter(10*time.Second, 10*time.Second, 1).reply <- refused(lease.CodeVersionMismatch)
		f.expect("inspect", 0).reply <- renewReply{res: leaseRes("agent-a", "k1", 2, 4, false)}
		if e := f.lost(); e.Code != lease.CodeVersionMismatch {
			t.Fatalf("lost with %s", e.Code)
		}
	})
}

func TestHoldDeadlineWhileARenewalHangs(t *testing.T) {
	f := newHoldFix(t)
	c := f.renewAfter(10*time.Second, 10*time.Second, 1)
	f.clk.Step(10 * time.Second) // t0+20: the deadline passes with the renewal in flight
	e := f.lost()
	if e.Code != lease.CodeLeaseNotActive {
		t.Fatalf("lost with %s", e.Code)
	}
	stopped := make(chan HeldLease)
	go func() { stopped <- f.h.Stop() }()
	<-f.h.stop         // Stop has been called (and must wait for the renewal in flight)
	c.reply <- ours(2) // it succeeded late: the version is known for the release
	if l := <-stopped; l.Version != 2 {
		t.Fatalf("version %d after the late renewal: Stop did not wait for it", l.Version)
	}
}

func TestHoldStopWaitsForTheRenewalInFlight(t *testing.T) {
	f := newHoldFix(t)
	c := f.renewAfter(10*time.Second, 10*time.Second, 1)
	stopped := make(chan HeldLease)
	go func() { stopped <- f.h.Stop() }()
	<-f.h.stop // Stop has been called
	c.reply <- ours(2)
	if l := <-stopped; l.Version != 2 {
		t.Fatalf("version %d: Stop did not wait for the renewal in flight", l.Version)
	}
	f.notLost()
}

func TestHoldReleaseRetriesAndAdopts(t *testing.T) {
	f := newHoldFix(t)
	f.after(10 * time.Second) // the loop sleeps; Release stops it
	done := make(chan error, 1)
	go func() { _, err := f.h.Release(); done <- err }()
	f.expect("release", 1).reply <- refused(lease.CodeStoreBusy)
	f.after(2 * time.Second)
	f.clk.Step(2 * time.Second)
	// The work used the proof meanwhile: version 3 of this execution.
	f.expect("release", 1).reply <- refused(lease.CodeVersionMismatch)
	f.expect("inspect", 0).reply <- ours(3)
	f.expect("release", 3).reply <- renewReply{res: &loopx.Result[lease.LeaseResult]{Envelope: loopx.Envelope{Status: lease.StatusApplied}}}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestHoldReleaseGivesUpAtExpiry(t *testing.T) {
	f := newHoldFix(t)
	f.after(10 * time.Second)
	done := make(chan error, 1)
	go func() { _, err := f.h.Release(); done <- err }()
	for i := 0; i < 14; i++ { // t0 .. t0+28, every 2s
		f.expect("release", 1).reply <- refused(lease.CodeRemoteUnavailable)
		f.after(2 * time.Second)
		f.clk.Step(2 * time.Second)
	}
	f.expect("release", 1).reply <- refused(lease.CodeRemoteUnavailable) // t0+28: the next would be at expiry
	if e, ok := lease.AsError(<-done); !ok || e.Code != lease.CodeRemoteUnavailable {
		t.Fatalf("release: %v", e)
	}
}

func TestHoldPolicy(t *testing.T) {
	cases := []struct {
		ttl                    time.Duration
		every, retry, deadline time.Duration
	}{
		{2 * time.Second, 666666666 * time.Nanosecond, 166666666 * time.Nanosecond, 1333333333 * time.Nanosecond},
		{time.Second, 333333333 * time.Nanosecond, 83333333 * time.Nanosecond, 666666666 * time.Nanosecond},
		{600 * time.Second, 200 * time.Second, 2 * time.Second, 400 * time.Second},
	}
	for _, c := range cases {
		p := DefaultHoldPolicy(c.ttl)
		if p.RenewEvery != c.every || p.RetryPeriod != c.retry || p.RenewDeadline != c.deadline || p.Jitter != 0.1 {
			t.Errorf("DefaultHoldPolicy(%v) = %+v", c.ttl, p)
		}
		if err := p.Check(c.ttl); err != nil {
			t.Errorf("DefaultHoldPolicy(%v): %v", c.ttl, err)
		}
	}
	bad := []HoldPolicy{
		{},
		{RenewEvery: 10 * time.Second, RetryPeriod: time.Second, RenewDeadline: 10 * time.Second},
		{RenewEvery: 10 * time.Second, RetryPeriod: time.Second, RenewDeadline: 30 * time.Second},
		{RenewEvery: 10 * time.Second, RetryPeriod: time.Second, RenewDeadline: 20 * time.Second, Jitter: 1},
		{RenewEvery: 10 * time.Second, RetryPeriod: time.Second, RenewDeadline: 20 * time.Second, Poll: -time.Second},
	}
	for _, p := range bad {
		if err := p.Check(30 * time.Second); err == nil {
			t.Errorf("Check(%+v) accepted", p)
		}
	}
	p := HoldPolicy{RenewEvery: 10 * time.Second, RetryPeriod: 2 * time.Second, RenewDeadline: 20 * time.Second, Jitter: 0.1}
	if got := p.renewAt(holdT0, 0); !got.Equal(holdT0.Add(10 * time.Second)) {
		t.Errorf("renewAt r=0: %v", got.Sub(holdT0))
	}
	if got := p.renewAt(holdT0, 0.999999); got.Sub(holdT0) <= 9*time.Second {
		t.Errorf("renewAt r≈1: %v, want > 9s (10%% jitter)", got.Sub(holdT0))
	}
	if got := p.retryAt(holdT0.Add(5*time.Second), holdT0, 0); !got.Equal(holdT0.Add(7 * time.Second)) {
		t.Errorf("retryAt: %v", got.Sub(holdT0))
	}
	if got := p.retryAt(holdT0.Add(19*time.Second), holdT0, 0); !got.Equal(holdT0.Add(20 * time.Second)) {
		t.Errorf("retryAt past the deadline: %v, want the deadline", got.Sub(holdT0))
	}
}

func TestClassifyRenew(t *testing.T) {
	x := execution{owner: "agent-a", key: "k1", epoch: 2}
	cases := []struct {
		name string
		res  *loopx.Result[lease.LeaseResult]
		err  error
		want renewAction
	}{
		{"renewed", leaseRes("agent-a", "k1", 2, 5, true), nil, actRenewed},
		{"another owner", leaseRes("agent-b", "k1", 2, 5, true), nil, actLost},
		{"another key", leaseRes("agent-a", "k2", 2, 5, true), nil, actLost},
		{"another epoch", leaseRes("agent-a", "k1", 3, 5, true), nil, actLost},
		{"not effective", leaseRes("agent-a", "k1", 2, 5, false), nil, actLost},
		{"no lease", &loopx.Result[lease.LeaseResult]{Data: lease.LeaseResult{}}, nil, actLost},
		{"store busy", nil, lease.Errorf(lease.CodeStoreBusy, "x"), actRetry},
		{"remote unavailable", nil, lease.Errorf(lease.CodeRemoteUnavailable, "x"), actRetry},
		{"store io", nil, lease.Errorf(lease.CodeStoreIO, "x"), actRetry},
		{"clock skew", nil, lease.Errorf(lease.CodeClockSkew, "x"), actRetry},
		{"plain error", nil, errString("disk on fire"), actRetry},
		{"version mismatch", nil, lease.Errorf(lease.CodeVersionMismatch, "x"), actResync},
		{"unregistered", nil, lease.Errorf(lease.CodeAgentNotRegistered, "x"), actLost},
		{"released by hand or expired", nil, lease.Errorf(lease.CodeLeaseNotActive, "x"), actLost},
		{"transferred key", nil, lease.Errorf(lease.CodeLeaseProofMismatch, "x"), actLost},
	}
	for _, c := range cases {
		if got, _ := classifyRenew(c.res, c.err, x); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestDefaultHoldPoll: a sixth of the TTL, within 2s..30s.
func TestDefaultHoldPoll(t *testing.T) {
	for _, c := range []struct{ ttl, want time.Duration }{
		{time.Second, 2 * time.Second},
		{12 * time.Second, 2 * time.Second},
		{30 * time.Second, 5 * time.Second},
		{60 * time.Second, 10 * time.Second},
		{180 * time.Second, 30 * time.Second},
		{3600 * time.Second, 30 * time.Second},
	} {
		if got := DefaultHoldPoll(c.ttl); got != c.want {
			t.Errorf("DefaultHoldPoll(%v) = %v, want %v", c.ttl, got, c.want)
		}
	}
}
