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
//   - What a retry gets afterwards: an acquire whose receipt left is still
//     recognised (its identity, and its identity with its digest, stay in
//     retired_acquires, a set of 96-bit hashes as for retired keys) and
//     answered exactly as with its receipt: execution_not_current (its
//     execution is not current), or idempotency_key_reuse for the same
//     identity with other arguments. A renew, transfer
//     or release whose receipt left is decided afresh, on a lease that has
//     moved on: version_mismatch, lease_proof_mismatch or lease_not_active
//     (exit 1), never a second application. `loopx log --todo-id T` shows
//     the commit that applied it (its Loopx-Receipt trailer is the receipt
//     id, its Loopx-Request the request), and `verify --history` re-decides
//     it.

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

// ReceiptOf returns the receipt id of an operation on todo (nil when
// there is none): kept in the todo's lease record, else in a receipt file.
func (v *View) ReceiptOf(goal, todo, id string) (*Receipt, error) {
	l, err := v.leaseRecord(goal, todo)
	if err != nil {
		return nil, err
	}
	if l != nil {
		for i := len(l.Receipts) - 1; i >= 0; i-- {
			if l.Receipts[i].ID == id {
				r := cloneReceipts(l.Receipts[i : i+1])[0]
				return &r, nil
			}
		}
	}
	return v.Receipt(goal, id)
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
	if l != nil {
		for i := len(l.Receipts) - 1; i >= 0; i-- {
			if l.Receipts[i].ID == id {
				c := l.Receipts[i]
				r = &c
				break
			}
		}
		if r == nil && l.RetiredAcquires != "" {
			switch {
			case hashSetHas(l.RetiredAcquires, retiredAcquire(id, digest)):
				return nil, true, nil
			case hashSetHas(l.RetiredAcquires, retiredIdentity(id)):
				return nil, false, digestMismatch(OpLeaseAcquire, id)
			}
		}
	}
	if r == nil {
		if r, err = v.Receipt(goal, id); err != nil || r == nil {
			return nil, false, err
		}
	}
	if r.RequestDigest != digest {
		return nil, false, digestMismatch(r.Operation, r.ID)
	}
	return r, false, nil
}
