package loopx_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// BenchmarkSigning measures what signing adds to a mutation: todo adds
// (state and board commits; only the state commit is signed) and renews,
// in a store that does not require signatures with no key, and in one
// that requires them with the agent's key in a file.
func BenchmarkSigning(b *testing.B) {
	for _, op := range []string{"todo-add", "renew"} {
		for _, signed := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/signed=%v", op, signed), func(b *testing.B) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				dir := fixture.BenchDir(b)
				keyPath, pub := fixture.BenchKey(b, b.TempDir())
				opts := lx.Options{Dir: dir, Now: func() time.Time { return clock }}
				if signed {
					opts.SigningKey = keyPath
				} else {
					pub = ""
				}
				if _, err := lx.Init(opts, fixture.SignedInit(signed, "agent-a", pub)); err != nil {
					b.Fatal(err)
				}
				s, err := lx.Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				for _, req := range []any{
					lease.GoalCreateRequest{Goal: "g"},
					lease.RegisterRequest{Goal: "g", Agent: "agent-a", SigningKey: pub},
					lease.AddRequest{Goal: "g", Actor: "agent-a", Todo: "todo_bench", Text: "bench"},
					lease.AcquireRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 86400},
				} {
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
				version := int64(1)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					clock = clock.Add(time.Second)
					var req any = lease.AddRequest{Goal: "g", Actor: "agent-a", Todo: fmt.Sprintf("todo_add_%07d", i), Text: "added"}
					if op == "renew" {
						v := version
						req = lease.RenewRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &v, TTLSeconds: 86400}
						version++
					}
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSignCommit isolates what signing adds to one decision: the
// signer rule (lease.CommitSigner on the head) and an ed25519 signature of
// a commit object, the key resolved once per Store as in a mutation.
func BenchmarkSignCommit(b *testing.B) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := fixture.BenchDir(b)
	keyPath, pub := fixture.BenchKey(b, b.TempDir())
	opts := lx.Options{Dir: dir, Now: func() time.Time { return clock }, SigningKey: keyPath}
	if _, err := lx.Init(opts, fixture.SignedInit(true, "agent-a", pub)); err != nil {
		b.Fatal(err)
	}
	s, err := lx.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, req := range []any{
		lease.GoalCreateRequest{Goal: "g"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-a", SigningKey: pub},
	} {
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			b.Fatal(err)
		}
	}
	head, _ := s.Git().Head()
	sn, err := s.Repo().Snapshot(head)
	if err != nil {
		b.Fatal(err)
	}
	call := lease.CallOf(lease.RenewRequest{Goal: "g", Todo: "todo_x", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60})
	out := &lease.Outcome{Operation: lease.OpLeaseRenew, Goal: "g", Todo: "todo_x", Actor: "agent-a"}
	payload := bytes.Repeat([]byte("tree 0123456789012345678901234567890123456789\n"), 14)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sign, err := s.CommitSigner(sn, call, out)
		if err != nil || sign == nil {
			b.Fatalf("no signer: %v", err)
		}
		if _, err := sign(payload); err != nil {
			b.Fatal(err)
		}
	}
}
