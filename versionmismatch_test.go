package loopx_test

import (
	"context"
	"testing"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// TestVersionMismatchCarriesCursor: every version_mismatch a mutation meets
// (a lease proof, an acquire's expected version, a todo mutation's proof)
// carries current_cursor, the position of the revision it was decided on,
// as a result's current_cursor is that of its head (seed 000: a version
// conflict exposes provider, revision and cursor).
func TestVersionMismatchCarriesCursor(t *testing.T) {
	t.Parallel()
	f := fixture.NewMem(t, lx.Options{}, "agent-a", "agent-b")
	f.Do(f.S, lease.AddRequest{Goal: "g", Todo: "todo_work", Text: "work"})
	f.Do(f.S, lease.AddRequest{Goal: "g", Todo: "todo_free", Text: "free"})
	f.Do(f.S, lease.AcquireRequest{Goal: "g", Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "k1", TTLSeconds: 600})
	v := func(n int64) *int64 { return &n }
	proof := &lease.Proof{IdempotencyKey: "k1", ExpectedVersion: 4}
	for _, c := range []struct {
		name string
		req  any
	}{
		{"renew", lease.RenewRequest{Goal: "g", Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(4), TTLSeconds: 600}},
		{"transfer", lease.TransferRequest{Goal: "g", Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(4),
			NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 600}},
		{"release", lease.ReleaseRequest{Goal: "g", Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: v(4)}},
		{"release of a missing lease", lease.ReleaseRequest{Goal: "g", Todo: "todo_free", Owner: "agent-a", IdempotencyKey: "k9", ExpectedVersion: v(2)}},
		{"acquire", lease.AcquireRequest{Goal: "g", Todo: "todo_free", Owner: "agent-b", IdempotencyKey: "k3", ExpectedVersion: v(2), TTLSeconds: 600}},
		{"update", lease.UpdateRequest{Goal: "g", Todo: "todo_work", Actor: "agent-a", Note: "n", Proof: proof}},
		{"complete", lease.CompleteRequest{Goal: "g", Todo: "todo_work", Actor: "agent-a", Proof: proof}},
	} {
		t.Run(c.name, func(t *testing.T) {
			head, err := f.Repo.Head(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.Repo.Depth(head)
			if err != nil || want < 5 {
				t.Fatalf("depth %d, %v", want, err)
			}
			_, err = f.Open().Apply(lease.CallOf(c.req))
			e, ok := lease.AsError(err)
			if !ok || e.Code != lease.CodeVersionMismatch {
				t.Fatalf("got %v, want version_mismatch", err)
			}
			if e.Details["revision"] != head.String() || e.Details["current_cursor"] != want || e.Details["provider"] != "git" {
				t.Fatalf("details %v, want revision %s and current_cursor %d", e.Details, head, want)
			}
			if h, _ := f.Repo.Head(context.Background()); h != head {
				t.Fatalf("the refusal moved the head")
			}
		})
	}
}
