package lease

// Where receipts live, and for how long.
//
// Decisions (where the contract is silent):
//   - The receipts of a todo's lease operations live in its lease record
//     (receipts), not in a file each: a receipt was four objects per
//     operation (a blob and three trees of the receipts fan-out), half of a
//     mutation's disk, and a folder that grew by one file per mutation.
//     Only a release's durable no_change (of a todo that never had a
//     lease, or of a lease already released) still writes a receipt file:
//     there is no lease record to keep it, or one it must not touch (the
//     contract: "the lease is untouched"). Receipt files of earlier stores
//     are still read.
//   - A receipt is kept while its execution can still be retried: the
//     record keeps, for its current execution and for the one before it
//     (the one a transfer, takeover or new acquire just ended), that
//     execution's acquire receipt and the receipt of its latest other
//     operation (renew, transfer, release). An execution's owner is its
//     only caller, and a caller retries an operation whose answer it lost
//     before it sends the next one, so the retry of any operation a caller
//     can still be waiting on finds its receipt, and is answered replayed
//     with the original receipt, as the contract asks. Two executions
//     later, or once a later operation of the same execution was decided,
//     a receipt leaves the record.
//   - What a retry gets afterwards: exactly what it got with the receipt
//     in the record (contract section 5: the same identity with the same
//     digest is a replay, with another digest idempotency_key_reuse). An
//     acquire whose receipt left is recognised by retired_acquires (its
//     identity, and its identity with its digest, as 96-bit hashes, as for
//     retired keys): execution_not_current, since its execution is not
//     current any more, or idempotency_key_reuse. A renew, transfer or
//     release whose receipt left is found in history: the commit that
//     applied it names the receipt (its Loopx-Receipt trailer) and its tree
//     holds the lease record that kept it. The view asks for it through a
//     ReceiptArchive (the root package walks the todo's commits), and only
//     for a request that can have been decided before: its key is one the
//     todo has seen and its expected version is below the lease's (every
//     renew and transfer moves the version on; a release that left its
//     receipt was followed by an acquire that did). A first request, the
//     hot path, never reads history. `verify --history` re-decides commits
//     without the archive: a replay or a refusal writes none.

import (
	"crypto/sha256"
	"encoding/base64"
)

// receiptEpoch is the execution a receipt belongs to: a transfer's is the
// sender's (the lease it stores is the receiver's).
func receiptEpoch(r *Receipt) int64 {
	if r.Lease == nil {
		return 0
	}
	if r.Operation == OpLeaseTransfer {
		return r.Lease.Epoch - 1
	}
	return r.Lease.Epoch
}

// retiredAcquire is the entry of an acquire receipt in retired_acquires:
// its identity and digest together.
func retiredAcquire(id, digest string) string {
	sum := sha256.Sum256([]byte("loopx.retired-acquire.v1\x00" + id + "\x00" + digest))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// retiredIdentity is the other entry of an acquire receipt in
// retired_acquires: its identity alone (a retry with other arguments).
func retiredIdentity(id string) string {
	sum := sha256.Sum256([]byte("loopx.retired-acquire-identity.v1\x00" + id))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// digestMismatch is the refusal of a known identity with another digest.
func digestMismatch(op, id string) *Error {
	return Errorf(CodeIdempotencyKeyReuse,
		"this owner and idempotency key were already used for a different %s request (receipt %s): retry with the original arguments or use a new key", op, id).
		With("receipt_id", id)
}

// keepReceipt adds r to l's receipts and drops those no longer kept (see
// the decisions above); a dropped acquire receipt is remembered in
// retired_acquires.
func keepReceipt(l *Lease, r *Receipt) {
	all := append(l.Receipts, *r)
	keep := make([]bool, len(all))
	latest := map[int64]int{} // epoch → its latest non-acquire receipt
	for i := range all {
		e := receiptEpoch(&all[i])
		if e < l.Epoch-1 {
			continue
		}
		if all[i].Operation == OpLeaseAcquire {
			keep[i] = true
		} else {
			latest[e] = i // receipts are in decision order
		}
	}
	for _, i := range latest {
		keep[i] = true
	}
	var kept []Receipt
	var retired []string
	for i := range all {
		switch {
		case keep[i]:
			kept = append(kept, all[i])
		case all[i].Operation == OpLeaseAcquire:
			retired = append(retired, retiredAcquire(all[i].ID, all[i].RequestDigest), retiredIdentity(all[i].ID))
		}
	}
	l.Receipts = kept
	if len(retired) > 0 {
		l.RetiredAcquires = addHashes(l.RetiredAcquires, retired...)
	}
}

// ReceiptArchive finds in history a receipt that left todo's lease record:
// the receipt of identity id, written by a commit whose lease version is at
// least version and whose epoch is at least epoch (0: unknown), the bounds
// below which the walk stops. It returns nil when there is none.
type ReceiptArchive func(goal, todo, id string, version, epoch int64) (*Receipt, error)

// UseReceiptArchive lets renew, transfer and release find the receipts that
// left the lease record (see the decisions above).
func (v *View) UseReceiptArchive(a ReceiptArchive) { v.archive = a }

// findOperationReceipt is findReceipt for renew, transfer and release, whose
// receipts leave the lease record: when the record has none, a request of
// a key the todo has seen, with an expected version below the lease's, may
// have been decided before; its receipt is then looked for in history.
func findOperationReceipt(v *View, goal, todo, owner, key, id, digest string, expected int64) (*Receipt, error) {
	l, err := v.leaseRecord(goal, todo)
	if err != nil {
		return nil, err
	}
	r, _, err := receiptIn(v, l, goal, id, digest)
	if err != nil || r != nil || v.archive == nil || l == nil || expected < 1 || expected >= l.Version {
		return r, err
	}
	epoch, seen := executionEpoch(l, owner, key)
	if !seen {
		return nil, nil // no execution of this key: nothing was decided
	}
	if r, err = v.archive(goal, todo, id, expected, epoch); err != nil || r == nil || !sameHash(r.ID, id) {
		return nil, err
	}
	return sameRequest(r, digest)
}

// executionEpoch returns the epoch of owner's execution key on l (0 when its
// holder left the record), and whether the todo has seen that key at all.
func executionEpoch(l *Lease, owner, key string) (epoch int64, seen bool) {
	if l.Owner == owner && l.IdempotencyKey == key {
		return l.Epoch, true
	}
	for i := len(l.Holders) - 1; i >= 0; i-- {
		if h := l.Holders[i]; h.IdempotencyKey == key {
			if h.Owner != owner {
				return 0, false
			}
			return h.Epoch, true
		}
	}
	return 0, keyRetired(l.RetiredKeys, key)
}

// ReceiptOf returns the receipt id of an operation on todo (nil when
// there is none): kept in the todo's lease record, else in a receipt file.
func (v *View) ReceiptOf(goal, todo, id string) (*Receipt, error) {
	l, err := v.leaseRecord(goal, todo)
	if err != nil {
		return nil, err
	}
	if l != nil {
		for i := len(l.Receipts) - 1; i >= 0; i-- {
			if sameHash(l.Receipts[i].ID, id) {
				r := cloneReceipts(l.Receipts[i : i+1])[0]
				return &r, nil
			}
		}
	}
	return v.receiptFile(goal, id)
}

// receiptFile returns the receipt file of identity id (full), whole or, in
// a store of format 4, named by its short form.
func (v *View) receiptFile(goal, id string) (*Receipt, error) {
	r, err := v.Receipt(goal, id)
	if r != nil || err != nil || len(id) != 64 {
		return r, err
	}
	return v.Receipt(goal, id[:ShortHashDigits])
}

// findReceipt returns the receipt of identity id on todo, nil when there is
// none: from the todo's lease record, else from a receipt file (a release
// of a todo without a lease, or a store of an earlier loopx). The same
// identity with another digest is idempotency_key_reuse. retired reports
// an acquire receipt that left the record with this very digest.
func findReceipt(v *View, goal, todo, id, digest string) (r *Receipt, retired bool, err error) {
	l, err := v.leaseRecord(goal, todo)
	if err != nil {
		return nil, false, err
	}
	return receiptIn(v, l, goal, id, digest)
}

// receiptIn is findReceipt on todo's lease record l (nil: none), already
// read.
func receiptIn(v *View, l *Lease, goal, id, digest string) (r *Receipt, retired bool, err error) {
	if l != nil {
		for i := len(l.Receipts) - 1; i >= 0; i-- {
			if sameHash(l.Receipts[i].ID, id) {
				c := l.Receipts[i]
				r = &c
				break
			}
		}
		if r == nil && l.RetiredAcquires != "" {
			// Retired as the store kept the receipt: whole before format
			// 4, short after.
			short := func(h string) string { return h[:min(len(h), ShortHashDigits)] }
			switch {
			case hashSetHas(l.RetiredAcquires, retiredAcquire(id, digest)),
				hashSetHas(l.RetiredAcquires, retiredAcquire(short(id), short(digest))):
				return nil, true, nil
			case hashSetHas(l.RetiredAcquires, retiredIdentity(id)),
				hashSetHas(l.RetiredAcquires, retiredIdentity(short(id))):
				return nil, false, digestMismatch(OpLeaseAcquire, v.hashForm()(id))
			}
		}
	}
	if r == nil {
		if r, err = v.receiptFile(goal, id); err != nil || r == nil {
			return nil, false, err
		}
	}
	r, err = sameRequest(r, digest)
	return r, false, err
}

// sameRequest returns r when its request had this digest; another digest
// under the same identity is idempotency_key_reuse.
func sameRequest(r *Receipt, digest string) (*Receipt, error) {
	if !sameHash(r.RequestDigest, digest) {
		return nil, digestMismatch(r.Operation, r.ID)
	}
	return r, nil
}
