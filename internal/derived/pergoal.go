package derived

import (
	"sync"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// perGoal is what an index kept per goal (the active leases, the listing)
// has at hand in a process: each goal's value as of a revision, never
// changed once made (a newer revision's is a changed copy), and how it is
// brought to a snapshot.
type perGoal[T any] struct {
	saveAfter int // save a value caught up by this many changed records or more
	// saveAfterFor, when set, is saveAfter for a value (a small one is
	// cheaper to save than to catch up again in the next process).
	saveAfterFor func(T) int

	mu sync.Mutex
	at map[string]goalAt[T]
}

type goalAt[T any] struct {
	rev gitstore.Hash
	v   T
}

func newPerGoal[T any](saveAfter int) perGoal[T] {
	return perGoal[T]{saveAfter: saveAfter, at: map[string]goalAt[T]{}}
}

// atSnapshot returns ix's value for goal at sn; ok is false when it cannot
// be made (a record that does not decode: the scan that reads it reports
// it). The first use in a process that rebuilt the value, or caught the
// saved one up by saveAfter records or more, saves the new revision's;
// later moves (say along verify --history's walk) are not saved, so the
// side file is rewritten every few mutations, not on every one.
func (p *perGoal[T]) atSnapshot(ix Index[T], sn *gitstore.Snapshot, goal string) (v T, ok bool) {
	if !lease.ValidGoalID(goal) {
		return v, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, have := p.at[goal]
	to := Target{Rev: sn.Revision(), Snap: sn}
	next, how, changed, err := bringUp[T](ix, goal, to, cur.v, cur.rev, have, true)
	if err != nil {
		return v, false
	}
	p.at[goal] = goalAt[T]{rev: to.Rev, v: next}
	after := p.saveAfter
	if p.saveAfterFor != nil {
		after = p.saveAfterFor(next)
	}
	if !have && (how == rebuilt || how == caughtUp && changed >= after) {
		ix.Save(goal, to.Rev, next)
	}
	return next, true
}
