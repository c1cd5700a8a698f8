// Package derived keeps the data loopx derives from the records beside the
// store, as a layer over the store's gitstore.Repo: side files in
// <common dir>/loopx-cache/ that make a decision cost what changed instead
// of what exists. None of it is ever trusted over the records: each kind
// is content-addressed or tagged with the revision it reflects, and
// rebuilt when missing, damaged or stale, so an answer never depends on it
// (each kind has a test that its answers equal a scan's).
//
//   - the decoded-record cache (records.go: lease.RecordCache, by blob
//     hash), shared by every view a Cache gives;
//   - the active-lease index of each goal (leases.go: what every acquire's
//     scope check needs);
//   - the board model of each goal (boards.go: a board delivered at the
//     cost of what changed; todo show's unblocks);
//   - the per-todo index of the audit trail (logs.go: log --todo-id, and
//     the receipts that left the lease records, receipts.go).
//
// Every kind that follows the records is an Index: load the saved value,
// catch it up to a revision (from the tree diff, or for the log index the
// history, between the two), rebuild it from every record, save it. One
// codec (codec.go) wraps every side file: its kind, version, tag and
// checksum.
package derived

import (
	"errors"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Index is what every kind of derived data that follows the records does:
// a value per key (a goal; a bucket of todos), kept in a side file tagged
// with the revision it reflects.
type Index[T any] interface {
	// Load reads key's saved value and the revision it reflects; ok is
	// false when there is none, or it is damaged or of another version.
	Load(key string) (v T, rev gitstore.Hash, ok bool)
	// CatchUp brings v, key's value at rev, up to the target, and counts
	// the records that changed; an error says it cannot (too far behind,
	// a record that does not decode, the history unreadable): rebuild.
	CatchUp(v T, rev gitstore.Hash, to Target, key string) (next T, changed int, err error)
	// Rebuild makes key's value from every record of the target; an error
	// says it cannot (a damaged record, which the scan that reads it
	// reports; the store's own failure).
	Rebuild(to Target, key string) (T, error)
	// Save keeps v as key's value at rev (best effort: a cache).
	Save(key string, rev gitstore.Hash, v T)
}

// Target is the state derived data is brought up to: a revision, its
// snapshot and records view (with a decision's own writes, if any), and
// the time a board is rendered at.
type Target struct {
	Rev  gitstore.Hash
	Snap *gitstore.Snapshot
	View *lease.View
	Now  time.Time
}

// writes reports whether the target's view holds writes of its own (a
// decision's), which a value at the target's revision lacks.
func (t Target) writes() bool { return t.View != nil && len(t.View.Changes()) > 0 }

// TargetOf is the target of a view of snapshot sn at now.
func TargetOf(sn *gitstore.Snapshot, v *lease.View, now time.Time) Target {
	return Target{Rev: sn.Revision(), Snap: sn, View: v, Now: now}
}

// How a value was brought up to its target (bringUp).
const (
	asSaved = iota // the saved value was at the target already
	caughtUp
	rebuilt
)

// errNone is bringUp's answer without a saved value and without a rebuild.
var errNone = errors.New("no derived value to bring up to date")

// bringUp returns key's value at the target from the value cur at rev
// (have false: none; it is loaded then), caught up, or (with rebuild)
// rebuilt; how says which, changed how many records a catch-up applied.
// An error is the last step's.
func bringUp[T any](ix Index[T], key string, to Target, cur T, rev gitstore.Hash, have, rebuild bool) (v T, how, changed int, err error) {
	if !have {
		cur, rev, have = ix.Load(key)
	}
	if have && rev == to.Rev && !to.writes() {
		return cur, asSaved, 0, nil
	}
	err = errNone
	if have {
		var next T
		var n int
		if next, n, err = ix.CatchUp(cur, rev, to, key); err == nil {
			return next, caughtUp, n, nil
		}
	}
	if !rebuild {
		return v, 0, 0, err
	}
	v, err = ix.Rebuild(to, key)
	return v, rebuilt, 0, err
}

// sideFile is the Load and Save of an Index: one side file per key, in
// the codec.
type sideFile[T any] struct {
	repo    gitstore.Repo
	kind    string
	version int
	file    func(key string) string
	encode  func(T) []byte
	decode  func([]byte) (T, error)
}

// Load reads key's value and the revision it reflects.
func (f sideFile[T]) Load(key string) (T, gitstore.Hash, bool) {
	var zero T
	data, err := f.repo.ReadSideFile(f.file(key))
	if err != nil || data == nil {
		return zero, gitstore.ZeroHash, false
	}
	rev, body, ok := decode(f.kind, f.version, data)
	if !ok || rev.IsZero() {
		return zero, gitstore.ZeroHash, false
	}
	v, err := f.decode(body)
	if err != nil {
		return zero, gitstore.ZeroHash, false
	}
	return v, rev, true
}

// Save keeps v as key's value at rev (best effort).
func (f sideFile[T]) Save(key string, rev gitstore.Hash, v T) {
	if rev.IsZero() {
		return
	}
	_ = f.repo.WriteSideFile(f.file(key), encode(f.kind, f.version, rev, f.encode(v)), false)
}

// SideFile is a side file of one kind of derived data kept by another
// room (the audit's verified-up-to mark), in the codec.
type SideFile[T any] struct{ f sideFile[T] }

// NewSideFile is the side file name of kind, at version, whose body is
// v's encoding.
func NewSideFile[T any](repo gitstore.Repo, name, kind string, version int, enc func(T) []byte, dec func([]byte) (T, error)) SideFile[T] {
	return SideFile[T]{sideFile[T]{repo: repo, kind: kind, version: version, file: func(string) string { return name }, encode: enc, decode: dec}}
}

// Load reads the value and the revision it reflects.
func (s SideFile[T]) Load() (T, gitstore.Hash, bool) { return s.f.Load("") }

// Save keeps v at rev (best effort).
func (s SideFile[T]) Save(rev gitstore.Hash, v T) { s.f.Save("", rev, v) }

var errTooFar = errors.New("derived data too far behind: rebuild")

// changes calls fn with every path under dir whose blob differs between
// revisions from and to (its new blob, zero when deleted), equal subtrees
// skipped (gitstore.Repo.DiffHashes), and fails when more than limit
// changed: a rebuild is cheaper then.
func changes(repo gitstore.Repo, from, to gitstore.Hash, dir string, limit int, fn func(path string, blob gitstore.Hash) error) (int, error) {
	n := 0
	err := repo.DiffHashes(from, to, dir, func(p string, _, blob gitstore.Hash) error {
		if n++; n > limit {
			return errTooFar
		}
		return fn(p, blob)
	})
	return n, err
}
