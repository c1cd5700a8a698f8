package lease

import (
	"fmt"
	"strings"
	"testing"
)

// After more executions than a record lists, the lease keeps the last
// MaxHolders, its size stays bounded, its epoch counts every execution, and
// no key the todo has seen (kept or retired) starts a new execution.
func TestHoldersBounded(t *testing.T) {
	f := newAcquireFix(t)
	const n = MaxHolders + 15
	var sizes []int
	at := 0
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("exec-%02d", i)
		l := f.lease("todo_aaa")
		owner := tlAgents[i%2]
		if i%3 == 0 && l != nil && l.Status == LeaseActive {
			// a transfer starts the execution (its receiver's key)
			f.ok(f.transfer(tlAt(at), TransferRequest{Todo: "todo_aaa", Owner: l.Owner, IdempotencyKey: l.IdempotencyKey,
				ExpectedVersion: tlI64(l.Version), NewOwner: owner, NewIdempotencyKey: key, TTLSeconds: 600}))
		} else {
			ev := int64(0)
			if l != nil {
				if l.Status == LeaseActive {
					f.ok(f.release(tlAt(at), ReleaseRequest{Todo: "todo_aaa", Owner: l.Owner, IdempotencyKey: l.IdempotencyKey, ExpectedVersion: tlI64(l.Version)}))
				}
				ev = l.Version
			}
			f.mustAcquire(tlAt(at+1), "todo_aaa", owner, key, ev)
		}
		at += 10
		sizes = append(sizes, len(f.files[LeasePath(tlGoal, "todo_aaa")]))
	}
	l := f.lease("todo_aaa")
	if l.Epoch != n || f.todo("todo_aaa").LeaseEpoch != n {
		t.Fatalf("epoch %d, todo's lease_epoch %d, want %d", l.Epoch, f.todo("todo_aaa").LeaseEpoch, n)
	}
	if len(l.Holders) != MaxHolders || l.Holders[0].Epoch != n-MaxHolders+1 || l.Holders[MaxHolders-1].Epoch != n {
		t.Fatalf("%d holders, epochs %d..%d", len(l.Holders), l.Holders[0].Epoch, l.Holders[len(l.Holders)-1].Epoch)
	}
	if got := len(retiredKeys(l.RetiredKeys)); got != n-MaxHolders {
		t.Fatalf("%d retired keys, want %d", got, n-MaxHolders)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	// Past MaxHolders executions the record grows by 16 bytes for a
	// retired key and 32 for a retired acquire per execution, not by a
	// holder's ~110 and a receipt's ~800: compare like with like, three
	// executions apart (the same mix of operations).
	for i := MaxHolders + 3; i < n; i++ {
		if grow := sizes[i] - sizes[i-3]; grow > 3*3*hashLen+8 {
			t.Errorf("the record grew %d bytes over executions %d..%d (sizes %v)", grow, i-2, i+1, sizes)
		}
	}
	// Every key the todo has seen is refused, to anyone, by acquire and as
	// a transfer's new key; a new one is accepted.
	f.ok(f.release(tlAt(at), ReleaseRequest{Todo: "todo_aaa", Owner: l.Owner, IdempotencyKey: l.IdempotencyKey, ExpectedVersion: tlI64(l.Version)}))
	l = f.lease("todo_aaa")
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("exec-%02d", i)
		for _, owner := range tlAgents {
			_, err := f.acquire(tlAt(at+1), AcquireRequest{Todo: "todo_aaa", Owner: owner, IdempotencyKey: key, TTLSeconds: 60})
			if e, ok := AsError(err); !ok || (e.Code != CodeIdempotencyKeyReuse && e.Code != CodeExecutionNotCurrent) {
				t.Fatalf("acquire with seen key %s by %s: %v", key, owner, err)
			}
		}
	}
	f.mustAcquire(tlAt(at+2), "todo_aaa", "agent-c", "exec-new", l.Version)
	l = f.lease("todo_aaa")
	for _, key := range []string{"exec-01", "exec-15"} {
		_, err := f.transfer(tlAt(at+3), TransferRequest{Todo: "todo_aaa", Owner: "agent-c", IdempotencyKey: "exec-new",
			ExpectedVersion: tlI64(l.Version), NewOwner: "agent-a", NewIdempotencyKey: key, TTLSeconds: 60})
		wantCode(t, err, CodeIdempotencyKeyReuse)
	}
}

// withoutReceipts checks that l keeps the receipt id and returns l without
// its receipts, to compare the rest.
func withoutReceipts(t *testing.T, l *Lease, id string) *Lease {
	t.Helper()
	found := false
	for _, r := range l.Receipts {
		found = found || r.ID == id
	}
	if !found {
		t.Fatalf("the lease record does not keep receipt %s: %+v", id, l.Receipts)
	}
	l.Receipts = nil
	return l
}

func TestRetiredKeys(t *testing.T) {
	s := retireKeys("", "k2", "k1")
	if s2 := retireKeys(s, "k1"); s2 != s {
		t.Fatalf("retiring a retired key again changed the set: %q → %q", s, s2)
	}
	if len(s) != 2*retiredKeyLen || checkRetiredKeys(s) != nil {
		t.Fatalf("set %q: %v", s, checkRetiredKeys(s))
	}
	for key, want := range map[string]bool{"k1": true, "k2": true, "k3": false, "": false, "K1": false} {
		if got := keyRetired(s, key); got != want {
			t.Errorf("keyRetired(%q) = %v", key, got)
		}
	}
	a, b := s[:retiredKeyLen], s[retiredKeyLen:]
	for name, bad := range map[string]string{
		"short":      s[:retiredKeyLen+3],
		"unsorted":   b + a,
		"duplicate":  a + a,
		"not base64": strings.Repeat("*", retiredKeyLen),
	} {
		if checkRetiredKeys(bad) == nil {
			t.Errorf("%s: %q accepted", name, bad)
		}
		l := &Lease{TodoID: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k", Version: 1, Epoch: 1, Status: LeaseActive, RetiredKeys: bad}
		if l.Validate() == nil {
			t.Errorf("%s: a lease record with retired_keys %q validates", name, bad)
		}
	}
}
