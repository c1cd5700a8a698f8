package lease

import (
	"errors"
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
	_, err := f.renew(tlAt(30), renew1) // an earlier one's receipt left (and this view has no receipt archive: TestReceiptArchive)
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
	full := AcquireReceiptID(tlGoal, "todo_aaa", "agent-a", "e1")
	digest := acquireDigest(full, tlI64(0), 600, []string{"src/**"})
	if acq1ID != full[:ShortHashDigits] || !hashSetHas(l.RetiredAcquires, retiredAcquire(acq1ID, digest[:ShortHashDigits])) {
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
	// E1's release, retried: decided afresh, refused (no receipt archive
	// here: TestReceiptArchive).
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

// historyArchive is a ReceiptArchive over the fixture's commits: every
// receipt any lease record held, with the version and epoch of the record
// that first held it, as the root package finds them in history.
type historyArchive struct {
	f     *tlFix
	seen  map[string]archived
	calls int
	err   error
}

type archived struct {
	r              Receipt
	version, epoch int64
}

func newHistoryArchive(f *tlFix) *historyArchive {
	h := &historyArchive{f: f, seen: map[string]archived{}}
	f.archive = h.find
	return h
}

// record notes the receipts todo's lease record holds now (call it after
// every commit).
func (h *historyArchive) record(todo string) {
	l := h.f.lease(todo)
	if l == nil {
		return
	}
	for _, r := range l.Receipts {
		if _, ok := h.seen[r.ID]; !ok {
			h.seen[r.ID] = archived{r: r, version: l.Version, epoch: l.Epoch}
		}
	}
}

func (h *historyArchive) find(goal, todo, id string, version, epoch int64) (*Receipt, error) {
	h.calls++
	if h.err != nil {
		return nil, h.err
	}
	a, ok := h.seen[id]
	if !ok && len(id) == 64 {
		a, ok = h.seen[id[:ShortHashDigits]] // as a store of format 4 keeps it
	}
	if !ok || goal != tlGoal || a.r.TodoID != todo || a.version < version || (epoch > 0 && a.epoch < epoch) {
		return nil, nil
	}
	r := a.r
	return &r, nil
}

// A renew, transfer or release whose receipt left the lease record is
// answered from history, as with the receipt (contract section 5); history
// is read only for a request that may have been decided before.
func TestReceiptArchive(t *testing.T) {
	f := newAcquireFix(t)
	h := newHistoryArchive(f)
	step := func(o *Outcome, err error) {
		t.Helper()
		f.ok(o, err)
		h.record("todo_aaa")
	}
	step(f.acquire(tlAt(0), AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(0), TTLSeconds: 600}))
	renew1 := RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(1), TTLSeconds: 600}
	step(f.renew(tlAt(10), renew1))
	step(f.renew(tlAt(20), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(2), TTLSeconds: 600}))
	rel1 := ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(3)}
	step(f.release(tlAt(30), rel1))
	step(f.acquire(tlAt(40), AcquireRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e2", ExpectedVersion: tlI64(3), TTLSeconds: 600}))
	tr2 := TransferRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e2", ExpectedVersion: tlI64(4),
		NewOwner: "agent-c", NewIdempotencyKey: "e3", TTLSeconds: 600}
	step(f.transfer(tlAt(50), tr2))
	step(f.renew(tlAt(60), RenewRequest{Todo: "todo_aaa", Owner: "agent-c", IdempotencyKey: "e3", ExpectedVersion: tlI64(5), TTLSeconds: 600}))
	step(f.release(tlAt(65), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-c", IdempotencyKey: "e3", ExpectedVersion: tlI64(6)}))
	step(f.acquire(tlAt(70), AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e4", ExpectedVersion: tlI64(6), TTLSeconds: 600}))
	for _, id := range []string{"e1", "e2"} {
		for _, r := range f.lease("todo_aaa").Receipts {
			if r.IdempotencyKey == id && r.Operation != OpLeaseAcquire {
				t.Fatalf("%s's %s receipt is still in the record: the archive is not exercised", id, r.Operation)
			}
		}
	}

	otherTTL := renew1
	otherTTL.TTLSeconds = 60
	neverDecided := renew1 // e1 was never at version 4
	neverDecided.ExpectedVersion = tlI64(4)
	tr2Other := tr2
	tr2Other.NewIdempotencyKey = "e9"
	cases := []struct {
		name      string
		op        func() (*Outcome, error)
		code      Code  // refusal, or "" for a replay
		decidedAt int   // the replay's original decision, seconds from tlT0
		reads     bool  // whether history is read
		archErr   error // the archive fails
	}{
		{name: "renew retried two executions later: replayed", op: func() (*Outcome, error) { return f.renew(tlAt(80), renew1) }, decidedAt: 10, reads: true},
		{name: "renew with other arguments: key reuse", op: func() (*Outcome, error) { return f.renew(tlAt(80), otherTTL) }, code: CodeIdempotencyKeyReuse, reads: true},
		{name: "release retried: replayed", op: func() (*Outcome, error) { return f.release(tlAt(80), rel1) }, decidedAt: 30, reads: true},
		{name: "transfer retried: replayed", op: func() (*Outcome, error) { return f.transfer(tlAt(80), tr2) }, decidedAt: 50, reads: true},
		{name: "transfer with another receiver key: key reuse", op: func() (*Outcome, error) { return f.transfer(tlAt(80), tr2Other) }, code: CodeIdempotencyKeyReuse, reads: true},
		{name: "a version the execution never had: decided afresh", op: func() (*Outcome, error) { return f.renew(tlAt(80), neverDecided) }, code: CodeVersionMismatch, reads: true},
		{name: "a key the todo never saw: no history read", op: func() (*Outcome, error) {
			return f.renew(tlAt(80), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "zz", ExpectedVersion: tlI64(1), TTLSeconds: 600})
		}, code: CodeVersionMismatch},
		{name: "a seen key under another owner: no history read", op: func() (*Outcome, error) {
			return f.renew(tlAt(80), RenewRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e1", ExpectedVersion: tlI64(1), TTLSeconds: 600})
		}, code: CodeVersionMismatch},
		{name: "the lease's version: no history read", op: func() (*Outcome, error) {
			return f.renew(tlAt(80), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(7), TTLSeconds: 600})
		}, code: CodeLeaseProofMismatch},
		{name: "a version above the lease's: no history read", op: func() (*Outcome, error) {
			return f.renew(tlAt(80), RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e4", ExpectedVersion: tlI64(8), TTLSeconds: 600})
		}, code: CodeVersionMismatch},
		{name: "expected version 0: no history read", op: func() (*Outcome, error) {
			return f.release(tlAt(80), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(0)})
		}, code: CodeVersionMismatch},
		{name: "history unreadable: the error, not a refusal", op: func() (*Outcome, error) { return f.renew(tlAt(80), renew1) }, reads: true, archErr: errTestArchive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.lease("todo_aaa")
			h.calls, h.err = 0, c.archErr
			o, err := c.op()
			h.err = nil
			if (h.calls > 0) != c.reads {
				t.Fatalf("history read %d times, want reads=%v", h.calls, c.reads)
			}
			switch {
			case c.archErr != nil:
				if !errors.Is(err, c.archErr) {
					t.Fatalf("got %v, want the archive's error", err)
				}
			case c.code != "":
				wantCode(t, err, c.code)
			default:
				if err != nil || o.Status != StatusReplayed {
					t.Fatalf("got %v %v, want replayed", o, err)
				}
				d := o.Data.(LeaseResult)
				if d.OriginalReceipt == nil || !d.OriginalReceipt.DecidedAt.Equal(tlAt(c.decidedAt)) {
					t.Fatalf("original receipt %+v, want decided at +%ds", d.OriginalReceipt, c.decidedAt)
				}
			}
			if !reflect.DeepEqual(before, f.lease("todo_aaa")) {
				t.Fatal("a retry changed the lease")
			}
		})
	}
}

var errTestArchive = errors.New("history unreadable")
