package derived

import (
	"context"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
)

// The decoded-record cache (lease.RecordCache): records decoded by earlier
// processes, by blob hash, so that a full scan (board, list, ready, scope
// checks) decodes only what changed. It is content-addressed: a record is
// found by its blob's hash or not at all. It is loaded lazily, saved when
// the process closes its store, and pruned to the records of the head.

// recordCacheName is the record cache's side file.
const recordCacheName = "loopx-cache/records.gob"

// recordCache is the record cache and when to prune it.
type recordCache struct {
	repo  gitstore.Repo
	rc    *lease.RecordCache
	base  int // its size after it was last pruned (or first used)
	slack int // Config.RecordCacheSlack
}

func newRecordCache(repo gitstore.Repo, slack int) *recordCache {
	r := &recordCache{repo: repo, slack: slack}
	r.rc = lease.NewRecordCache(r.load)
	return r
}

// view is a view of sn that reads records through the cache.
func (r *recordCache) view(sn *gitstore.Snapshot) *lease.View {
	v := records.View(sn)
	v.UseCache(r.rc)
	return v
}

// load reads the saved record cache (nil: none or damaged).
func (r *recordCache) load() []byte {
	data, err := r.repo.ReadSideFile(recordCacheName)
	if err != nil || data == nil {
		return nil
	}
	_, body, ok := decode("records", 1, data)
	if !ok {
		return nil
	}
	return body
}

// close saves what the cache learned, pruned to the head's records.
func (r *recordCache) close() {
	if r.rc.WorthSaving() {
		r.prune()
		_ = r.repo.WriteSideFile(recordCacheName, encode("records", 1, gitstore.ZeroHash, r.rc.Encode()), false) // best effort
	}
}

// prune drops from the cache the records that are not in the head's tree
// (lease.RecordCache.Keep). It walks the tree's names and hashes, not the
// blobs.
func (r *recordCache) prune() {
	head, err := r.repo.Head(context.Background())
	if err != nil {
		return
	}
	sn, err := r.repo.Snapshot(head)
	if err != nil {
		return
	}
	f := records.Files{Snap: sn}
	goals, err := f.List(lease.GoalsDir)
	if err != nil {
		return
	}
	live := map[string]bool{}
	add := func(_, hash string) error { live[hash] = true; return nil }
	for _, g := range goals {
		if f.WalkHashes(lease.TodosDir(g), add) != nil || f.WalkHashes(lease.LeasesDir(g), add) != nil {
			return // keep everything: a cache may always hold more
		}
	}
	r.rc.Keep(func(h string) bool { return live[h] })
	r.base = r.rc.Len()
}

// maybePrune prunes the cache once it has grown to twice its size after
// the last pruning and slack records more: amortized, a tree walk every
// few hundred mutations of a long-lived process, and never in a
// one-command process on a warm cache.
func (r *recordCache) maybePrune() {
	n := r.rc.Len()
	if r.base == 0 {
		r.base = n
		return
	}
	if n > 2*r.base+r.slack {
		r.prune()
	}
}
