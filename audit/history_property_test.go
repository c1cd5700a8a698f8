package audit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// TestHistoryReverifies: random sequences of every operation (claims,
// leases with transfers and takeovers, closes, registrations, archiving),
// with the clock moving on by random steps, on an in-memory repository;
// then verify --history must hold for the whole history, and it must have
// re-decided exactly the state commits that were made.
func TestHistoryReverifies(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		repo := gitstore.NewMemRepo(gitstore.DefaultRetry)
		s := loopx.OpenRepo(repo, loopx.Options{Now: func() time.Time { return clock }})
		must := func(_ any, err error) {
			if err != nil {
				rt.Fatal(err)
			}
		}
		must(s.Apply(lease.CallOf(lease.InitRequest{FormatVersion: lease.FormatVersion})))
		must(s.CreateGoal(lease.GoalCreateRequest{Goal: "g", HandoffMode: rapid.SampledFrom([]string{lease.HandoffSoftClaim, lease.HandoffHardLease}).Draw(rt, "mode")}))
		for _, a := range []string{"agent-a", "agent-b"} {
			must(s.RegisterAgent(lease.RegisterRequest{Goal: "g", Agent: a}))
		}
		must(s.RegisterAgent(lease.RegisterRequest{Goal: "g", Agent: "lead", Role: lease.RoleOrchestrator, LifecycleAuthority: []string{"complete", "reassign", "update"}}))
		agents := []string{"agent-a", "agent-b", "lead"}
		todos := []string{"todo_aaa", "todo_bbb", "todo_ccc"}
		keys := map[string]int{}
		version := func(todo string) *int64 {
			res, err := s.Inspect("g", todo)
			if err != nil {
				return nil
			}
			v := int64(0)
			if lr := res.Data; lr.Lease != nil {
				v = lr.Lease.Version
			}
			return &v
		}
		holder := func(todo string) (string, string) {
			res, err := s.Inspect("g", todo)
			if err != nil {
				return "", ""
			}
			if lr := res.Data; lr.Lease != nil {
				return lr.Lease.Owner, lr.Lease.IdempotencyKey
			}
			return "", ""
		}
		steps := rapid.IntRange(5, 40).Draw(rt, "steps")
		for i := range steps {
			clock = clock.Add(time.Duration(rapid.IntRange(0, 400).Draw(rt, "dt")) * time.Second)
			todo := rapid.SampledFrom(todos).Draw(rt, "todo")
			agent := rapid.SampledFrom(agents).Draw(rt, "agent")
			var req any
			switch op := rapid.IntRange(0, 18).Draw(rt, "op"); op {
			case 16:
				req = lease.GoalArchiveRequest{Goal: "g", Actor: agent}
			case 17:
				req = lease.GoalUnarchiveRequest{Goal: "g", Actor: agent}
			case 18:
				// A clock that ran ahead: the next decisions are refused
				// (clock_skew) until the store's clock is reset, by the
				// one commit dated before its parent.
				clock = clock.Add(-time.Duration(rapid.IntRange(31, 900).Draw(rt, "back")) * time.Second)
				req = lease.ClockResetRequest{Actor: agent, Reason: "the clock ran ahead"}
			case 0, 1:
				req = lease.AddRequest{Goal: "g", Todo: todo, Text: "work on " + todo, Priority: rapid.SampledFrom(lease.Priorities).Draw(rt, "prio"),
					RequiredWriteScopes: []string{rapid.SampledFrom([]string{"src/**", "docs/**", "src/a/**"}).Draw(rt, "scope")}}
			case 2:
				req = lease.ClaimRequest{Goal: "g", Todo: todo, Actor: agent, ClaimTTLMinutes: int64(rapid.IntRange(0, 5).Draw(rt, "cttl"))}
			case 3:
				keys[agent]++
				req = lease.ReadyClaimRequest{Goal: "g", Actor: agent, LeaseKey: fmt.Sprintf("%s-r%d", agent, keys[agent]), LeaseTTLSeconds: 300}
			case 4, 5:
				keys[agent]++
				req = lease.AcquireRequest{Goal: "g", Todo: todo, Owner: agent, IdempotencyKey: fmt.Sprintf("%s-%d", agent, keys[agent]), TTLSeconds: int64(rapid.IntRange(60, 600).Draw(rt, "ttl"))}
			case 6:
				owner, key := holder(todo)
				req = lease.RenewRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: version(todo), TTLSeconds: 300}
			case 7, 8:
				owner, key := holder(todo)
				keys[agent]++
				req = lease.TransferRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: version(todo),
					NewOwner: agent, NewIdempotencyKey: fmt.Sprintf("%s-t%d", agent, keys[agent]), TTLSeconds: 300, TransferClaim: op == 8}
			case 9:
				owner, key := holder(todo)
				req = lease.ReleaseRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: version(todo)}
			case 10:
				req = lease.UpdateRequest{Goal: "g", Todo: todo, Actor: agent, Note: fmt.Sprintf("note %d", i)}
			case 11:
				owner, key := holder(todo)
				var proof *lease.Proof
				if v := version(todo); v != nil && owner == agent {
					proof = &lease.Proof{IdempotencyKey: key, ExpectedVersion: *v}
				}
				req = lease.CompleteRequest{Goal: "g", Todo: todo, Actor: agent, Evidence: []string{"done"}, Proof: proof}
			case 12:
				req = lease.SupersedeRequest{Goal: "g", Todo: todo, Actor: agent, Reason: "obsolete"}
			case 13:
				req = lease.UnregisterRequest{Goal: "g", Agent: agent}
			case 14:
				req = lease.RegisterRequest{Goal: "g", Agent: agent}
			default:
				req = lease.UpdateRequest{Goal: "g", Todo: todo, Actor: agent, ClearClaim: true}
			}
			_, _ = s.Apply(lease.CallOf(req)) // refusals are part of the story
		}
		head, _ := repo.Head(context.Background())
		states, boards := 0, 0
		_ = repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
			if rc, _ := lease.ParseCommit(c.Message); rc.Board {
				boards++
			} else {
				states++
			}
			return true, nil
		})
		d, err := New(s).verifyHistory(head, "", false)
		if err != nil {
			rt.Fatal(err)
		}
		if !d.Valid {
			rt.Fatalf("history does not verify: %+v", d.FirstInvalid)
		}
		if d.StateCommits != states || d.BoardCommits != boards || d.Older != 0 {
			rt.Fatalf("verified %d state and %d board commits of %d and %d (older %d)", d.StateCommits, d.BoardCommits, states, boards, d.Older)
		}
	})
}
