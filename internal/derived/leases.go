package derived

import (
	"encoding/hex"
	"errors"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// The index of a goal's active leases (lease/active.go) beside the store.
//
// Every acquire checks its scopes against the goal's effective leases.
// Scanning every lease record for that costs O(leases) per acquire (at
// 1,000 active leases, ~45 µs each); the index keeps what the scan needs
// (each active record's todo, expiry, scopes and owner) per goal in
// <common dir>/loopx-cache/leases-<hex goal>, tagged with the state
// revision it reflects. A view gets the index of its own revision: the
// saved one brought up to date from the tree diff of the goal's leases
// folder between the two revisions (gitstore.DiffHashes: equal subtrees
// are never read), so it costs what changed. It is derived data with a
// checksum: when it is missing, damaged, more than leaseIndexCatchUp
// records behind, or meets a record that does not decode or sits at the
// wrong path, the index is rebuilt from every record (or, for a damaged
// record, not offered: the scan then reports it as corrupt_record). A
// decision's answer never depends on it: the index only says which
// records to read (TestActiveLeaseIndexMatchesScan).

// leaseIndexCatchUp is how many changed records an index is brought up to
// date with before a rebuild is cheaper.
const leaseIndexCatchUp = 256

// leaseIndex is the active-lease index of every goal, and the indexes a
// process has at hand, by goal (each as of a revision: never changed once
// made, a newer revision's is a changed copy).
type leaseIndex struct {
	sideFile[*lease.ActiveLeases]
	perGoal[*lease.ActiveLeases] // saving after Config.LeaseIndexSaveAfter changed records
	records                      *recordCache
}

var _ Index[*lease.ActiveLeases] = (*leaseIndex)(nil)

func newLeaseIndex(repo gitstore.Repo, records *recordCache, saveAfter int) *leaseIndex {
	ix := &leaseIndex{records: records, perGoal: newPerGoal[*lease.ActiveLeases](saveAfter), sideFile: sideFile[*lease.ActiveLeases]{
		repo: repo, kind: "leases", version: 2,
		file:   func(goal string) string { return "loopx-cache/leases-" + hex.EncodeToString([]byte(goal)) },
		encode: (*lease.ActiveLeases).Encode,
		decode: lease.DecodeActiveLeases,
	}}
	ix.saveAfterFor = func(a *lease.ActiveLeases) int { return leaseSaveAfter(a.Len(), saveAfter) }
	return ix
}

// atSnapshot returns the index of goal's active leases at sn, or nil
// when it cannot be made (a record that does not decode: the scan reports
// it). Saving re-encodes the whole index (1,000 active leases: 2 ms, more
// than an acquire's scope check) while a catch-up decodes only the records
// that changed, a few tens of microseconds each: hence perGoal's saveAfter.
func (ix *leaseIndex) atSnapshot(sn *gitstore.Snapshot, goal string) *lease.ActiveLeases {
	l, _ := ix.perGoal.atSnapshot(ix, sn, goal)
	return l
}

// leaseSaveAfter is how many changed records a process catches an index
// of n active leases up with before it saves it, at most max. Saving
// encodes every entry (~2 µs each) and writes a file (~0.1 ms); catching up
// decodes each changed record (a YAML lease record with its holders and
// receipts, ~0.1 ms) after a tree diff. So a small index is saved after
// every change: the next process then catches up one record, not up to
// max (at 10 active leases, up to 8 records were 1.4 ms of an acquire's
// 14 ms); a large one only when the catch-ups it saves outweigh it.
func leaseSaveAfter(n, max int) int {
	return min(max, 1+n/50)
}

var errDamaged = errors.New("a record of the derived data does not decode")

// Rebuild makes the index from every lease record of the target.
func (ix *leaseIndex) Rebuild(to Target, goal string) (*lease.ActiveLeases, error) {
	next := BuildLeaseIndex(ix.records.view(to.Snap), goal)
	if next == nil {
		return nil, errDamaged
	}
	return next, nil
}

// BuildLeaseIndex makes the index of goal from every lease record of v;
// nil when a record is damaged.
func BuildLeaseIndex(v *lease.View, goal string) *lease.ActiveLeases {
	leases, err := v.Leases(goal)
	if err != nil {
		return nil
	}
	ix := lease.NewActiveLeases()
	for _, l := range leases {
		ix.Set(lease.LeasePath(goal, l.TodoID), l)
	}
	return ix
}

// CatchUp brings cur from rev to the target from the tree diff of the
// goal's leases folder.
func (ix *leaseIndex) CatchUp(cur *lease.ActiveLeases, rev gitstore.Hash, to Target, goal string) (*lease.ActiveLeases, int, error) {
	type change struct {
		path string
		blob gitstore.Hash
	}
	var cs []change
	n, err := changes(ix.repo, rev, to.Rev, lease.LeasesDir(goal), leaseIndexCatchUp, func(p string, blob gitstore.Hash) error {
		cs = append(cs, change{p, blob})
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	next := cur
	if n > 0 {
		next = cur.Clone()
	}
	for _, c := range cs {
		if c.blob.IsZero() {
			next.Set(c.path, nil)
			continue
		}
		data, err := to.Snap.ReadBlobMax(c.blob, lease.MaxRecordSize)
		if err != nil {
			return nil, 0, err
		}
		var l lease.Lease
		if lease.DecodeAt(c.path, data, &l) != nil || c.path != lease.LeasePath(goal, l.TodoID) {
			return nil, 0, errDamaged // the rebuild (a scan) reports it
		}
		next.Set(c.path, &l)
	}
	return next, n, nil
}
