package lease

import (
	"reflect"
	"testing"
)

// Which receipts a lease record keeps: the acquire and the latest other
// operation of the current and of the previous execution; what the retries
// of the others get.
func TestReceiptRetention(t *testing.T) {
	f := newAcquireFix(t)
	acq1 := AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(0), TTLSeconds: 600, WriteScopes: []string{"src/**"}}
	o := f.ok(f.acquire(tlAt(0), acq1))
	acq1ID := o.ReceiptID
	renew1 := RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(1), TTLSeconds: 600}
	f.ok(f.renew(tlAt(10), renew1))
	renew2 := RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(2), TTLSeconds: 600}
	f.ok(f.renew(tlAt(20), renew2))
	// E1: its acquire and its latest renewal.
	kept := func(want ...string) {
		t.Helper()
		var got []string
		for _, r := range f.lease("todo_aaa").Receipts {
			got = append(got, r.Operation+" "+r.IdempotencyKey)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("kept %q, want %q", got, want)
		}
	}
	kept("task-lease.acquire e1", "task-lease.renew e1")
	if o := f.ok(f.renew(tlAt(30), renew2)); o.Status != StatusReplayed {
		t.Fatalf("the latest renewal's retry: %s", o.Status)
	}
	_, err := f.renew(tlAt(30), renew1) // an earlier one's receipt left
	wantCode(t, err, CodeVersionMismatch)

	rel1 := ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(3)}
	f.ok(f.release(tlAt(40), rel1))
	kept("task-lease.acquire e1", "task-lease.release e1")
	// E2 (agent-b) starts: E1's receipts stay, as the previous execution's.
	f.mustAcquire(tlAt(50), "todo_aaa", "agent-b", "e2", 3)
	kept("task-lease.acquire e1", "task-lease.release e1", "task-lease.acquire e2")
	if o := f.ok(f.release(tlAt(55), rel1)); o.Status != StatusReplayed {
		t.Fatalf("E1's release retried during E2: %s", o.Status)
	}
	_, err = f.acquire(tlAt(55), acq1)
	if e := wantCode(t, err, CodeExecutionNotCurrent); e.Details["receipt_id"] != acq1ID {
		t.Fatalf("details %v", e.Details)
	}
	// E2 transfers to E3 (agent-c): E1 is two executions back.
	f.ok(f.transfer(tlAt(60), TransferRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e2", ExpectedVersion: tlI64(4),
		NewOwner: "agent-c", NewIdempotencyKey: "e3", TTLSeconds: 600}))
	kept("task-lease.acquire e2", "task-lease.transfer e2")
	l := f.lease("todo_aaa")
	if !hashSetHas(l.RetiredAcquires, retiredAcquire(acq1ID, acquireDigest(acq1ID, tlI64(0), 600, []string{"src/**"}))) {
		t.Fatal("E1's acquire is not remembered")
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	before := f.lease("todo_aaa")
	// E1's acquire, retried: still execution_not_current (from the retired
	// set); with other arguments, key reuse.
	_, err = f.acquire(tlAt(70), acq1)
	if e := wantCode(t, err, CodeExecutionNotCurrent); e.Details["receipt_id"] != acq1ID || e.Details["current_epoch"] != int64(3) {
		t.Fatalf("details %v", e.Details)
	}
	other := acq1
	other.TTLSeconds = 60
	_, err = f.acquire(tlAt(70), other)
	wantCode(t, err, CodeIdempotencyKeyReuse)
	// E1's release, retried: decided afresh, refused.
	_, err = f.release(tlAt(70), rel1)
	wantCode(t, err, CodeVersionMismatch)
	if !reflect.DeepEqual(before, f.lease("todo_aaa")) {
		t.Fatal("a retry changed the lease")
	}
	// E2's transfer, retried (the previous execution's latest): replayed.
	if o := f.ok(f.transfer(tlAt(70), TransferRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e2", ExpectedVersion: tlI64(4),
		NewOwner: "agent-c", NewIdempotencyKey: "e3", TTLSeconds: 600})); o.Status != StatusReplayed {
		t.Fatalf("E2's transfer retried: %s", o.Status)
	}
}

// A no_change release keeps its receipt in a file: the lease record is not
// touched.
func TestNoChangeReceiptFile(t *testing.T) {
	f := newAcquireFix(t)
	o := f.ok(f.release(tlAt(0), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: tlI64(0)}))
	if o.Status != StatusNoChange || f.lease("todo_aaa") != nil {
		t.Fatalf("%s, lease %+v", o.Status, f.lease("todo_aaa"))
	}
	if r, _ := f.view(tlT0).Receipt(tlGoal, o.ReceiptID); r == nil {
		t.Fatal("no receipt file")
	}
	f.mustAcquire(tlAt(10), "todo_aaa", "agent-a", "k1", 0)
	rel := ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(1)}
	f.ok(f.release(tlAt(20), rel))
	released := f.lease("todo_aaa")
	// The applied release's retry replays; a release at the same version by
	// a request the record no longer knows (a receipt file removed by hand)
	// is no_change and leaves the lease record as it was.
	if o := f.ok(f.release(tlAt(30), rel)); o.Status != StatusReplayed {
		t.Fatalf("retry: %s", o.Status)
	}
	f.edit(func(v *View) {
		l, _ := v.Lease(tlGoal, "todo_aaa")
		l.Receipts = nil
		v.PutLease(tlGoal, l)
	})
	released.Receipts = nil
	o = f.ok(f.release(tlAt(40), rel))
	if o.Status != StatusNoChange || !reflect.DeepEqual(f.lease("todo_aaa"), released) {
		t.Fatalf("%s, lease %+v", o.Status, f.lease("todo_aaa"))
	}
	if r, _ := f.view(tlT0).Receipt(tlGoal, o.ReceiptID); r == nil || r.Status != StatusNoChange {
		t.Fatalf("receipt file %+v", r)
	}
}
