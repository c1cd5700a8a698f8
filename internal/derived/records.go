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

// loadRecords reads the saved record cache (nil: none or damaged).
func (c *Cache) loadRecords() []byte {
	data, err := c.repo.ReadSideFile(recordCacheName)
	if err != nil || data == nil {
		return nil
	}
	_, body, ok := decode("records", 1, data)
	if !ok {
		return nil
	}
	return body
}

// Records is the decoded-record cache every view of the Cache shares.
func (c *Cache) Records() *lease.RecordCache { return c.records }

// Close saves what the record cache learned, pruned to the head's records.
func (c *Cache) Close() {
	if c.records.WorthSaving() {
		c.pruneRecords()
		_ = c.repo.WriteSideFile(recordCacheName, encode("records", 1, gitstore.ZeroHash, c.records.Encode()), false) // best effort
	}
}

// pruneRecords drops from the record cache the records that are not in
// the head's tree (lease.RecordCache.Keep). It walks the tree's names and
// hashes, not the blobs.
func (c *Cache) pruneRecords() {
	head, err := c.repo.Head(context.Background())
	if err != nil {
		return
	}
	sn, err := c.repo.Snapshot(head)
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
	c.records.Keep(func(h string) bool { return live[h] })
	c.recordBase = c.records.Len()
}

// MaybePrune prunes the record cache once it has grown to twice its size
// after the last pruning and RecordCacheSlack records more: amortized, a
// tree walk every few hundred mutations of a long-lived process, and never
// in a one-command process on a warm cache.
func (c *Cache) MaybePrune() {
	n := c.records.Len()
	if c.recordBase == 0 {
		c.recordBase = n
		return
	}
	if n > 2*c.recordBase+c.cfg.RecordCacheSlack {
		c.pruneRecords()
	}
}
