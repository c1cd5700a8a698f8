package lease

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTransferAdmission(t *testing.T) {
	claimBy := func(by, scope string, ttlMinutes int64) func(f *tlFix) {
		return func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) {
				at := tlT0
				td.ClaimedBy, td.ClaimScopeAgentID, td.ClaimedAt, td.ClaimTTLMinutes = by, scope, &at, ttlMinutes
				if ttlMinutes > 0 {
					exp := tlT0.Add(time.Duration(ttlMinutes) * time.Minute)
					td.ClaimExpiresAt = &exp
				}
			})
		}
	}
	bound := func(agent string) func(f *tlFix) {
		return func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.BoundAgent = agent }) }
	}
	exclude := func(agents ...string) func(f *tlFix) {
		return func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.ExcludedAgents = agents }) }
	}
	then := func(fns ...func(f *tlFix)) func(f *tlFix) {
		return func(f *tlFix) {
			for _, fn := range fns {
				fn(f)
			}
		}
	}
	type tc struct {
		name  string
		mode  string
		setup func(f *tlFix)
		req   TransferRequest
		raw   bool
		now   time.Time
		code  Code
		check func(t *testing.T, f *tlFix, o *Outcome, e *Error)
	}
	full := TransferRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 600}
	without := func(fn func(r *TransferRequest)) TransferRequest {
		r := full
		fn(&r)
		return r
	}
	cases := []tc{
		{name: "missing todo id", req: without(func(r *TransferRequest) { r.Todo = "" }), raw: true, code: CodeInvalidTodoID},
		{name: "bad goal id", req: without(func(r *TransferRequest) { r.Goal = "G!" }), raw: true, code: CodeInvalidGoalID},
		{name: "missing owner", req: without(func(r *TransferRequest) { r.Owner = "" }), raw: true, code: CodeInvalidAgentID},
		{name: "missing key", req: without(func(r *TransferRequest) { r.IdempotencyKey = "" }), raw: true, code: CodeInvalidIdempotencyKey},
		{name: "missing expected version", req: without(func(r *TransferRequest) { r.ExpectedVersion = nil }), raw: true, code: CodeVersionRequired},
		{name: "missing new owner", req: without(func(r *TransferRequest) { r.NewOwner = "" }), raw: true, code: CodeInvalidAgentID,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if !strings.Contains(e.Message, "new owner") {
					t.Fatalf("message %q does not name the new owner", e.Message)
				}
			}},
		{name: "bad new key", req: without(func(r *TransferRequest) { r.NewIdempotencyKey = "k 2" }), raw: true, code: CodeInvalidIdempotencyKey},
		{name: "missing ttl", req: without(func(r *TransferRequest) { r.TTLSeconds = 0 }), raw: true, code: CodeInvalidTTL},
		{name: "goal archived", setup: func(f *tlFix) { f.editGoal(func(g *Goal) { g.Status = GoalArchived }) }, code: CodeGoalArchived},
		{name: "todo not found", req: TransferRequest{Todo: "todo_zzz"}, code: CodeTodoNotFound},
		{name: "todo without lease", req: TransferRequest{Todo: "todo_bbb"}, code: CodeLeaseNotActive},
		{name: "expired lease", now: tlAt(600), code: CodeLeaseNotActive},
		{name: "released lease", setup: func(f *tlFix) {
			f.ok(f.release(tlAt(10), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}))
		}, code: CodeLeaseNotActive},
		{name: "stale version", req: TransferRequest{ExpectedVersion: tlI64(0)}, code: CodeVersionMismatch},
		{name: "other owner", req: TransferRequest{Owner: "agent-c"}, code: CodeLeaseProofMismatch},
		{name: "other key", req: TransferRequest{IdempotencyKey: "k9"}, code: CodeLeaseProofMismatch},
		{name: "todo done", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Status = TodoDone }) }, code: CodeTodoNotOpen},
		{name: "todo archived", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Archived = true }) }, code: CodeTodoArchived},
		{name: "sender unregistered", setup: func(f *tlFix) { f.setAgent("agent-a", AgentUnregistered) }, code: CodeAgentNotRegistered,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["agent_id"] != "agent-a" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "receiver unregistered", setup: func(f *tlFix) { f.setAgent("agent-b", AgentUnregistered) }, code: CodeAgentNotRegistered,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["agent_id"] != "agent-b" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "receiver unknown", req: TransferRequest{NewOwner: "agent-z"}, code: CodeAgentNotRegistered},
		{name: "receiver excluded", setup: exclude("agent-b"), code: CodeAgentExcluded},
		{name: "excluded sender may hand over", setup: exclude("agent-a")},
		{name: "todo bound to the sender", setup: bound("agent-a"), code: CodeBoundAgentMismatch,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["bound_agent"] != "agent-a" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "claimed by the sender, lease only", setup: claimBy("agent-a", "", 0), code: CodeClaimConflict,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["claimed_by"] != "agent-a" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "todo already claimed by the receiver", setup: claimBy("agent-b", "", 0)},
		{name: "receiver is the claim's scope agent", setup: claimBy("agent-a", "agent-b", 0)},
		{name: "new key equals the current key", req: TransferRequest{NewIdempotencyKey: "k1"}, code: CodeIdempotencyKeyReuse},
		{name: "new key is a retired key", setup: func(f *tlFix) {
			f.ok(f.transfer(tlAt(10), full))
			f.ok(f.transfer(tlAt(20), TransferRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "k2", ExpectedVersion: tlI64(2), NewOwner: "agent-a", NewIdempotencyKey: "k3", TTLSeconds: 600}))
		}, req: TransferRequest{IdempotencyKey: "k3", ExpectedVersion: tlI64(3), NewIdempotencyKey: "k1"}, code: CodeIdempotencyKeyReuse},
		{name: "version exhausted", setup: func(f *tlFix) {
			l := f.lease("todo_aaa")
			l.Version = MaxGeneration
			f.putLease(l)
		}, req: TransferRequest{ExpectedVersion: tlI64(MaxGeneration)}, code: CodeLeaseGenerationExhausted},
		{name: "epoch exhausted", setup: func(f *tlFix) {
			l := f.lease("todo_aaa")
			l.Epoch = MaxGeneration
			f.putLease(l)
		}, code: CodeLeaseGenerationExhausted},
		{name: "revived overlapping scope", setup: func(f *tlFix) {
			exclude("agent-a")(f) // agent-a's lease stops being effective
			f.mustAcquire(tlAt(10), "todo_bbb", "agent-b", "kb", 0, "src/a.go")
		}, req: TransferRequest{NewOwner: "agent-c", NewIdempotencyKey: "kc"}, code: CodeWriteScopeConflict},
		{name: "lease-only transfer", check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
			l := withoutReceipts(t, f.lease("todo_aaa"), o.ReceiptID)
			ended := tlAt(100)
			want := &Lease{TodoID: "todo_aaa", Owner: "agent-b", IdempotencyKey: "k2", Version: 2, Epoch: 2, Status: LeaseActive,
				WriteScopes: []string{"src/**"}, AcquiredAt: tlAt(100), ExpiresAt: tlAt(700),
				Holders: []Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "k1", StartedAt: tlT0, EndedAt: &ended, EndReason: EndTransferred},
					{Epoch: 2, Owner: "agent-b", IdempotencyKey: "k2", StartedAt: tlAt(100)}}}
			if !reflect.DeepEqual(l, want) {
				t.Fatalf("lease\n%+v\nwant\n%+v", l, want)
			}
			d := resultOf(t, o)
			if d.TransferClaim != nil || d.ClaimedBy != nil || d.TodoChanged != nil || !d.Lease.Effective {
				t.Fatalf("data %+v", d)
			}
			if o.Version != 2 || o.Epoch != 2 || o.Actor != "agent-a" || !o.BoardChanged {
				t.Fatalf("outcome %+v", o)
			}
		}},
		{name: "same agent new execution", req: TransferRequest{NewOwner: "agent-a"}, check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
			if l := f.lease("todo_aaa"); l.Owner != "agent-a" || l.IdempotencyKey != "k2" || l.Epoch != 2 {
				t.Fatalf("lease %+v", l)
			}
		}},
		// --transfer-claim
		{name: "transfer claim in a soft_claim goal", mode: HandoffSoftClaim, setup: claimBy("agent-a", "", 0), req: TransferRequest{TransferClaim: true}, code: CodeInvalidRequest},
		{name: "transfer claim of an unclaimed todo", mode: HandoffHardLease, req: TransferRequest{TransferClaim: true}, code: CodeNotClaimOwner,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if v, ok := e.Details["claimed_by"]; !ok || v != "" || !strings.Contains(e.Message, "is not claimed") {
					t.Fatalf("details %v, message %q", e.Details, e.Message)
				}
			}},
		{name: "transfer claim held by someone else", mode: HandoffHardLease, setup: claimBy("agent-c", "", 0), req: TransferRequest{TransferClaim: true}, code: CodeNotClaimOwner,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["claimed_by"] != "agent-c" || !strings.Contains(e.Message, "is claimed by agent-c") {
					t.Fatalf("details %v, message %q", e.Details, e.Message)
				}
			}},
		{name: "transfer claim after the claim expired", mode: HandoffHardLease, setup: claimBy("agent-a", "", 1), req: TransferRequest{TransferClaim: true}, code: CodeNotClaimOwner},
		{name: "transfer claim to an excluded receiver", mode: HandoffHardLease, setup: then(claimBy("agent-a", "", 0), exclude("agent-b")), req: TransferRequest{TransferClaim: true}, code: CodeAgentExcluded},
		{name: "transfer claim never rewrites the bound agent", mode: HandoffHardLease, setup: then(claimBy("agent-a", "", 0), bound("agent-a")), req: TransferRequest{TransferClaim: true}, code: CodeBoundAgentMismatch},
		{name: "transfer claim", mode: HandoffHardLease, setup: claimBy("agent-a", "", 0), req: TransferRequest{TransferClaim: true},
			check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
				td := f.todo("todo_aaa")
				if td.ClaimedBy != "agent-b" || td.ClaimScopeAgentID != "" || !td.ClaimedAt.Equal(tlAt(100)) || td.ClaimExpiresAt != nil ||
					td.UpdatedBy != "agent-a" || !td.UpdatedAt.Equal(tlAt(100)) || td.ID != "todo_aaa" {
					t.Fatalf("todo %+v", td)
				}
				d := resultOf(t, o)
				if d.TransferClaim == nil || !*d.TransferClaim || *d.ClaimedBy != "agent-b" || !*d.TodoChanged || !d.Lease.Effective || d.Lease.Owner != "agent-b" {
					t.Fatalf("data %+v", d)
				}
				r, _ := f.view(tlT0).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
				if !r.TransferClaim || r.ClaimedBy != "agent-b" || !r.TodoChanged {
					t.Fatalf("receipt %+v", r)
				}
				raw, _ := json.Marshal(o.Data)
				for _, k := range []string{`"transfer_claim":true`, `"claimed_by":"agent-b"`, `"todo_changed":true`} {
					if !strings.Contains(string(raw), k) {
						t.Errorf("json %s lacks %s", raw, k)
					}
				}
			}},
		{name: "transfer claim keeps the claim ttl", mode: HandoffHardLease, setup: claimBy("agent-a", "", 30), req: TransferRequest{TransferClaim: true},
			check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
				td := f.todo("todo_aaa")
				if td.ClaimTTLMinutes != 30 || td.ClaimExpiresAt == nil || !td.ClaimExpiresAt.Equal(tlAt(100).Add(30*time.Minute)) {
					t.Fatalf("todo %+v", td)
				}
			}},
		{name: "transfer claim by the claim's scope agent", mode: HandoffHardLease, setup: claimBy("agent-c", "agent-a", 0), req: TransferRequest{TransferClaim: true},
			check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
				if td := f.todo("todo_aaa"); td.ClaimedBy != "agent-b" || td.ClaimScopeAgentID != "" {
					t.Fatalf("todo %+v", td)
				}
			}},
		{name: "transfer claim to itself does not fabricate a claim edit", mode: HandoffHardLease, setup: then(claimBy("agent-a", "", 0), bound("agent-a")),
			req: TransferRequest{TransferClaim: true, NewOwner: "agent-a"}, check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
				d := resultOf(t, o)
				if *d.TodoChanged || *d.ClaimedBy != "agent-a" || f.todo("todo_aaa").BoundAgent != "agent-a" || !f.todo("todo_aaa").UpdatedAt.Equal(tlT0) {
					t.Fatalf("data %+v todo %+v", d, f.todo("todo_aaa"))
				}
				// Nor does the audit trail say the claim moved.
				if msg := o.Message(); o.ClaimMoved || !strings.Contains(msg, "\nLoopx-Claim-Moved: false\n") || strings.Contains(msg, "(claim moved)") {
					t.Fatalf("message says the claim moved:\n%s", msg)
				}
			}},
		{name: "transfer claim to its holder, the claimant of the sender's delegation", mode: HandoffHardLease, setup: claimBy("agent-b", "agent-a", 0), req: TransferRequest{TransferClaim: true},
			check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
				// The scope agent hands the lease back to the claimant: the
				// delegation ends (the todo is rewritten), so the claim moved.
				if td, d := f.todo("todo_aaa"), resultOf(t, o); td.ClaimedBy != "agent-b" || td.ClaimScopeAgentID != "" || !*d.TodoChanged || !o.ClaimMoved {
					t.Fatalf("todo %+v data %+v moved %v", td, d, o.ClaimMoved)
				}
			}},
		{name: "a moved claim is recorded as moved", mode: HandoffHardLease, setup: claimBy("agent-a", "", 0), req: TransferRequest{TransferClaim: true},
			check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
				if msg := o.Message(); !o.ClaimMoved || !strings.Contains(msg, "\nLoopx-Claim-Moved: true\n") || !strings.Contains(msg, " (claim moved)\n") {
					t.Fatalf("message:\n%s", msg)
				}
			}},
		{name: "a lease-only transfer never says the claim moved", mode: HandoffHardLease, setup: claimBy("agent-a", "", 0), req: TransferRequest{NewOwner: "agent-a"},
			check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
				if msg := o.Message(); o.ClaimMoved || !strings.Contains(msg, "\nLoopx-Claim-Moved: false\n") {
					t.Fatalf("message:\n%s", msg)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode := c.mode
			if mode == "" {
				mode = HandoffSoftClaim
			}
			f := newHeldFix(t, mode)
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
					req.IdempotencyKey = "k1"
				}
				if req.ExpectedVersion == nil {
					req.ExpectedVersion = tlI64(1)
				}
				if req.NewOwner == "" {
					req.NewOwner = "agent-b"
				}
				if req.NewIdempotencyKey == "" {
					req.NewIdempotencyKey = "k2"
				}
				if req.TTLSeconds == 0 {
					req.TTLSeconds = 600
				}
			}
			now := c.now
			if now.IsZero() {
				now = tlAt(100)
			}
			before, beforeTodo := f.lease("todo_aaa"), f.todo("todo_aaa")
			o, err := f.run(now, func(v *View) (*Outcome, error) { return Transfer(v, req, now) })
			e := wantCode(t, err, c.code)
			if c.code != "" {
				if !reflect.DeepEqual(before, f.lease("todo_aaa")) || !reflect.DeepEqual(beforeTodo, f.todo("todo_aaa")) {
					t.Fatal("refused transfer changed records")
				}
			} else {
				if o.Operation != OpLeaseTransfer || o.Status != StatusApplied || !o.Write || !o.BoardChanged {
					t.Fatalf("outcome %+v", o)
				}
				after := f.todo("todo_aaa")
				if after.LeaseEpoch != f.lease("todo_aaa").Epoch {
					t.Fatalf("todo records lease epoch %d, the lease is at %d", after.LeaseEpoch, f.lease("todo_aaa").Epoch)
				}
				if c := *beforeTodo; !req.TransferClaim {
					c.LeaseEpoch = after.LeaseEpoch // only the fencing token's high-water mark moves
					if !reflect.DeepEqual(&c, after) {
						t.Fatal("transfer without --transfer-claim changed the todo")
					}
				}
			}
			if c.check != nil {
				c.check(t, f, o, e)
			}
		})
	}
}

func TestTransferReplay(t *testing.T) {
	f := newHeldFix(t, HandoffHardLease)
	f.editTodo("todo_aaa", func(td *Todo) { td.ClaimedBy = "agent-a" })
	req := TransferRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 600, TransferClaim: true}
	o := f.ok(f.transfer(tlAt(10), req))
	r, _ := f.view(tlT0).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
	// agent-b renews and moves the claim back to agent-a by hand; the
	// historical replay still reports agent-b.
	f.ok(f.renew(tlAt(20), RenewRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "k2", ExpectedVersion: tlI64(2), TTLSeconds: 600}))
	f.editTodo("todo_aaa", func(td *Todo) { td.ClaimedBy = "agent-c" })
	o2 := f.ok(f.transfer(tlAt(30), req))
	d := resultOf(t, o2)
	if o2.Status != StatusReplayed || o2.Write || !reflect.DeepEqual(d.OriginalReceipt, r) || *d.ClaimedBy != "agent-b" || d.Lease.Owner != "agent-b" || d.Lease.Version != 3 {
		t.Fatalf("outcome %+v data %+v", o2, d)
	}
	if f.todo("todo_aaa").ClaimedBy != "agent-c" {
		t.Fatal("replay restored the historical claim")
	}
	for name, change := range map[string]func(r *TransferRequest){
		"without --transfer-claim": func(r *TransferRequest) { r.TransferClaim = false },
		"retargeted":               func(r *TransferRequest) { r.NewOwner = "agent-c" },
		"other receiver key":       func(r *TransferRequest) { r.NewIdempotencyKey = "k4" },
		"other ttl":                func(r *TransferRequest) { r.TTLSeconds = 60 },
	} {
		r2 := req
		change(&r2)
		_, err := f.transfer(tlAt(40), r2)
		if e, ok := AsError(err); !ok || e.Code != CodeIdempotencyKeyReuse {
			t.Errorf("%s: want idempotency_key_reuse, got %v", name, err)
		}
	}
	// The old sender cannot act any more.
	_, err := f.renew(tlAt(40), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(3), TTLSeconds: 60})
	wantCode(t, err, CodeLeaseProofMismatch)
	// Two executions later the receipt has left the lease record
	// (retention.go): on a view without a receipt archive (history:
	// TestReceiptArchive) the retry is decided afresh and refused, writing
	// nothing.
	f.editTodo("todo_aaa", func(td *Todo) { td.ClaimedBy = "agent-b" })
	f.ok(f.transfer(tlAt(50), TransferRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "k2", ExpectedVersion: tlI64(3), NewOwner: "agent-c", NewIdempotencyKey: "k3", TTLSeconds: 600, TransferClaim: true}))
	before := f.lease("todo_aaa")
	_, err = f.transfer(tlAt(60), req)
	wantCode(t, err, CodeVersionMismatch)
	if !reflect.DeepEqual(before, f.lease("todo_aaa")) || f.todo("todo_aaa").ClaimedBy != "agent-c" {
		t.Fatal("a retry past its receipt changed the lease or the claim")
	}
}

// TestSeedSequence is the seed's example: a lease at version 3 → transfer
// (v4, epoch+1) → renew (v5) → release (v5 kept).
func TestSeedSequence(t *testing.T) {
	f := newTLFix(t, HandoffSoftClaim, []string{"agent-a", "agent-b"}, "todo_work")
	f.mustAcquire(tlAt(0), "todo_work", "agent-a", "execution-a", 0, "src/**")
	f.ok(f.renew(tlAt(60), RenewRequest{Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "execution-a", ExpectedVersion: tlI64(1), TTLSeconds: 600}))
	f.ok(f.renew(tlAt(120), RenewRequest{Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "execution-a", ExpectedVersion: tlI64(2), TTLSeconds: 600}))
	insp := f.ok(f.run(tlAt(130), func(v *View) (*Outcome, error) { return Inspect(v, tlGoal, "todo_work", tlAt(130)) }))
	if l := resultOf(t, insp).Lease; l.Version != 3 || l.Epoch != 1 || l.Owner != "agent-a" {
		t.Fatalf("start %+v", l)
	}

	o := f.ok(f.transfer(tlAt(200), TransferRequest{Todo: "todo_work", Owner: "agent-a", IdempotencyKey: "execution-a", ExpectedVersion: tlI64(3),
		NewOwner: "agent-b", NewIdempotencyKey: "execution-b", TTLSeconds: 600}))
	if o.Version != 4 || o.Epoch != 2 || o.Subject() != "task-lease transfer g/todo_work by agent-a to agent-b: v4 e2" {
		t.Fatalf("transfer %+v %q", o, o.Subject())
	}
	o = f.ok(f.renew(tlAt(300), RenewRequest{Todo: "todo_work", Owner: "agent-b", IdempotencyKey: "execution-b", ExpectedVersion: tlI64(4), TTLSeconds: 600}))
	if o.Version != 5 || o.Epoch != 2 || o.BoardChanged {
		t.Fatalf("renew %+v", o)
	}
	if l := f.lease("todo_work"); !l.ExpiresAt.Equal(tlAt(900)) || l.Owner != "agent-b" {
		t.Fatalf("renewed lease %+v", l)
	}
	o = f.ok(f.release(tlAt(400), ReleaseRequest{Todo: "todo_work", Owner: "agent-b", IdempotencyKey: "execution-b", ExpectedVersion: tlI64(5)}))
	if o.Version != 5 || o.Epoch != 2 || o.Status != StatusApplied || !o.BoardChanged {
		t.Fatalf("release %+v", o)
	}
	l := f.lease("todo_work")
	if l.Version != 5 || l.Epoch != 2 || l.Status != LeaseReleased || l.ReleasedAt == nil || !l.ReleasedAt.Equal(tlAt(400)) ||
		len(l.Holders) != 2 || l.Holders[1].EndReason != EndReleased {
		t.Fatalf("released lease %+v", l)
	}
	if lv := resultOf(t, o).Lease; lv.Effective || lv.Status != LeaseReleased {
		t.Fatalf("released view %+v", lv)
	}
	// A new execution uses a new key and the current version.
	f.mustAcquire(tlAt(500), "todo_work", "agent-a", "execution-c", 5)
	if l := f.lease("todo_work"); l.Version != 6 || l.Epoch != 3 {
		t.Fatalf("new execution %+v", l)
	}
}
