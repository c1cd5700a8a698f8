package lease

import (
	"testing"
	"time"
)

func TestExecutionTTL(t *testing.T) {
	for _, c := range []struct {
		name string
		l    Lease
		want time.Duration
	}{
		{"acquired, never renewed", Lease{AcquiredAt: tlAt(0), ExpiresAt: tlAt(600)}, 600 * time.Second},
		{"renewed after the grant", Lease{AcquiredAt: tlAt(0), RenewedAt: ptrTime(tlAt(100)), ExpiresAt: tlAt(400)}, 300 * time.Second},
		// A renewal recorded before the current execution's grant (a
		// record that kept an older execution's renewed_at) does not count.
		{"renewal older than the grant", Lease{AcquiredAt: tlAt(500), RenewedAt: ptrTime(tlAt(100)), ExpiresAt: tlAt(560)}, 60 * time.Second},
		{"renewed at the grant", Lease{AcquiredAt: tlAt(10), RenewedAt: ptrTime(tlAt(10)), ExpiresAt: tlAt(70)}, 60 * time.Second},
		{"expiry before the grant", Lease{AcquiredAt: tlAt(100), ExpiresAt: tlAt(40)}, -60 * time.Second},
	} {
		if got := ExecutionTTL(&c.l); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestRenewBoardChangedOnlyForAnotherTTL: the board shows an active
// lease's TTL, so a renewal changes the board exactly when it asks for
// another TTL than the execution was last granted.
func TestRenewBoardChangedOnlyForAnotherTTL(t *testing.T) {
	f := newHeldFix(t, HandoffSoftClaim) // acquired at 0 for 600 s, version 1
	version := int64(1)
	for _, c := range []struct {
		at    int
		ttl   int64
		board bool
	}{
		{100, 600, false}, // same TTL as the grant
		{200, 600, false}, // again
		{300, 900, true},  // longer
		{400, 900, false}, // the new length, kept
		{500, 30, true},   // shorter
		{510, 30, false},
	} {
		now := tlAt(c.at)
		req := RenewRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(version), TTLSeconds: c.ttl}
		o, err := f.run(now, func(v *View) (*Outcome, error) { return Renew(v, req, now) })
		if err != nil {
			t.Fatalf("renew at %d for %d s: %v", c.at, c.ttl, err)
		}
		if o.BoardChanged != c.board {
			t.Errorf("renew at %d for %d s: BoardChanged %v, want %v", c.at, c.ttl, o.BoardChanged, c.board)
		}
		if got := ExecutionTTL(f.lease("todo_aaa")); got != time.Duration(c.ttl)*time.Second {
			t.Errorf("renew at %d for %d s: the execution's TTL is %v", c.at, c.ttl, got)
		}
		version = o.Version
	}
}
