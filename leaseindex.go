package loopx

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
)

// The index of a goal's active leases (lease/active.go) beside the store.
//
// Every acquire checks its scopes against the goal's effective leases.
// Scanning every lease record for that costs O(leases) per acquire (at
// 1,000 active leases, ~45 µs each); the index keeps what the scan needs
// (each active record's todo, expiry and scopes) per goal in
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

// leaseIndexSaveAfter is how many changed records a process catches the
// saved index up with before it saves it again. Saving re-encodes the whole
// index (1,000 active leases: 2 ms, more than an acquire's scope check); a
// catch-up decodes only the records that changed, a few tens of
// microseconds each. So the file is rewritten every few mutations, not on
// every one. (A variable for tests.)
var leaseIndexSaveAfter = 8

// leaseIndexName is the side file of a goal's active-lease index.
func leaseIndexName(goal string) string {
	return "loopx-cache/leases-" + hex.EncodeToString([]byte(goal))
}

// leaseIndexes are the indexes a Store has at hand, by goal.
type leaseIndexes struct {
	mu sync.Mutex
	m  map[string]*leaseIndexAt
}

var leaseIndexesInit sync.Mutex

// leaseIndexes returns the Store's indexes (shared by its copies).
func (s *Store) leaseIndexes() *leaseIndexes {
	leaseIndexesInit.Lock()
	defer leaseIndexesInit.Unlock()
	if s.leaseIdx == nil {
		s.leaseIdx = &leaseIndexes{m: map[string]*leaseIndexAt{}}
	}
	return s.leaseIdx
}

// leaseIndexAt is a goal's index as of a revision (never changed once
// made: a newer revision's is a changed copy).
type leaseIndexAt struct {
	rev gitstore.Hash
	ix  *lease.ActiveLeases
}

// useLeaseIndex gives v (a view of sn) the goals' active-lease indexes.
func (s *Store) useLeaseIndex(v *lease.View, sn *gitstore.Snapshot) {
	v.UseActiveLeases(func(goal string) (*lease.ActiveLeases, bool) {
		ix := s.activeLeaseIndex(sn, goal)
		return ix, ix != nil
	})
}

// activeLeaseIndex returns the index of goal's active leases at sn, or nil
// when it cannot be made (a record that does not decode: the scan reports
// it).
func (s *Store) activeLeaseIndex(sn *gitstore.Snapshot, goal string) *lease.ActiveLeases {
	if !lease.ValidGoalID(goal) {
		return nil
	}
	rev := sn.Revision()
	idx := s.leaseIndexes()
	idx.mu.Lock()
	defer idx.mu.Unlock()
	cur := idx.m[goal]
	fromFile := false
	if cur == nil {
		cur, fromFile = s.loadLeaseIndex(goal), true
	}
	if cur != nil && cur.rev == rev {
		idx.m[goal] = cur
		return cur.ix
	}
	var next *lease.ActiveLeases
	changed := 0
	if cur != nil {
		next, changed = s.catchUpLeaseIndex(cur, sn, goal)
	}
	rebuilt := next == nil
	if rebuilt {
		if next = buildLeaseIndex(s.viewOfRecords(sn), goal); next == nil {
			return nil
		}
	}
	idx.m[goal] = &leaseIndexAt{rev: rev, ix: next}
	if fromFile && (rebuilt || changed >= leaseIndexSaveAfter) {
		// The first use in this process moved the saved index far enough:
		// keep the new revision's (later moves, say along verify
		// --history's walk, are not saved).
		s.saveLeaseIndex(goal, rev, next)
	}
	return next
}

// viewOfRecords is a view of sn that reads records (no derived indexes).
func (s *Store) viewOfRecords(sn *gitstore.Snapshot) *lease.View {
	v := lease.NewView(records.Files{Snap: sn}, records.Rev(sn.Revision()), sn.Time())
	v.UseCache(s.cache)
	return v
}

// buildLeaseIndex makes the index from every lease record of v; nil when
// a record is damaged.
func buildLeaseIndex(v *lease.View, goal string) *lease.ActiveLeases {
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

var errIndexBehind = errors.New("too far behind")

// catchUpLeaseIndex returns cur brought to sn's revision from the tree
// diff and the number of records that changed, or nil when a rebuild is
// needed.
func (s *Store) catchUpLeaseIndex(cur *leaseIndexAt, sn *gitstore.Snapshot, goal string) (*lease.ActiveLeases, int) {
	type change struct {
		path string
		blob gitstore.Hash
	}
	var changes []change
	err := s.repo.DiffHashes(cur.rev, sn.Revision(), lease.LeasesDir(goal), func(p string, _, blob gitstore.Hash) error {
		changes = append(changes, change{p, blob})
		if len(changes) > leaseIndexCatchUp {
			return errIndexBehind
		}
		return nil
	})
	if err != nil {
		return nil, 0
	}
	next := cur.ix
	if len(changes) > 0 {
		next = cur.ix.Clone()
	}
	for _, c := range changes {
		if c.blob.IsZero() {
			next.Set(c.path, nil)
			continue
		}
		data, err := sn.ReadBlobMax(c.blob, lease.MaxRecordSize)
		if err != nil {
			return nil, 0
		}
		var l lease.Lease
		if lease.DecodeAt(c.path, data, &l) != nil || c.path != lease.LeasePath(goal, l.TodoID) {
			return nil, 0 // a damaged record: the rebuild (a scan) reports it
		}
		next.Set(c.path, &l)
	}
	return next, len(changes)
}

// loadLeaseIndex reads the saved index of goal (nil when there is none or
// it is damaged).
func (s *Store) loadLeaseIndex(goal string) *leaseIndexAt {
	data, err := s.repo.ReadSideFile(leaseIndexName(goal))
	if err != nil || len(data) < 41 || data[40] != '\n' {
		return nil
	}
	rev := gitstore.ParseHash(string(data[:40]))
	if rev.IsZero() {
		return nil
	}
	ix, err := lease.DecodeActiveLeases(data[41:])
	if err != nil {
		return nil
	}
	return &leaseIndexAt{rev: rev, ix: ix}
}

// saveLeaseIndex keeps ix as goal's index at rev (best effort: a cache).
func (s *Store) saveLeaseIndex(goal string, rev gitstore.Hash, ix *lease.ActiveLeases) {
	if rev.IsZero() || strings.ContainsAny(goal, "/\\") {
		return
	}
	var b bytes.Buffer
	b.WriteString(rev.String())
	b.WriteByte('\n')
	b.Write(ix.Encode())
	_ = s.repo.WriteSideFile(leaseIndexName(goal), b.Bytes(), false)
}
