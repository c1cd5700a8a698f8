package lease

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"pgregory.net/rapid"
)

var tlAgents = []string{"agent-a", "agent-b", "agent-c"}

func newAcquireFix(t tlTB) *tlFix {
	return newTLFix(t, HandoffSoftClaim, tlAgents, "todo_aaa", "todo_bbb")
}

func TestAcquireAdmission(t *testing.T) {
	claim := func(by, scope string, expires *time.Time) func(f *tlFix) {
		return func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) {
				td.ClaimedBy, td.ClaimScopeAgentID, td.ClaimExpiresAt = by, scope, expires
				at := tlT0
				td.ClaimedAt = &at
			})
		}
	}
	past := tlAt(50)
	future := tlAt(5000)
	// leaseBy gives todo_aaa a lease of owner/key acquired at 0 (600 s).
	leaseBy := func(owner, key string) func(f *tlFix) {
		return func(f *tlFix) { f.mustAcquire(tlAt(0), "todo_aaa", owner, key, 0) }
	}
	then := func(fns ...func(f *tlFix)) func(f *tlFix) {
		return func(f *tlFix) {
			for _, fn := range fns {
				fn(f)
			}
		}
	}
	otherScope := func(owner string, scopes ...string) func(f *tlFix) {
		return func(f *tlFix) { f.mustAcquire(tlAt(0), "todo_bbb", owner, "kb", 0, scopes...) }
	}
	now100 := tlAt(100)
	type tc struct {
		name  string
		setup func(f *tlFix)
		req   AcquireRequest // Todo/Owner/Key/TTL default to todo_aaa/agent-a/k-new/600 when empty
		raw   bool           // use req as is (no defaults)
		now   time.Time      // default tlAt(100)
		code  Code
		check func(t *testing.T, f *tlFix, o *Outcome, e *Error)
	}
	cases := []tc{
		// request fields: each error names the field being decoded
		{name: "bad goal id", req: AcquireRequest{Goal: "Bad Goal", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60}, raw: true, code: CodeInvalidGoalID},
		{name: "missing goal id", req: AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60}, raw: true, code: CodeInvalidGoalID},
		{name: "missing todo id", req: AcquireRequest{Goal: tlGoal, Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60}, raw: true, code: CodeInvalidTodoID},
		{name: "bad todo id", req: AcquireRequest{Goal: tlGoal, Todo: "todo_X", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60}, raw: true, code: CodeInvalidTodoID},
		{name: "missing owner", req: AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", IdempotencyKey: "k", TTLSeconds: 60}, raw: true, code: CodeInvalidAgentID},
		{name: "bad owner", req: AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "Agent A", IdempotencyKey: "k", TTLSeconds: 60}, raw: true, code: CodeInvalidAgentID},
		{name: "missing key", req: AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", TTLSeconds: 60}, raw: true, code: CodeInvalidIdempotencyKey},
		{name: "bad key", req: AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "-k", TTLSeconds: 60}, raw: true, code: CodeInvalidIdempotencyKey},
		{name: "negative expected version", req: AcquireRequest{ExpectedVersion: tlI64(-1)}, code: CodeInvalidRequest},
		{name: "ttl zero", req: AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k"}, raw: true, code: CodeInvalidTTL},
		{name: "ttl too long", req: AcquireRequest{TTLSeconds: 86401}, code: CodeInvalidTTL},
		{name: "ttl max", req: AcquireRequest{TTLSeconds: 86400}, check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
			if l := f.lease("todo_aaa"); !l.ExpiresAt.Equal(now100.Add(24 * time.Hour)) {
				t.Fatalf("expires %v", l.ExpiresAt)
			}
		}},
		{name: "absolute scope", req: AcquireRequest{WriteScopes: []string{"/etc/**"}}, code: CodeInvalidWriteScope},
		{name: "dotdot scope", req: AcquireRequest{WriteScopes: []string{"src/../x"}}, code: CodeInvalidWriteScope},
		{name: "bad glob scope", req: AcquireRequest{WriteScopes: []string{"src/[a"}}, code: CodeInvalidWriteScope},
		// bounded input: at most 64 scopes of at most 256 bytes, of a shape
		// matched and compared in bounded time (glob.go)
		{name: "65 scopes", req: AcquireRequest{WriteScopes: manyScopes(65)}, code: CodeInvalidWriteScope},
		{name: "64 scopes", req: AcquireRequest{WriteScopes: manyScopes(64)}, check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
			if l := f.lease("todo_aaa"); len(l.WriteScopes) != 64 {
				t.Fatalf("scopes %d", len(l.WriteScopes))
			}
		}},
		{name: "257-byte scope", req: AcquireRequest{WriteScopes: []string{strings.Repeat("a", 257)}}, code: CodeInvalidWriteScope},
		{name: "exponential scope", req: AcquireRequest{WriteScopes: []string{"**/" + strings.Repeat("{?,}", 30) + "q"}}, code: CodeInvalidWriteScope},
		{name: "class matching slash", req: AcquireRequest{WriteScopes: []string{"src/[!_]*.go"}}, code: CodeInvalidWriteScope},
		// store, goal, todo
		{name: "store not initialized", setup: func(f *tlFix) { f.files = MemFiles{} }, code: CodeStoreNotInitialized},
		{name: "goal not found", req: AcquireRequest{Goal: "other"}, code: CodeGoalNotFound},
		{name: "goal archived", setup: func(f *tlFix) { f.editGoal(func(g *Goal) { g.Status = GoalArchived }) }, code: CodeGoalArchived},
		{name: "todo not found", req: AcquireRequest{Todo: "todo_zzz"}, code: CodeTodoNotFound},
		{name: "todo done", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Status = TodoDone }) }, code: CodeTodoNotOpen},
		{name: "todo superseded", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Status = TodoSuperseded }) }, code: CodeTodoNotOpen},
		{name: "todo archived", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Archived = true }) }, code: CodeTodoArchived},
		// owner
		{name: "owner never registered", req: AcquireRequest{Owner: "agent-z"}, code: CodeAgentNotRegistered},
		{name: "owner unregistered", setup: func(f *tlFix) { f.setAgent("agent-a", AgentUnregistered) }, code: CodeAgentNotRegistered},
		{name: "owner excluded", setup: func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) { td.ExcludedAgents = []string{"agent-a"} })
		}, code: CodeAgentExcluded},
		{name: "bound to another agent", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.BoundAgent = "agent-b" }) },
			code: CodeBoundAgentMismatch, check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["bound_agent"] != "agent-b" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "bound to the owner", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.BoundAgent = "agent-a" }) }},
		// claim
		{name: "claimed by another agent", setup: claim("agent-b", "", nil), code: CodeClaimConflict,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["claimed_by"] != "agent-b" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "claimed by the owner", setup: claim("agent-a", "", nil)},
		{name: "owner is the claim's scope agent", setup: claim("agent-b", "agent-a", nil)},
		{name: "claim by another agent expired", setup: claim("agent-b", "", &past)},
		{name: "claim by another agent not yet expired", setup: claim("agent-b", "", &future), code: CodeClaimConflict},
		// the todo's current lease
		{name: "effective lease of another agent", setup: leaseBy("agent-b", "kb"), code: CodeTodoLeaseConflict,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["lease_owner"] != "agent-b" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "own effective lease under another key", setup: leaseBy("agent-a", "k-old"), code: CodeTodoLeaseConflict},
		{name: "expired lease is taken over", setup: leaseBy("agent-b", "kb"), now: tlAt(600), req: AcquireRequest{ExpectedVersion: tlI64(1)},
			check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
				l := f.lease("todo_aaa")
				if l.Version != 2 || l.Epoch != 2 || l.Owner != "agent-a" || len(l.Holders) != 2 ||
					l.Holders[0].EndReason != EndExpired || l.Holders[1].Owner != "agent-a" || l.Holders[1].EndedAt != nil {
					t.Fatalf("lease %+v", l)
				}
				if o.Version != 2 || o.Epoch != 2 {
					t.Fatalf("outcome %+v", o)
				}
			}},
		{name: "released lease is taken over", setup: then(leaseBy("agent-b", "kb"), func(f *tlFix) {
			f.ok(f.release(tlAt(10), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "kb", ExpectedVersion: tlI64(1)}))
		}), req: AcquireRequest{ExpectedVersion: tlI64(1)},
			check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
				l := f.lease("todo_aaa")
				if l.Version != 2 || l.Epoch != 2 || l.Status != LeaseActive || l.ReleasedAt != nil || l.Holders[0].EndReason != EndReleased {
					t.Fatalf("lease %+v", l)
				}
			}},
		{name: "lease of an unregistered owner is taken over", setup: then(leaseBy("agent-b", "kb"), func(f *tlFix) { f.setAgent("agent-b", AgentUnregistered) }),
			check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
				if l := f.lease("todo_aaa"); l.Epoch != 2 || l.Holders[0].EndReason != EndTakenOver {
					t.Fatalf("lease %+v", l)
				}
			}},
		{name: "lease of an excluded owner is taken over", setup: then(leaseBy("agent-b", "kb"), func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) { td.ExcludedAgents = []string{"agent-b"} })
		})},
		{name: "lease of a claim-conflicting owner is taken over", setup: then(leaseBy("agent-b", "kb"), claim("agent-a", "", nil))},
		{name: "version mismatch after takeover point", setup: leaseBy("agent-b", "kb"), now: tlAt(700), req: AcquireRequest{ExpectedVersion: tlI64(0)},
			code: CodeVersionMismatch, check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				want := map[string]any{"expected_version": int64(0), "current_version": int64(1), "provider": "git", "revision": "rev2"}
				if !reflect.DeepEqual(e.Details, want) {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "version given on a todo without lease", req: AcquireRequest{ExpectedVersion: tlI64(3)}, code: CodeVersionMismatch},
		{name: "version omitted", req: AcquireRequest{ExpectedVersion: nil}},
		{name: "version omitted on takeover", setup: leaseBy("agent-b", "kb"), now: tlAt(700),
			check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
				if f.lease("todo_aaa").Version != 2 {
					t.Fatal("no takeover")
				}
			}},
		// keys
		{name: "retired key of another owner", setup: leaseBy("agent-b", "k-new"), now: tlAt(700), code: CodeIdempotencyKeyReuse},
		{name: "key of the current execution received by transfer", setup: then(leaseBy("agent-b", "kb"), func(f *tlFix) {
			f.ok(f.transfer(tlAt(10), TransferRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "kb", ExpectedVersion: tlI64(1), NewOwner: "agent-a", NewIdempotencyKey: "k-new", TTLSeconds: 600}))
		}), code: CodeIdempotencyKeyReuse},
		// write scopes
		{name: "scope overlaps another todo's effective lease", setup: otherScope("agent-b", "src/**"), req: AcquireRequest{WriteScopes: []string{"docs/**", "src/a.go"}},
			code: CodeWriteScopeConflict, check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				want := []ScopeConflict{{TodoID: "todo_bbb", Owner: "agent-b", Scope: "src/**"}}
				if !reflect.DeepEqual(e.Details["conflicts"], want) {
					t.Fatalf("details %v", e.Details)
				}
				if e.Message != "write scope overlaps src/** held by agent-b on todo_bbb" {
					t.Fatalf("message %q", e.Message)
				}
			}},
		{name: "several conflicts: the message names the first and points at the list", setup: otherScope("agent-b", "src/**", "lib/**"),
			req: AcquireRequest{WriteScopes: []string{"src/a.go", "lib/b.go"}}, code: CodeWriteScopeConflict,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if n := len(e.Details["conflicts"].([]ScopeConflict)); n != 2 {
					t.Fatalf("conflicts %v", e.Details)
				}
				if e.Message != "write scope overlaps lib/** held by agent-b on todo_bbb (and more, see conflicts)" {
					t.Fatalf("message %q", e.Message)
				}
			}},
		{name: "scope overlaps own lease on another todo", setup: otherScope("agent-a", "src/**"), req: AcquireRequest{WriteScopes: []string{"src/x/*.go"}}, code: CodeWriteScopeConflict},
		{name: "disjoint scopes", setup: otherScope("agent-b", "docs/a*.md"), req: AcquireRequest{WriteScopes: []string{"docs/b.md"}}},
		{name: "empty scope list never conflicts", setup: otherScope("agent-b", "**")},
		{name: "expired holder's scopes do not block", setup: otherScope("agent-b", "src/**"), now: tlAt(600), req: AcquireRequest{WriteScopes: []string{"src/**"}}},
		{name: "released holder's scopes do not block", setup: then(otherScope("agent-b", "src/**"), func(f *tlFix) {
			f.ok(f.release(tlAt(1), ReleaseRequest{Todo: "todo_bbb", Owner: "agent-b", IdempotencyKey: "kb", ExpectedVersion: tlI64(1)}))
		}), req: AcquireRequest{WriteScopes: []string{"src/**"}}},
		{name: "unregistered holder's scopes do not block", setup: then(otherScope("agent-b", "src/**"), func(f *tlFix) { f.setAgent("agent-b", AgentUnregistered) }),
			req: AcquireRequest{WriteScopes: []string{"src/**"}}},
		{name: "closed todo's lease scopes do not block", setup: then(otherScope("agent-b", "src/**"), func(f *tlFix) {
			f.editTodo("todo_bbb", func(td *Todo) { td.Status = TodoDone })
		}), req: AcquireRequest{WriteScopes: []string{"src/**"}}},
		// generation
		{name: "version exhausted", setup: func(f *tlFix) {
			f.putLease(&Lease{TodoID: "todo_aaa", Owner: "agent-b", IdempotencyKey: "kb", Version: MaxGeneration, Epoch: 7, Status: LeaseActive, AcquiredAt: tlT0, ExpiresAt: tlAt(1)})
		}, code: CodeLeaseGenerationExhausted},
		{name: "epoch exhausted", setup: func(f *tlFix) {
			f.putLease(&Lease{TodoID: "todo_aaa", Owner: "agent-b", IdempotencyKey: "kb", Version: 9, Epoch: MaxGeneration, Status: LeaseActive, AcquiredAt: tlT0, ExpiresAt: tlAt(1)})
		}, code: CodeLeaseGenerationExhausted},
		{name: "version one below the limit", setup: func(f *tlFix) {
			f.putLease(&Lease{TodoID: "todo_aaa", Owner: "agent-b", IdempotencyKey: "kb", Version: MaxGeneration - 1, Epoch: 7, Status: LeaseActive, AcquiredAt: tlT0, ExpiresAt: tlAt(1)})
		}, check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
			if f.lease("todo_aaa").Version != MaxGeneration {
				t.Fatal("not bumped to the limit")
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newAcquireFix(t)
			if c.setup != nil {
				c.setup(f)
			}
			req := c.req
			if !c.raw {
				if req.Goal == "" {
					req.Goal = tlGoal
				}
				if req.Todo == "" {
					req.Todo = "todo_aaa"
				}
				if req.Owner == "" {
					req.Owner = "agent-a"
				}
				if req.IdempotencyKey == "" {
					req.IdempotencyKey = "k-new"
				}
				if req.TTLSeconds == 0 {
					req.TTLSeconds = 600
				}
			}
			now := c.now
			if now.IsZero() {
				now = now100
			}
			before := f.lease("todo_aaa")
			o, err := f.run(now, func(v *View) (*Outcome, error) { return Acquire(v, req, now) })
			e := wantCode(t, err, c.code)
			if c.code != "" {
				if after := f.lease("todo_aaa"); !reflect.DeepEqual(before, after) {
					t.Fatalf("refused acquire changed the lease")
				}
			} else {
				if o.Operation != OpLeaseAcquire || o.Status != StatusApplied || !o.Write || !o.BoardChanged || o.Actor != req.Owner || o.Todo != req.Todo {
					t.Fatalf("outcome %+v", o)
				}
				d := resultOf(t, o)
				if d.Lease == nil || !d.Lease.Effective || d.Lease.Owner != req.Owner || d.Lease.IdempotencyKey != req.IdempotencyKey || d.Lease.Status != LeaseActive {
					t.Fatalf("lease view %+v", d.Lease)
				}
			}
			if c.check != nil {
				c.check(t, f, o, e)
			}
		})
	}
}

func TestAcquireFresh(t *testing.T) {
	f := newAcquireFix(t)
	o := f.mustAcquire(tlAt(0), "todo_aaa", "agent-a", "execution-a", 0, "src/**", "docs/*.md", "src/**")
	l := f.lease("todo_aaa")
	if len(l.Receipts) != 1 || l.Receipts[0].ID != o.ReceiptID { // the receipt lives in the record (retention.go)
		t.Fatalf("receipts %+v", l.Receipts)
	}
	l.Receipts = nil
	want := &Lease{TodoID: "todo_aaa", Owner: "agent-a", IdempotencyKey: "execution-a", Version: 1, Epoch: 1, Status: LeaseActive,
		WriteScopes: []string{"docs/*.md", "src/**"}, AcquiredAt: tlT0, ExpiresAt: tlAt(600),
		Holders: []Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "execution-a", StartedAt: tlT0}}}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("lease\n%+v\nwant\n%+v", l, want)
	}
	if o.Version != 1 || o.Epoch != 1 || o.ReceiptID != AcquireReceiptID(tlGoal, "todo_aaa", "agent-a", "execution-a")[:ShortHashDigits] || o.ReplayOf != "" {
		t.Fatalf("outcome %+v", o)
	}
	if got := o.Subject(); got != "task-lease acquire g/todo_aaa by agent-a: v1 e1" {
		t.Fatalf("subject %q", got)
	}
}

func TestAcquireReplay(t *testing.T) {
	req := AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(0), TTLSeconds: 600, WriteScopes: []string{"src/**", "docs/**"}}
	setup := func(t *testing.T) (*tlFix, *Receipt) {
		f := newAcquireFix(t)
		o := f.ok(f.acquire(tlAt(0), req))
		r, err := f.view(tlT0).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
		if err != nil || r == nil {
			t.Fatal("no receipt", err)
		}
		return f, r
	}
	t.Run("exact retry recovers the receipt", func(t *testing.T) {
		f, r := setup(t)
		o := f.ok(f.acquire(tlAt(30), req))
		d := resultOf(t, o)
		if o.Status != StatusReplayed || o.Write || o.BoardChanged || o.ReplayOf != "rev1" || o.ReceiptID != r.ID || o.Version != 1 {
			t.Fatalf("outcome %+v", o)
		}
		if !reflect.DeepEqual(d.OriginalReceipt, r) || d.Lease == nil || !d.Lease.Effective {
			t.Fatalf("data %+v", d)
		}
	})
	t.Run("scope order does not matter", func(t *testing.T) {
		f, _ := setup(t)
		r2 := req
		r2.WriteScopes = []string{"docs/**", "src/**", "docs/**"}
		if o := f.ok(f.acquire(tlAt(30), r2)); o.Status != StatusReplayed {
			t.Fatalf("status %s", o.Status)
		}
	})
	t.Run("after renewal shows the current lease", func(t *testing.T) {
		f, r := setup(t)
		f.ok(f.renew(tlAt(100), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), TTLSeconds: 900}))
		o := f.ok(f.acquire(tlAt(200), req))
		d := resultOf(t, o)
		if o.Status != StatusReplayed || d.Lease.Version != 2 || !d.Lease.ExpiresAt.Equal(tlAt(1000)) || d.OriginalReceipt.Lease.Version != 1 || !reflect.DeepEqual(d.OriginalReceipt, r) {
			t.Fatalf("outcome %+v data %+v", o, d)
		}
	})
	for _, c := range []struct {
		name   string
		change func(r *AcquireRequest)
	}{
		{"changed ttl", func(r *AcquireRequest) { r.TTLSeconds = 60 }},
		{"changed scopes", func(r *AcquireRequest) { r.WriteScopes = []string{"src/**"} }},
		{"changed expected version", func(r *AcquireRequest) { r.ExpectedVersion = tlI64(1) }},
		{"omitted expected version", func(r *AcquireRequest) { r.ExpectedVersion = nil }},
	} {
		t.Run(c.name+" is key reuse", func(t *testing.T) {
			f, _ := setup(t)
			r2 := req
			c.change(&r2)
			_, err := f.acquire(tlAt(30), r2)
			wantCode(t, err, CodeIdempotencyKeyReuse)
		})
	}
	for _, c := range []struct {
		name  string
		after func(f *tlFix)
		now   time.Time
	}{
		{"transferred", func(f *tlFix) {
			f.ok(f.transfer(tlAt(10), TransferRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 600}))
		}, tlAt(20)},
		{"transferred to itself", func(f *tlFix) {
			f.ok(f.transfer(tlAt(10), TransferRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), NewOwner: "agent-a", NewIdempotencyKey: "k2", TTLSeconds: 600}))
		}, tlAt(20)},
		{"released", func(f *tlFix) {
			f.ok(f.release(tlAt(10), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}))
		}, tlAt(20)},
		{"expired", func(f *tlFix) {}, tlAt(600)},
		{"owner unregistered", func(f *tlFix) { f.setAgent("agent-a", AgentUnregistered) }, tlAt(20)},
		{"owner excluded", func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) { td.ExcludedAgents = []string{"agent-a"} })
		}, tlAt(20)},
		{"todo closed", func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Status = TodoDone }) }, tlAt(20)},
		{"taken over after expiry", func(f *tlFix) { f.mustAcquire(tlAt(700), "todo_aaa", "agent-a", "k9", 1) }, tlAt(710)},
	} {
		t.Run("execution not current: "+c.name, func(t *testing.T) {
			f, _ := setup(t)
			c.after(f)
			_, err := f.acquire(c.now, req)
			e := wantCode(t, err, CodeExecutionNotCurrent)
			// the refusal says where the lease is now, so the agent can inspect it
			cur := f.lease("todo_aaa")
			if e.Details["current_version"] != cur.Version || e.Details["current_epoch"] != cur.Epoch {
				t.Fatalf("details %v, lease v%d e%d", e.Details, cur.Version, cur.Epoch)
			}
		})
	}
}

func TestScopesOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"src/**", "src/a.go", true},
		{"src/**", "src/x/*.go", true},
		{"src/**", "src", true},
		{"docs/a*.md", "docs/b.md", false},
		{"docs/a*.md", "docs/ab.md", true},
		{"docs/a*.md", "docs/*b.md", true},
		{"src", "src/a.go", true},
		{"src/x", "src/x/y/z.go", true},
		{"src", "srcs/a.go", false},
		{"src/a.go", "src/b.go", false},
		{"src/a.go", "src/a.go", true},
		{"*.go", "a.go", true},
		{"*.go", "src/a.go", false},
		{"**/*.go", "src/a/b.go", true},
		{"src/**/*.go", "docs/README.md", false},
		// a scope also covers what is below it (README.md may be a folder)
		{"**/*.go", "README.md", true},
		{"**", "anything/at/all", true},
		{"{src,lib}/c.go", "lib/**", true},
		{"{src,lib}/c.go", "docs/**", false},
		{"{src/{a,b},lib}.go", "src/b.go", true},
		{"src/[ab].go", "src/c.go", false},
		{"src/[ab].go", "src/b.go", true},
		{"src/[!a].go", "src/a.go", false},
		{"src/[^a].go", "src/b.go", true},
		{"src/[a-c]*.go", "src/[x-z]*.go", false},
		{"src/[a-c]*.go", "src/[c-z]*.go", true},
		{"src/[!a]*.go", "src/[!b]*.go", true},
		{"src/[!a].go", "src/!.go", true},  // the ! negates, it is not a member
		{"src/[a-a].go", "src/a.go", true}, // a one-letter range
		{"src/[a-a].go", "src/b.go", false},
		{"src/[x{].go", "src/{.go", true}, // a brace inside a class is a literal
		{"src/[x{].go", "docs/**", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a/*/c", "b/c", false},
		{"a/*/c", "a/c", true}, // a/c/c
		{"a/**/c", "a/c", true},
		{"a/**/c/d", "a/x/y/c/*", true},
		{"x**y", "xay", true},
		{"x**y", "x/y", false},
		{"", "src/**", false},
	}
	for _, c := range cases {
		if got := ScopesOverlap(c.a, c.b); got != c.want {
			t.Errorf("ScopesOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := ScopesOverlap(c.b, c.a); got != c.want {
			t.Errorf("ScopesOverlap(%q, %q) = %v, want %v (symmetry)", c.b, c.a, got, c.want)
		}
	}
	// Unanalysable patterns are conservatively overlapping.
	for _, p := range []string{"src/{a,b", "src/[ab", "src/[", "src/[a-", "src/a\\*"} {
		if !ScopesOverlap(p, "docs/x.md") {
			t.Errorf("ScopesOverlap(%q, docs/x.md) = false, want conservative true", p)
		}
	}
	// Brace explosion stays bounded and conservative.
	big := "{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}"
	if !ScopesOverlap(big, "zzz") {
		t.Error("too many alternatives must be conservative")
	}
	// The limit is 64 alternatives: 64 are analysed, 65 are not.
	quad := "{a,b,c,d}"
	if ScopesOverlap(quad+quad+quad+"/x", "zzz") {
		t.Error("64 alternatives must still be analysed")
	}
	if !ScopesOverlap("{"+quad+quad+quad+",e}/x", "zzz") {
		t.Error("65 alternatives must be conservative")
	}
	// Nested alternatives count once each toward the limit.
	var alts []string
	for i := 0; i < 40; i++ {
		alts = append(alts, fmt.Sprintf("a%d", i))
	}
	if nested := "{x,{" + strings.Join(alts, ",") + "}}/f"; ScopesOverlap(nested, "y/f") || !ScopesOverlap(nested, "a39/f") {
		t.Errorf("%s: 41 nested alternatives must be analysed exactly", nested)
	}
}

// TestScopesOverlapSound checks ScopesOverlap against doublestar: whenever a
// concrete path (or something below it) is matched by both patterns, they
// must overlap.
func TestScopesOverlapSound(t *testing.T) {
	segs := []string{"a", "b", "ab", "a.go", "b.go", "*", "*.go", "a*", "*b", "?", "??", "[ab]", "[!a]", "[a-b]*", "**", "{a,b}", "{a.go,*b}"}
	lits := []string{"a", "b", "ab", "ba", "a.go", "b.go", "x"}
	pattern := rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(1, 4).Draw(t, "n")
		p := ""
		for i := 0; i < n; i++ {
			if i > 0 {
				p += "/"
			}
			p += rapid.SampledFrom(segs).Draw(t, "seg")
		}
		return p
	})
	path := rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		p := ""
		for i := 0; i < n; i++ {
			if i > 0 {
				p += "/"
			}
			p += rapid.SampledFrom(lits).Draw(t, "lit")
		}
		return p
	})
	matchesAtOrBelow := func(pat, p string) bool {
		for {
			if ok, _ := doublestar.Match(pat, p); ok {
				return true
			}
			i := lastSlash(p)
			if i < 0 {
				return false
			}
			p = p[:i]
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		a, b := pattern.Draw(t, "a"), pattern.Draw(t, "b")
		if !ValidScope(a) || !ValidScope(b) {
			t.Skip("invalid scope")
		}
		for i := 0; i < 20; i++ {
			p := path.Draw(t, fmt.Sprint("path", i))
			if matchesAtOrBelow(a, p) && matchesAtOrBelow(b, p) && !ScopesOverlap(a, b) {
				t.Fatalf("%q and %q both cover %q but ScopesOverlap is false", a, b, p)
			}
		}
	})
}

// manyScopes returns n distinct valid scopes.
func manyScopes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("pkg%03d/**", i)
	}
	return out
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

// TestScopeConflictsScansAllRecords puts the only conflicting lease behind
// hundreds of others: the scan must find it (no display page).
func TestScopeConflictsScansAllRecords(t *testing.T) {
	f := newTLFix(t, HandoffSoftClaim, []string{"agent-a", "agent-b"})
	const n = 300
	f.edit(func(v *View) {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("todo_%04d", i)
			v.PutTodo(tlGoal, &Todo{ID: id, Text: id, Status: TodoOpen, Priority: DefaultPriority, CreatedAt: tlT0, UpdatedAt: tlT0})
			scope := fmt.Sprintf("pkg%d/**", i)
			if i == n-1 {
				scope = "zzz/deep/**"
			}
			v.PutLease(tlGoal, &Lease{TodoID: id, Owner: "agent-b", IdempotencyKey: "kb", Version: 1, Epoch: 1, Status: LeaseActive,
				WriteScopes: []string{scope}, AcquiredAt: tlT0, ExpiresAt: tlAt(600)})
		}
		v.PutTodo(tlGoal, &Todo{ID: "todo_new", Text: "new", Status: TodoOpen, Priority: DefaultPriority, CreatedAt: tlT0, UpdatedAt: tlT0})
	})
	v := f.view(tlAt(1))
	got, err := ScopeConflicts(v, tlGoal, "todo_new", []string{"zzz/deep/x.go", "pkg7/a.go"}, tlAt(1))
	if err != nil {
		t.Fatal(err)
	}
	want := []ScopeConflict{{TodoID: "todo_0007", Owner: "agent-b", Scope: "pkg7/**"}, {TodoID: fmt.Sprintf("todo_%04d", n-1), Owner: "agent-b", Scope: "zzz/deep/**"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("conflicts %v, want %v", got, want)
	}
	// Its own todo never conflicts; nothing conflicts once everything expired.
	if got, _ := ScopeConflicts(v, tlGoal, "todo_0007", []string{"pkg7/a.go"}, tlAt(1)); len(got) != 0 {
		t.Fatalf("own todo conflicts: %v", got)
	}
	if got, _ := ScopeConflicts(v, tlGoal, "todo_new", []string{"**"}, tlAt(600)); len(got) != 0 {
		t.Fatalf("expired leases conflict: %v", got)
	}
	if got, _ := ScopeConflicts(v, tlGoal, "todo_new", nil, tlAt(1)); len(got) != 0 {
		t.Fatalf("empty scope list conflicts: %v", got)
	}
	_, err = f.acquire(tlAt(1), AcquireRequest{Todo: "todo_new", Owner: "agent-a", IdempotencyKey: "ka", TTLSeconds: 60, WriteScopes: []string{"zzz/deep/x.go"}})
	wantCode(t, err, CodeWriteScopeConflict)
}

// TestScopeConflictsSortedByTodoThenScope: the conflict list is ordered by
// todo id, then by scope, whatever the scopes' own order.
func TestScopeConflictsSortedByTodoThenScope(t *testing.T) {
	f := newTLFix(t, HandoffSoftClaim, tlAgents, "todo_aaa", "todo_bbb", "todo_ccc")
	f.mustAcquire(tlAt(0), "todo_bbb", "agent-b", "kb", 0, "z/**", "y/**")
	f.mustAcquire(tlAt(0), "todo_ccc", "agent-c", "kc", 0, "a/**")
	got, err := ScopeConflicts(f.view(tlAt(1)), tlGoal, "todo_aaa", []string{"a/x", "y/x", "z/x"}, tlAt(1))
	if err != nil {
		t.Fatal(err)
	}
	want := []ScopeConflict{{TodoID: "todo_bbb", Owner: "agent-b", Scope: "y/**"}, {TodoID: "todo_bbb", Owner: "agent-b", Scope: "z/**"},
		{TodoID: "todo_ccc", Owner: "agent-c", Scope: "a/**"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("conflicts %v, want %v", got, want)
	}
}

// TestAcquireComposesInOneView: a claim written into the same View before
// Acquire is seen by it (the claim + acquire commit).
func TestAcquireComposesInOneView(t *testing.T) {
	f := newAcquireFix(t)
	v := f.view(tlAt(1))
	td, _ := v.Todo(tlGoal, "todo_aaa")
	td.ClaimedBy = "agent-b"
	v.PutTodo(tlGoal, td)
	if _, err := Acquire(v, AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60}, tlAt(1)); err == nil {
		t.Fatal("acquire ignored the claim written in the same view")
	}
	o, err := Acquire(v, AcquireRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "k", TTLSeconds: 60}, tlAt(1))
	if err != nil || !resultOf(t, o).Lease.Effective {
		t.Fatalf("acquire by the claimant in the same view: %v", err)
	}
	if n := len(v.Changes()); n != 2 { // todo, lease (holding its receipt)
		t.Fatalf("changes %d", n)
	}
}

func TestPrefixesMeet(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"work/5/**", "work/12/**", false},
		{"work/1/**", "work/12/**", false},
		{"work/1*/**", "work/12/**", true},
		{"src", "srcs/a.go", true}, // a prefix: decided by ScopesOverlap
		{"src/**", "src", true},
		{"docs/a*.md", "docs/b.md", false},
		{"docs/a*.md", "docs/ab.md", true},
		{"{a,b}/x", "zzz", true}, // no literal prefix
		{"**/x.go", "src/x.go", true},
		{"x/{a,b,c}", "y/z", false},
		{"src/a?.go", "src/b.go", false},
		{"src/[ab].go", "src/c.go", true},
	} {
		if got := prefixesMeet(c.a, c.b); got != c.want {
			t.Errorf("prefixesMeet(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := prefixesMeet(c.b, c.a); got != c.want {
			t.Errorf("prefixesMeet(%q, %q) = %v, want %v (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

// The prefilter never hides an overlap: on random valid scopes, whenever
// ScopesOverlap says two scopes overlap, their prefixes meet.
func TestPrefixesMeetIsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	parts := []string{"src", "s", "sr", "a", "ab", "*", "**", "a*", "*b", "?", "[ab]", "{a,b}", "{src,docs}", "x.go", "docs"}
	scope := func() string {
		n := 1 + rng.IntN(3)
		p := make([]string, n)
		for i := range p {
			p[i] = parts[rng.IntN(len(parts))]
		}
		return strings.Join(p, "/")
	}
	checked := 0
	for i := 0; i < 20000; i++ {
		a, b := scope(), scope()
		if !ValidScope(a) || !ValidScope(b) {
			continue
		}
		checked++
		if ScopesOverlap(a, b) && !prefixesMeet(a, b) {
			t.Fatalf("%q and %q overlap but their prefixes do not meet", a, b)
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d valid pairs", checked)
	}
}
