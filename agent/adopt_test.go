package agent

import (
	"strings"
	"testing"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// adoptOps answers Inspect with a lease and records the renewal asked for.
type adoptOps struct {
	holdOps
	cur   *lease.LeaseView
	renew *lease.RenewRequest
}

func (o *adoptOps) Inspect(goal, todo string) (*loopx.Result[lease.LeaseResult], error) {
	return &loopx.Result[lease.LeaseResult]{Data: lease.LeaseResult{GoalID: "g", TodoID: todo, Lease: o.cur}}, nil
}

func (o *adoptOps) Renew(r lease.RenewRequest) (*loopx.Result[lease.LeaseResult], error) {
	o.renew = &r
	return leaseRes(r.Owner, r.IdempotencyKey, 1, *r.ExpectedVersion+1, true), nil
}

// An acquire refused as idempotency_key_reuse adopts the owner's current
// execution of the key, whatever TTL it was acquired with, by renewing it
// at once with the request's TTL; nothing else is adopted.
func TestAdoptExecution(t *testing.T) {
	held := func(owner, key string, status string, effective bool, scopes ...string) *lease.LeaseView {
		return &lease.LeaseView{Lease: &lease.Lease{TodoID: "todo_work", Owner: owner, IdempotencyKey: key, Epoch: 1,
			Version: 4, Status: status, WriteScopes: scopes}, Effective: effective}
	}
	req := func(owner string, scopes ...string) lease.AcquireRequest {
		return lease.AcquireRequest{Goal: "g", Todo: "todo_work", Owner: owner, IdempotencyKey: "k1", TTLSeconds: 60, WriteScopes: scopes}
	}
	for _, c := range []struct {
		name    string
		cur     *lease.LeaseView
		req     lease.AcquireRequest
		adopt   bool
		message string // in the refusal, when not adopted
	}{
		{"current, any scopes", held("agent-a", "k1", lease.LeaseActive, true, "src/**"), req("agent-a"), true, ""},
		{"current, the same scopes", held("agent-a", "k1", lease.LeaseActive, true, "src/**", "doc/**"), req("agent-a", "doc/**", "src/**", "src/**"), true, ""},
		{"current, other scopes", held("agent-a", "k1", lease.LeaseActive, true, "src/**"), req("agent-a", "src/lexer/**"), false, "give the same scopes, or none"},
		{"released", held("agent-a", "k1", lease.LeaseReleased, false), req("agent-a"), false, "is not current (released"},
		{"active but not effective", held("agent-a", "k1", lease.LeaseActive, false), req("agent-a"), false, "is not current (active, effective false)"},
		{"another owner's key", held("agent-b", "k1", lease.LeaseActive, true), req("agent-a"), false, ""},
		{"another key", held("agent-a", "k2", lease.LeaseActive, true), req("agent-a"), false, ""},
		{"no lease", nil, req("agent-a"), false, ""},
		{"owner not named", held("agent-a", "k1", lease.LeaseActive, true), req(""), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops := &adoptOps{cur: c.cur}
			refusal := lease.Errorf(lease.CodeIdempotencyKeyReuse, "used before")
			res, err := adoptExecution(ops, c.req, refusal)
			if !c.adopt {
				le, ok := lease.AsError(err)
				if !ok || le.Code != lease.CodeIdempotencyKeyReuse || res != nil || ops.renew != nil {
					t.Fatalf("adopted: res %v, err %v, renew %+v", res, err, ops.renew)
				}
				if !strings.Contains(le.Message, c.message) {
					t.Fatalf("message %q, want it to say %q", le.Message, c.message)
				}
				return
			}
			if err != nil || ops.renew == nil {
				t.Fatalf("not adopted: %v", err)
			}
			if r := ops.renew; r.Owner != "agent-a" || r.IdempotencyKey != "k1" || *r.ExpectedVersion != 4 || r.TTLSeconds != 60 {
				t.Fatalf("renewal %+v (version %d): want agent-a k1 at version 4 with TTL 60", r, *r.ExpectedVersion)
			}
		})
	}
}

// Generated keys are valid idempotency keys, and differ.
func TestNewExecutionKey(t *testing.T) {
	a, b := NewExecutionKey(), NewExecutionKey()
	for _, k := range []string{a, b} {
		if err := lease.CheckIdempotencyKey("key", k); err != nil || len(k) != len("run-")+16 {
			t.Fatalf("key %q: %v", k, err)
		}
	}
	if a == b {
		t.Fatalf("two keys are both %q", a)
	}
}
