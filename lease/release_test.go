package lease

import (
	"reflect"
	"testing"
	"time"
)

func TestReleaseAdmission(t *testing.T) {
	endedElsewhere := func(f *tlFix) { // e.g. released by todo complete: no release receipt exists
		l := f.lease("todo_aaa")
		EndExecution(l, tlAt(50), "completed")
		f.putLease(l)
	}
	released := func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
		l := f.lease("todo_aaa")
		if l.Status != LeaseReleased || l.Version != 1 || l.Epoch != 1 || !l.ReleasedAt.Equal(tlAt(100)) ||
			l.Holders[0].EndReason != EndReleased || !l.Holders[0].EndedAt.Equal(tlAt(100)) {
			t.Fatalf("lease %+v", l)
		}
		if o.Status != StatusApplied || !o.Write || !o.BoardChanged || o.Version != 1 || o.Epoch != 1 {
			t.Fatalf("outcome %+v", o)
		}
		if lv := resultOf(t, o).Lease; lv.Effective || lv.Status != LeaseReleased {
			t.Fatalf("view %+v", lv)
		}
	}
	noChange := func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
		if o.Status != StatusNoChange || !o.Write || o.BoardChanged {
			t.Fatalf("outcome %+v", o)
		}
		r, _ := f.view(tlT0).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
		if r == nil || r.Status != StatusNoChange || r.Operation != OpLeaseRelease {
			t.Fatalf("receipt %+v", r)
		}
	}
	type tc struct {
		name      string
		setup     func(f *tlFix)
		req       ReleaseRequest
		raw       bool
		now       time.Time
		code      Code
		keepLease bool // the lease must not change (refusals and no_change)
		check     func(t *testing.T, f *tlFix, o *Outcome, e *Error)
	}
	cases := []tc{
		{name: "missing goal id", req: ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}, raw: true, code: CodeInvalidGoalID},
		{name: "missing todo id", req: ReleaseRequest{Goal: tlGoal, Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}, raw: true, code: CodeInvalidTodoID},
		{name: "bad owner", req: ReleaseRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "A", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}, raw: true, code: CodeInvalidAgentID},
		{name: "missing key", req: ReleaseRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", ExpectedVersion: tlI64(1)}, raw: true, code: CodeInvalidIdempotencyKey},
		{name: "missing expected version", req: ReleaseRequest{Goal: tlGoal, Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1"}, raw: true, code: CodeVersionRequired},
		{name: "goal not found", req: ReleaseRequest{Goal: "nope"}, code: CodeGoalNotFound},
		{name: "todo not found", req: ReleaseRequest{Todo: "todo_zzz"}, code: CodeTodoNotFound},
		{name: "release", check: released},
		{name: "expired lease", now: tlAt(5000), check: func(t *testing.T, f *tlFix, o *Outcome, _ *Error) {
			if l := f.lease("todo_aaa"); l.Status != LeaseReleased || l.Version != 1 {
				t.Fatalf("lease %+v", l)
			}
		}},
		{name: "owner unregistered", setup: func(f *tlFix) { f.setAgent("agent-a", AgentUnregistered) }, check: released},
		{name: "owner excluded", setup: func(f *tlFix) {
			f.editTodo("todo_aaa", func(td *Todo) { td.ExcludedAgents = []string{"agent-a"} })
		}, check: released},
		{name: "claim moved", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.ClaimedBy = "agent-b" }) }, check: released},
		{name: "todo done", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Status = TodoDone }) }, check: released},
		{name: "todo archived", setup: func(f *tlFix) { f.editTodo("todo_aaa", func(td *Todo) { td.Archived = true }) }, check: released},
		{name: "goal archived", setup: func(f *tlFix) { f.editGoal(func(g *Goal) { g.Status = GoalArchived }) }, check: released},
		{name: "generation at the limit", setup: func(f *tlFix) {
			l := f.lease("todo_aaa")
			l.Version, l.Epoch = MaxGeneration, MaxGeneration
			f.putLease(l)
		}, req: ReleaseRequest{ExpectedVersion: tlI64(MaxGeneration)}, check: func(t *testing.T, f *tlFix, _ *Outcome, _ *Error) {
			if l := f.lease("todo_aaa"); l.Status != LeaseReleased || l.Version != MaxGeneration {
				t.Fatalf("lease %+v", l)
			}
		}},
		{name: "stale version", req: ReleaseRequest{ExpectedVersion: tlI64(0)}, code: CodeVersionMismatch},
		{name: "other owner", req: ReleaseRequest{Owner: "agent-b"}, code: CodeLeaseProofMismatch},
		{name: "other key", req: ReleaseRequest{IdempotencyKey: "k2"}, code: CodeLeaseProofMismatch},
		{name: "missing lease at version 0", req: ReleaseRequest{Todo: "todo_bbb", ExpectedVersion: tlI64(0)}, check: func(t *testing.T, f *tlFix, o *Outcome, e *Error) {
			noChange(t, f, o, e)
			if l := f.lease("todo_bbb"); l != nil {
				t.Fatalf("lease created: %+v", l)
			}
			if d := resultOf(t, o); d.Lease != nil || o.Version != 0 {
				t.Fatalf("data %+v", d)
			}
		}},
		{name: "missing lease at another version", req: ReleaseRequest{Todo: "todo_bbb", ExpectedVersion: tlI64(1)}, code: CodeVersionMismatch,
			check: func(t *testing.T, _ *tlFix, _ *Outcome, e *Error) {
				if e.Details["current_version"] != int64(0) {
					t.Fatalf("details %v", e.Details)
				}
			}},
		{name: "already released matching lease", setup: endedElsewhere, keepLease: true, check: noChange},
		{name: "already released, other owner", setup: endedElsewhere, req: ReleaseRequest{Owner: "agent-b"}, code: CodeLeaseProofMismatch},
		{name: "already released, stale version", setup: endedElsewhere, req: ReleaseRequest{ExpectedVersion: tlI64(2)}, code: CodeVersionMismatch},
		{name: "after transfer the old proof is refused", setup: func(f *tlFix) {
			f.ok(f.transfer(tlAt(10), TransferRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 600}))
		}, code: CodeVersionMismatch},
		{name: "after transfer the old owner with the current version", setup: func(f *tlFix) {
			f.ok(f.transfer(tlAt(10), TransferRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1), NewOwner: "agent-b", NewIdempotencyKey: "k2", TTLSeconds: 600}))
		}, req: ReleaseRequest{ExpectedVersion: tlI64(2)}, code: CodeLeaseProofMismatch},
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
			}
			now := c.now
			if now.IsZero() {
				now = tlAt(100)
			}
			before := f.lease("todo_aaa")
			o, err := f.run(now, func(v *View) (*Outcome, error) { return Release(v, req, now) })
			e := wantCode(t, err, c.code)
			if (c.code != "" || c.keepLease) && !reflect.DeepEqual(before, f.lease("todo_aaa")) {
				t.Fatal("the lease changed")
			}
			if c.code == "" && (o.Operation != OpLeaseRelease || o.Actor != req.Owner) {
				t.Fatalf("outcome %+v", o)
			}
			if c.check != nil {
				c.check(t, f, o, e)
			}
		})
	}
}

func TestReleaseReplay(t *testing.T) {
	f := newHeldFix(t, HandoffSoftClaim)
	req := ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}
	o := f.ok(f.release(tlAt(10), req))
	r, _ := f.view(tlT0).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
	// A later execution does not change the answer to the old request.
	f.mustAcquire(tlAt(20), "todo_aaa", "agent-b", "k2", 1)
	o2 := f.ok(f.release(tlAt(30), req))
	d := resultOf(t, o2)
	if o2.Status != StatusReplayed || o2.Write || o2.ReplayOf != "rev2" || !reflect.DeepEqual(d.OriginalReceipt, r) || d.Lease.Owner != "agent-b" || !d.Lease.Effective {
		t.Fatalf("outcome %+v data %+v", o2, d)
	}
	// no_change receipts replay too.
	nreq := ReleaseRequest{Todo: "todo_bbb", Owner: "agent-c", IdempotencyKey: "kc", ExpectedVersion: tlI64(0)}
	n1 := f.ok(f.release(tlAt(40), nreq))
	f.mustAcquire(tlAt(50), "todo_bbb", "agent-c", "kc", 0)
	n2 := f.ok(f.release(tlAt(60), nreq))
	if n1.Status != StatusNoChange || n2.Status != StatusReplayed || n2.ReceiptID != n1.ReceiptID || resultOf(t, n2).OriginalReceipt.Status != StatusNoChange {
		t.Fatalf("no_change %+v then %+v", n1, n2)
	}
	if l := f.lease("todo_bbb"); l.Status != LeaseActive {
		t.Fatalf("replayed no_change touched the lease %+v", l)
	}
}
