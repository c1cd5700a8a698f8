package derived

import (
	"encoding/hex"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// The listing of each goal beside the store (lease.Listing): its todos in
// list order with what a list needs of their leases, as todo list and todo
// ready read them.
//
// A list of a goal of 10,000 todos walked 256 bucket trees, looked every
// todo's blob up in the record cache (loaded whole: 1.4 MB) and sorted
// them, to print them: most of its time. The listing is kept in
// <common dir>/loopx-cache/list-<hex goal>, tagged with the state revision
// it reflects, and brought up to the revision listed from the tree diff of
// the goal's todos and leases folders (gitstore.DiffHashes: equal subtrees
// are never read), reading only the records that changed. Its encoding
// (lease.Listing) puts each todo's record behind its length: a page, or a
// whole list written straight into its views, decodes only what it shows;
// every todo is decoded only for a filter, ready or a catch-up. It is derived
// data with a checksum: when it is missing, damaged, more than
// listingCatchUp records behind, or meets a record that does not decode,
// it is rebuilt from every record (or, for a damaged record, not offered:
// the scan then reports it). An answer never depends on it
// (TestListingMatchesScan).

// listingCatchUp is how many changed records a listing is brought up to
// date with before a rebuild is cheaper.
const listingCatchUp = 256

// listIndex is the listing of every goal, and the listings a process has
// at hand, by goal (each as of a revision: never changed once made).
type listIndex struct {
	sideFile[*lease.Listing]
	perGoal[*lease.Listing]
	records *recordCache
}

var _ Index[*lease.Listing] = (*listIndex)(nil)

func newListIndex(repo gitstore.Repo, records *recordCache, saveAfter int) *listIndex {
	return &listIndex{records: records, perGoal: newPerGoal[*lease.Listing](saveAfter), sideFile: sideFile[*lease.Listing]{
		repo: repo, kind: "list", version: 2,
		file:   func(goal string) string { return "loopx-cache/list-" + hex.EncodeToString([]byte(goal)) },
		encode: (*lease.Listing).Encode,
		decode: lease.DecodeListing,
	}}
}

// atSnapshot returns goal's listing at sn, or nil when it cannot be made
// (a record that does not decode: the scan reports it).
func (ix *listIndex) atSnapshot(sn *gitstore.Snapshot, goal string) *lease.Listing {
	l, _ := ix.perGoal.atSnapshot(ix, sn, goal)
	return l
}

// Rebuild makes the listing from every record of the target.
func (ix *listIndex) Rebuild(to Target, goal string) (*lease.Listing, error) {
	return lease.BuildListing(ix.records.view(to.Snap), goal)
}

// CatchUp brings cur from rev to the target from the tree diff of the
// goal's todos and leases folders.
func (ix *listIndex) CatchUp(cur *lease.Listing, rev gitstore.Hash, to Target, goal string) (*lease.Listing, int, error) {
	ids := map[string]bool{}
	n := 0
	for _, dir := range []string{lease.TodosDir(goal), lease.LeasesDir(goal)} {
		k, err := changes(ix.repo, rev, to.Rev, dir, listingCatchUp-n, func(p string, _ gitstore.Hash) error {
			id := lease.RecordID(p)
			if p != lease.TodoPath(goal, id) && p != lease.LeasePath(goal, id) {
				return errDamaged // not a record's path: the scan says what it is
			}
			ids[id] = true
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		n += k
	}
	if len(ids) == 0 {
		return cur, 0, nil
	}
	v := ix.records.view(to.Snap)
	next, err := cur.Clone()
	if err != nil {
		return nil, 0, err // its records do not decode: rebuild
	}
	for id := range ids {
		t, x, err := v.ListingRecords(goal, id)
		if err != nil {
			return nil, 0, err
		}
		next.Set(id, t, x)
	}
	return next, n, nil
}
