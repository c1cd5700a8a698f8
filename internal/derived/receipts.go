package derived

import (
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
)

// The receipts that left the lease records, found in history.
//
// A lease record keeps only the receipts a retry can still need
// (lease/retention.go), yet the contract answers every retry of a renew,
// transfer or release by its receipt: replayed, or idempotency_key_reuse.
// The commit that applied an operation names its receipt (Loopx-Receipt)
// and its tree holds the lease record that kept it, so the receipt is found
// by walking the todo's commits newest first (the per-todo log index, then
// the history below it), and only for a request that may have been decided
// before (lease.findOperationReceipt says which).

// archivedReceipt returns the receipt id of todo on head's history, nil
// when no commit at lease version ≥ version (and epoch ≥ epoch, when known)
// wrote it: below those the operation cannot have been decided.
func archivedReceipt(repo gitstore.Repo, logs *logIndex, head gitstore.Hash, goal, todo, id string, version, epoch int64) (*lease.Receipt, error) {
	if head.IsZero() || !lease.ValidTodoID(todo) {
		return nil, nil
	}
	var found gitstore.Hash
	err := logs.todoCommits(head, todo, func(cm gitstore.CommitMeta) (bool, error) {
		e, ok := lease.ParseMessage(cm.Message)
		if !ok || e.Todo != todo || e.Goal != goal || e.ProjectionOf != "" {
			return true, nil
		}
		if lease.SameHash(e.Receipt, id) {
			found = cm.Hash
			return false, nil
		}
		// Every commit of the todo's lease carries its version and epoch;
		// the operation's commit is at version ≥ its expected version and
		// epoch ≥ its execution's.
		return !(e.Version > 0 && e.Version < version) && !(epoch > 0 && e.Epoch > 0 && e.Epoch < epoch), nil
	})
	if err != nil {
		return nil, err
	}
	if found.IsZero() {
		return nil, nil
	}
	sn, err := repo.Snapshot(found)
	if err != nil {
		return nil, err
	}
	return records.View(sn).ReceiptOf(goal, todo, id)
}
