package lease

import "fmt"

// The fencing token never goes back (contract section 7). A todo records
// the epoch of its lease record (Todo.LeaseEpoch, written with every lease
// write: View.PutLease), so a per-todo read that finds the two disagreeing
// fails closed instead of reading "no lease" and granting epoch 1 again:
//
//   - the todo says its lease is at epoch E but there is no lease record at
//     the lease's path (moved to another bucket, replaced by a folder, or
//     deleted by hand): corrupt_record naming the lease path;
//   - the lease record is at another epoch than the todo says (replaced by
//     an older copy, or written without the todo): corrupt_record;
//   - a lease record whose todo does not exist: corrupt_record.
//
// Stores of format 1 did not record it; the upgrade to format 2 backfills
// it (Upgrade), and only then is it checked.

// checkGeneration checks a todo (nil: absent) against its lease (nil:
// absent).
func checkGeneration(goal, todo string, t *Todo, l *Lease) error {
	switch {
	case t == nil && l != nil:
		return Corrupt(LeasePath(goal, todo), fmt.Errorf("a lease record of todo %s, which does not exist", todo))
	case t == nil:
		return nil
	case l == nil && t.LeaseEpoch > 0:
		return Corrupt(LeasePath(goal, todo), fmt.Errorf("missing: todo %s records its lease at epoch %d (moved or deleted by hand? the fencing token must never go back)", todo, t.LeaseEpoch))
	case l != nil && l.Epoch != t.LeaseEpoch:
		return Corrupt(LeasePath(goal, todo), fmt.Errorf("lease at epoch %d, but todo %s records epoch %d (the fencing token must never go back)", l.Epoch, todo, t.LeaseEpoch))
	}
	return nil
}
