package derived_test

import (
	"testing"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// A retry whose receipt left the lease record is answered from history,
// also when the commit that applied it is below what the per-todo log
// index names; a request never decided is refused as before.
func TestArchivedReceiptBelowTheLogIndex(t *testing.T) {
	f := fixture.NewMem(t, loopx.Options{Derived: derived.Config{LogIndexKeep: 2}}, "agent-a")
	s := f.S
	do := func(req any) *loopx.Result[any] { t.Helper(); return f.Do(s, req) }
	v := func(n int64) *int64 { return &n }
	for _, id := range []string{"todo_aaa", "todo_bbb"} {
		do(lease.AddRequest{Goal: "g", Todo: id, Text: id, Actor: "agent-a"})
	}
	do(lease.AcquireRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(0), TTLSeconds: 600})
	first := lease.RenewRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(1), TTLSeconds: 600}
	applied := do(first)
	for i := int64(2); i <= 5; i++ {
		do(lease.AcquireRequest{Goal: "g", Todo: "todo_bbb", Owner: "agent-a", IdempotencyKey: "b" + string(rune('0'+i)), ExpectedVersion: v(i - 2), TTLSeconds: 600})
		do(lease.ReleaseRequest{Goal: "g", Todo: "todo_bbb", Owner: "agent-a", IdempotencyKey: "b" + string(rune('0'+i)), ExpectedVersion: v(i - 1)})
		do(lease.RenewRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(i), TTLSeconds: 600})
	}
	do(lease.ReleaseRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(6)})
	do(lease.AcquireRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k2", ExpectedVersion: v(6), TTLSeconds: 600})

	res := do(first)
	if res.Status != lease.StatusReplayed || res.Revision != applied.Revision {
		t.Fatalf("retry: %s at %s, want replayed at %s", res.Status, res.Revision, applied.Revision)
	}
	other := first
	other.TTLSeconds = 60
	if _, err := s.Apply(lease.CallOf(other)); !hasCode(err, lease.CodeIdempotencyKeyReuse) {
		t.Fatalf("other TTL: %v", err)
	}
	// k2's execution never was at version 2: the walk stops at its epoch.
	never := lease.RenewRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k2", ExpectedVersion: v(2), TTLSeconds: 600}
	if _, err := s.Apply(lease.CallOf(never)); !hasCode(err, lease.CodeVersionMismatch) {
		t.Fatalf("never decided: %v", err)
	}
}

func hasCode(err error, code lease.Code) bool {
	e, ok := lease.AsError(err)
	return ok && e.Code == code
}
