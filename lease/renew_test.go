package lease

import (
	"reflect"
	"testing"
	"time"
)

// newHeldFix: todo_aaa leased by agent-a/k1 at version 1 (acquired at 0, 600 s, scope src/**).
func newHeldFix(t tlTB, mode string) *tlFix {
	f := newTLFix(t, mode, tlAgents, "todo_aaa", "todo_bbb")
	f.mustAcquire(tlAt(0), "todo_aaa", "agent-a", "k1", 0, "src/**")
	return f
}

func TestRenewAdmission(t *testing.T) {
	type tc struct {
		name  string
		setup func(f *tlFix)
		req   RenewRequest
		raw   bool
		now   time.Time
		code  Code
		check func(t *testing.T, f *tlFix, o *Outcome, e *Error)
	}
	cases := []tc{
		{name: "missing goal id", req: RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), TTLSeconds: 60}, raw: true, code: CodeInvalidGoalID},
		{name: "missing todo id", req: RenewRequest{Goal: tlGoal, Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), TTLSeconds: 60}, raw: true, code: CodeInvalidTodoID},
		{name: "missing owner", req: RenewRequest{Goal: tlGoal, Todo: "todo_aaa", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), TTLSeconds: 60}, raw: true, code: CodeInvalidAgentID},
		{name: "missing key", req: RenewRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", ExpectedVersion: tlI64(1), TTLSeconds: 60}, raw: true, code: CodeInvalidIdempotencyKey},
		{name: "missing expected version", req: RenewRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", TTLSeconds: 60}, raw: true, code: CodeVersionRequired},
		{name: "negative expected version", req: RenewRequest{ExpectedVersion: tlI64(-2)}, code: CodeInvalidRequest},
		{name: "ttl out of range", req: RenewRequest{TTLSeconds: -5}, code: CodeInvalidTTL},
		{name: "goal not found", req: RenewRequest{Goal: "nope"}, code: CodeGoalNotFound},
		{name: "goal archived", setup: func(f *tlFix) { f.editGoal(func(g *Goal) { g.Status = GoalArchived }) }, code: CodeGoalArchived},
		{name: "todo not found", req: RenewRequest{Todo: "todo_zzz"}, code: CodeTodoNotFound},
		{name: "todo without lease", req: RenewRequest{Todo: "todo_bbb"}, code: CodeLeaseNotActive},
		{name: "expired lease", now: tlAt(600), code: CodeLeaseNotActive},
		{name: "released lease", setup: func(f *tlFix) {
			f.ok(f.release(tlAt(10), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}))
		}, code: CodeLeaseNotActive},
		{name: "stale version", req: RenewRequest{ExpectedVersion: tlI64(0)}, code: CodeVersionMismatch,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["expected_version"] != int64(0) || e.Details["current_version"] != int64(1) || e.Details["provider"] != "git" || e.Details["revision"] != "rev2" {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "future version", req: RenewRequest{ExpectedVersion: tlI64(2)}, code: CodeVersionMismatch},
		{name: "other owner", req: RenewRequest{Owner: "agent-b"}, code: CodeLeaseProofMismatch},
		{name: "other key", req: RenewRequest{IdempotencyKey: "k2"}, code: CodeLeaseProofMismatch},
		{name: "todo done", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Status = TodoDone }) }, code: CodeTodoNotOpen},
		{name: "todo archived", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Archived = true }) }, code: CodeTodoArchived},
		{name: "owner unregistered", setup: func(f *tlFix) { f.setAgent("agent-a", AgentUnregistered) }, code: CodeAgentNotRegistered},
		{name: "owner registered again after the grant", setup: func(f *tlFix) {
			f.edit(func(v *View) {
				v.PutAgent(tlGoal, &Agent{ID: "agent-a", Role: RoleAgent, Status: AgentRegistered, Registration: 7, RegisteredAt: tlAt(5), UpdatedAt: tlAt(5)})
			})
		}, code: CodeLeaseNotActive},
		{name: "owner excluded", setup: func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) { td.ExcludedAgents = []string{"agent-a"} })
		}, code: CodeAgentExcluded},
		{name: "todo bound to another agent", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.BoundAgent = "agent-b" }) }, code: CodeBoundAgentMismatch},
		{name: "claim moved to another agent", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.ClaimedBy = "agent-b" }) }, code: CodeClaimConflict},
		{name: "claimed by the owner", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.ClaimedBy = "agent-a" }) }},
		{name: "version exhausted", setup: func(f *tlFix) {
			l := f.lease("todo_aaa")
			l.Version = MaxGeneration
			f.putLease(l)
		}, req: RenewRequest{ExpectedVersion: tlI64(MaxGeneration)}, code: CodeLeaseGenerationExhausted},
		{name: "epoch at the limit does not block renewal", setup: func(f *tlFix) {
			l := f.lease("todo_aaa")
			l.Epoch = MaxGeneration
			f.putLease(l)
		}},
		{name: "renewal", req: RenewRequest{TTLSeconds: 900}, check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
			l := withoutReceipts(t, f.lease("todo_aaa"), o.ReceiptID)
			at := tlAt(100)
			want := &Lease{TodoID: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", Version: 2, Epoch: 1, Status: LeaseActive,
				WriteScopes: []string{"src/**"}, AcquiredAt: tlT0, RenewedAt: &at, ExpiresAt: tlAt(1000),
				Holders: []Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "k1", StartedAt: tlT0}}}
			if !reflect.DeepEqual(l, want) {
				t.Fatalf("lease\n%+v\nwant\n%+v", l, want)
			}
			if o.Version != 2 || o.Epoch != 1 || !o.BoardChanged {
				t.Fatalf("outcome %+v (a renewal for another TTL changes the board)", o)
			}
		}},
		{name: "renewal shortens the expiry", req: RenewRequest{TTLSeconds: 1}, check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
			if l := f.lease("todo_aaa"); !l.ExpiresAt.Equal(tlAt(101)) {
				t.Fatalf("expires %v", l.ExpiresAt)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newHeldFix(t, HandoffSoftClaim)
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
				if req.TTLSeconds == 0 {
					req.TTLSeconds = 300
				}
			}
			now := c.now
			if now.IsZero() {
				now = tlAt(100)
			}
			before := f.lease("todo_aaa")
			o, err := f.run(now, func(v *View) (*Outcome, error) { return Renew(v, req, now) })
			e := wantCode(t, err, c.code)
			if c.code != "" {
				if !reflect.DeepEqual(before, f.lease("todo_aaa")) {
					t.Fatal("refused renew changed the lease")
				}
			} else if o.Operation != OpLeaseRenew || o.Status != StatusApplied || !o.Write || o.Actor != req.Owner ||
				o.BoardChanged != (time.Duration(req.TTLSeconds)*time.Second != ExecutionTTL(before)) {
				t.Fatalf("outcome %+v", o)
			}
			if c.check != nil {
				c.check(t, f, o, e)
			}
		})
	}
}

func TestRenewReplay(t *testing.T) {
	req := RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), TTLSeconds: 300}
	setup := func(t *testing.T) (*tlFix, *Outcome, *Receipt) {
		f := newHeldFix(t, HandoffSoftClaim)
		o := f.ok(f.renew(tlAt(100), req))
		r, err := f.view(tlT0).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
		if err != nil || r == nil || r.Lease.Version != 2 {
			t.Fatalf("receipt %+v: %v", r, err)
		}
		return f, o, r
	}
	replays := map[string]func(f *tlFix){
		"immediately": func(f *tlFix) {},
		"after another agent took a todo": func(f *tlFix) {
			f.mustAcquire(tlAt(150), "todo_bbb", "agent-b", "kb", 0)
		},
		"after unregistration and goal archive": func(f *tlFix) {
			f.setAgent("agent-a", AgentUnregistered)
			f.editGoal(func(g *Goal) { g.Status = GoalArchived })
		},
	}
	// Once a later operation of the execution was decided, the renewal's
	// receipt has left the lease record (retention.go): on a view without
	// a receipt archive (history: TestReceiptArchive) its retry is decided
	// afresh, refused, and writes nothing.
	gone := map[string]struct {
		after func(f *tlFix)
		code  Code
	}{
		"after another renewal": {func(f *tlFix) {
			f.ok(f.renew(tlAt(150), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(2), TTLSeconds: 300}))
		}, CodeLeaseNotActive},
		"after transfer": {func(f *tlFix) {
			f.ok(f.transfer(tlAt(150), TransferRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(2), NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 300}))
		}, CodeLeaseNotActive},
		"after release and expiry": {func(f *tlFix) {
			f.ok(f.release(tlAt(150), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(2)}))
		}, CodeLeaseNotActive},
	}
	for name, c := range gone {
		t.Run(name, func(t *testing.T) {
			f, _, _ := setup(t)
			c.after(f)
			before := f.lease("todo_aaa")
			_, err := f.renew(tlAt(5000), req)
			wantCode(t, err, c.code)
			if !reflect.DeepEqual(before, f.lease("todo_aaa")) {
				t.Fatal("the retry changed the lease")
			}
		})
	}
	for name, after := range replays {
		t.Run(name, func(t *testing.T) {
			f, _, r := setup(t)
			after(f)
			cur := f.lease("todo_aaa")
			o := f.ok(f.renew(tlAt(5000), req))
			d := resultOf(t, o)
			if o.Status != StatusReplayed || o.Write || o.BoardChanged || o.ReplayOf != "rev2" || o.ReceiptID != r.ID {
				t.Fatalf("outcome %+v", o)
			}
			if !reflect.DeepEqual(d.OriginalReceipt, r) {
				t.Fatalf("original receipt %+v, want %+v", d.OriginalReceipt, r)
			}
			if d.Lease == nil || d.Lease.Version != cur.Version || d.Lease.Owner != cur.Owner {
				t.Fatalf("lease %+v, want the current %+v", d.Lease, cur)
			}
			if !reflect.DeepEqual(cur, f.lease("todo_aaa")) {
				t.Fatal("replay changed the lease")
			}
		})
	}
	t.Run("changed ttl is key reuse", func(t *testing.T) {
		f, _, _ := setup(t)
		r2 := req
		r2.TTLSeconds = 301
		_, err := f.renew(tlAt(120), r2)
		wantCode(t, err, CodeIdempotencyKeyReuse)
	})
}
