package lease

import (
	"strings"
	"testing"
)

// TestFormat4ShortReceipts: a store of format 3 keeps receipt ids and
// request digests whole; upgraded in place to format 4, it keeps them as
// their first 24 digits from then on. Every retry of an operation decided
// before the upgrade is still answered from its whole receipt (replayed,
// or idempotency_key_reuse with other arguments), an acquire retired before
// the upgrade is still recognised, and the operations decided after it are
// answered from their short receipts alike.
func TestFormat4ShortReceipts(t *testing.T) {
	f := newAcquireFix(t)
	f.edit(func(v *View) {
		m, _ := v.Meta()
		m.FormatVersion = 3
		m.StoreID = strings.Repeat("ab", 16)
		v.PutMeta(m)
	})
	acq1 := AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(0), TTLSeconds: 600}
	o := f.ok(f.acquire(tlAt(0), acq1))
	if len(o.ReceiptID) != 64 {
		t.Fatalf("format 3 wrote receipt id %q", o.ReceiptID)
	}
	renew1 := RenewRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(1), TTLSeconds: 600}
	f.ok(f.renew(tlAt(10), renew1))
	rel1 := ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e1", ExpectedVersion: tlI64(2)}
	f.ok(f.release(tlAt(20), rel1))
	for _, r := range f.lease("todo_aaa").Receipts {
		if len(r.ID) != 64 || len(r.RequestDigest) != 64 {
			t.Fatalf("format 3 kept %+v", r)
		}
	}

	// The upgrade: a recorded commit of its own, nothing else rewritten.
	up := f.ok(f.run(tlAt(30), func(v *View) (*Outcome, error) { return Upgrade(v, UpgradeRequest{FormatVersion: 4}, tlAt(30)) }))
	if up.Status != StatusApplied {
		t.Fatalf("upgrade: %s", up.Status)
	}
	if m, _ := f.view(tlAt(30)).Meta(); m.FormatVersion != 4 {
		t.Fatalf("format %d after the upgrade", m.FormatVersion)
	}

	// Retries of what format 3 decided, answered from the whole receipts
	// the record keeps (the execution's acquire and its latest operation).
	if o := f.ok(f.release(tlAt(31), rel1)); o.Status != StatusReplayed || len(o.ReceiptID) != 64 {
		t.Fatalf("release retried after the upgrade: %s %q", o.Status, o.ReceiptID)
	}
	other1 := acq1
	other1.TTLSeconds = 60
	_, err := f.acquire(tlAt(31), other1)
	wantCode(t, err, CodeIdempotencyKeyReuse)
	_, err = f.acquire(tlAt(31), acq1) // released: no longer current
	wantCode(t, err, CodeExecutionNotCurrent)

	// New operations keep short receipts, and are answered from them.
	ver := func() *int64 { return tlI64(f.lease("todo_aaa").Version) }
	acq2 := AcquireRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e2", ExpectedVersion: ver(), TTLSeconds: 600}
	o = f.ok(f.acquire(tlAt(40), acq2))
	full := AcquireReceiptID(tlGoal, "todo_aaa", "agent-b", "e2")
	if o.ReceiptID != full[:ShortHashDigits] {
		t.Fatalf("format 4 wrote receipt id %q, want %q", o.ReceiptID, full[:ShortHashDigits])
	}
	if r := f.lease("todo_aaa").Receipts; len(r[len(r)-1].RequestDigest) != ShortHashDigits {
		t.Fatalf("format 4 kept digest %q", r[len(r)-1].RequestDigest)
	}
	if o := f.ok(f.acquire(tlAt(41), acq2)); o.Status != StatusReplayed || o.ReceiptID != full[:ShortHashDigits] {
		t.Fatalf("acquire retried: %s %q", o.Status, o.ReceiptID)
	}
	otherAcq := acq2
	otherAcq.TTLSeconds = 60
	_, err = f.acquire(tlAt(41), otherAcq)
	wantCode(t, err, CodeIdempotencyKeyReuse)
	tr2 := TransferRequest{Todo: "todo_aaa", Owner: "agent-b", IdempotencyKey: "e2", ExpectedVersion: ver(),
		NewOwner: "agent-c", NewIdempotencyKey: "e3", TTLSeconds: 600}
	f.ok(f.transfer(tlAt(50), tr2))
	if o := f.ok(f.transfer(tlAt(51), tr2)); o.Status != StatusReplayed {
		t.Fatalf("transfer retried: %s", o.Status)
	}
	// Two executions later the format-3 acquire has left the record: it is
	// recognised from its retired hashes (made whole), the format-4 one
	// from its (made short).
	f.ok(f.release(tlAt(60), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-c", IdempotencyKey: "e3", ExpectedVersion: ver()}))
	f.ok(f.acquire(tlAt(70), AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e4", ExpectedVersion: ver(), TTLSeconds: 600}))
	f.ok(f.release(tlAt(75), ReleaseRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "e4", ExpectedVersion: ver()}))
	f.ok(f.acquire(tlAt(80), AcquireRequest{Todo: "todo_aaa", Owner: "agent-c", IdempotencyKey: "e5", ExpectedVersion: ver(), TTLSeconds: 600}))
	for _, r := range f.lease("todo_aaa").Receipts {
		if r.IdempotencyKey == "e1" || r.IdempotencyKey == "e2" {
			t.Fatalf("%s's receipt is still in the record: retirement is not exercised", r.IdempotencyKey)
		}
	}
	for _, c := range []struct {
		req  AcquireRequest
		code Code
	}{{acq1, CodeExecutionNotCurrent}, {acq2, CodeExecutionNotCurrent}, {otherAcq, CodeIdempotencyKeyReuse}} {
		_, err = f.acquire(tlAt(90), c.req)
		wantCode(t, err, c.code)
	}
	_, err = f.acquire(tlAt(90), other1)
	wantCode(t, err, CodeIdempotencyKeyReuse)
}

// TestSameHash: a stored id or digest matches the whole hash, or its first
// 24 digits; nothing else.
func TestSameHash(t *testing.T) {
	full := AcquireReceiptID("g", "todo_aaa", "agent-a", "k")
	for _, c := range []struct {
		stored string
		want   bool
	}{
		{full, true},
		{full[:ShortHashDigits], true},
		{full[:ShortHashDigits-1], false},
		{full[:ShortHashDigits+1], false},
		{full[:32], false},
		{"", false},
		{AcquireReceiptID("g", "todo_aaa", "agent-a", "k2")[:ShortHashDigits], false},
	} {
		if got := SameHash(c.stored, full); got != c.want {
			t.Errorf("SameHash(%q) = %v, want %v", c.stored, got, c.want)
		}
	}
}
