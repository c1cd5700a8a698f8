package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// A holder watches the store between renewals (against the fake clock of
// hold_test.go): when the head moved and the lease is no longer this
// execution, it renews at once, and the refusal is the loss; a newer
// version of this execution is adopted; an unmoved head reads nothing.

// holdSrc is a store's head as a holder sees it.
type holdSrc struct {
	remote bool
	watch  *fakeWatch
	mu     sync.Mutex
	head   gitstore.Hash
	probes int
}

func newHoldSrc(remote bool) *holdSrc {
	return &holdSrc{remote: remote, head: gitstore.Hash{1}, watch: &fakeWatch{c: make(chan struct{}, 1), native: true}}
}

func (s *holdSrc) ProbeHead(context.Context) (gitstore.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probes++
	return s.head, nil
}
func (s *holdSrc) PollsRemote() bool          { return s.remote }
func (s *holdSrc) WatchRef() gitstore.Watcher { return s.watch }

func (s *holdSrc) move(b byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.head = gitstore.Hash{b}
}

// Locally: a notification 2s into a 10s renewal period; the lease is
// agent-b's now: the renewal is made at once and its refusal is the loss.
func TestHoldNoticesATakeoverOnANotifiedRefChange(t *testing.T) {
	src := newHoldSrc(false)
	f := newWatchedHoldFix(t, src)
	f.after(10 * time.Second) // the renewal
	f.after(time.Second)      // the fallback read
	f.clk.Step(time.Second)
	f.after(9 * time.Second) // nothing moved: no lease read, the rest of the period
	f.after(time.Second)
	f.clk.Step(time.Second)
	f.after(8 * time.Second)
	f.after(time.Second)
	src.move(2)
	src.watch.c <- struct{}{}
	f.expect("inspect", 0).reply <- renewReply{res: leaseRes("agent-b", "kb", 3, 5, true)}
	f.after(18 * time.Second) // the deadline guard: the renewal is made now, at 2s
	f.expect("renew", 1).reply <- refused(lease.CodeVersionMismatch)
	f.expect("inspect", 0).reply <- renewReply{res: leaseRes("agent-b", "kb", 3, 5, true)}
	e := f.lost()
	if e.Code != lease.CodeVersionMismatch || !f.clk.Now().Equal(holdT0.Add(2*time.Second)) {
		t.Fatalf("lost with %v at %v", e, f.clk.Now().Sub(holdT0))
	}
	if !src.watch.closedSoon() {
		t.Fatal("the watch was left open")
	}
}

// With a remote: the server's head is polled every Poll (3s here); the
// first poll finds it unmoved (no lease read), the second moved: the lease
// is read, still this execution at a newer version (the work used the
// proof), which is adopted: the scheduled renewal uses it.
func TestHoldPollsTheServerAndAdoptsANewerVersion(t *testing.T) {
	src := newHoldSrc(true)
	f := newWatchedHoldFix(t, src)
	f.after(10 * time.Second)
	f.after(3 * time.Second)
	f.clk.Step(3 * time.Second)
	f.after(7 * time.Second)
	f.after(3 * time.Second)
	src.move(2)
	f.clk.Step(3 * time.Second)
	f.expect("inspect", 0).reply <- ours(4)
	f.after(4 * time.Second)
	f.after(3 * time.Second)
	f.clk.Step(3 * time.Second)
	f.after(time.Second)
	f.after(3 * time.Second)
	f.clk.Step(time.Second)
	f.after(10 * time.Second) // the deadline guard
	f.expect("renew", 4).reply <- ours(5)
	f.notLost()
	// The loop takes the renewal's answer on its own goroutine.
	for deadline := time.Now().Add(5 * time.Second); f.h.Lease().Version != 5 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if l := f.h.Lease(); l.Version != 5 {
		t.Fatalf("version %d, want 5", l.Version)
	}
	if src.probes != 4 { // at the start and at 3s, 6s and 9s
		t.Fatalf("%d polls, want 4", src.probes)
	}
}
