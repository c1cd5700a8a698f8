package derived

import (
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Config tunes a Cache; zero fields take the defaults.
type Config struct {
	// LeaseIndexSaveAfter is the most changed records a process catches
	// a loaded active-lease index up with before it saves it again
	// (default 8; a small index is saved sooner: leaseSaveAfter in
	// leases.go). The listing is saved after this many.
	LeaseIndexSaveAfter int
	// LogIndexKeep is how many commits per todo the log index names
	// (default 64; logs.go).
	LogIndexKeep int
	// RecordCacheSlack is the growth of the record cache beyond twice
	// its pruned size that starts a pruning (default 1,024; records.go).
	RecordCacheSlack int
}

func (c Config) withDefaults() Config {
	if c.LeaseIndexSaveAfter <= 0 {
		c.LeaseIndexSaveAfter = 8
	}
	if c.LogIndexKeep <= 0 {
		c.LogIndexKeep = 64
	}
	if c.RecordCacheSlack <= 0 {
		c.RecordCacheSlack = 1024
	}
	return c
}

// Cache is the derived data beside one store, as one Store (a process)
// holds it: the record cache and the active-lease indexes it has at hand
// are kept in memory between decisions.
type Cache struct {
	repo    gitstore.Repo
	records *recordCache
	leases  *leaseIndex
	lists   *listIndex
	boards  *boardIndex
	logs    *logIndex
}

// New is the derived data beside repo.
func New(repo gitstore.Repo, cfg Config) *Cache {
	cfg = cfg.withDefaults()
	rc := newRecordCache(repo, cfg.RecordCacheSlack)
	return &Cache{repo: repo, records: rc,
		leases: newLeaseIndex(repo, rc, cfg.LeaseIndexSaveAfter),
		lists:  newListIndex(repo, rc, cfg.LeaseIndexSaveAfter),
		boards: newBoardIndex(repo),
		logs:   newLogIndex(repo, cfg.LogIndexKeep)}
}

// RecordView is a view of sn that reads records through the shared record
// cache, without the derived indexes.
func (c *Cache) RecordView(sn *gitstore.Snapshot) *lease.View { return c.records.view(sn) }

// View is the records view of sn with every derived index the decisions
// use: the record cache, the goals' active leases (what every acquire's
// scope check needs), the goals' listings (todo list and ready), the todos
// that depend on one (todo show's unblocks,
// from the goal's board model, which holds every todo's dependencies,
// instead of a scan of every todo), and the receipts that left the lease
// records (found in history).
func (c *Cache) View(sn *gitstore.Snapshot) *lease.View {
	v := c.RecordView(sn)
	v.UseActiveLeases(func(goal string) (*lease.ActiveLeases, bool) {
		ix := c.ActiveLeases(sn, goal)
		return ix, ix != nil
	})
	v.UseDependents(func(goal, id string) ([]string, bool) {
		m := c.Boards().Model(TargetOf(sn, v, time.Time{}), goal)
		if m == nil {
			return nil, false
		}
		return m.Dependents(id), true
	})
	v.UseReceiptArchive(func(goal, todo, id string, version, epoch int64) (*lease.Receipt, error) {
		return c.ArchivedReceipt(sn.Revision(), goal, todo, id, version, epoch)
	})
	v.UseListing(func(goal string) (*lease.Listing, bool) {
		l := c.lists.atSnapshot(sn, goal)
		return l, l != nil
	})
	return v
}

// ActiveLeases returns the index of goal's active leases at sn, or nil
// when it cannot be made (leases.go).
func (c *Cache) ActiveLeases(sn *gitstore.Snapshot, goal string) *lease.ActiveLeases {
	return c.leases.atSnapshot(sn, goal)
}

// Listing returns goal's listing at sn, or nil when it cannot be made
// (lists.go).
func (c *Cache) Listing(sn *gitstore.Snapshot, goal string) *lease.Listing {
	return c.lists.atSnapshot(sn, goal)
}

// Boards are the Cache's board models.
func (c *Cache) Boards() Boards { return Boards{c.boards} }

// LogKeep is how many commits per todo the log index names: a query for
// more is answered by walking the history.
func (c *Cache) LogKeep() int { return c.logs.keep }

// TodoCommits calls fn with todo's commits on head's history, newest first,
// until it returns false (logs.go).
func (c *Cache) TodoCommits(head gitstore.Hash, todo string, fn func(c gitstore.CommitMeta) (bool, error)) error {
	return c.logs.todoCommits(head, todo, fn)
}

// ArchivedReceipt returns the receipt id of todo on head's history
// (receipts.go).
func (c *Cache) ArchivedReceipt(head gitstore.Hash, goal, todo, id string, version, epoch int64) (*lease.Receipt, error) {
	return archivedReceipt(c.repo, c.logs, head, goal, todo, id, version, epoch)
}

// Records is the decoded-record cache every view of the Cache shares.
func (c *Cache) Records() *lease.RecordCache { return c.records.rc }

// Close saves what the record cache learned, pruned to the head's records.
func (c *Cache) Close() { c.records.close() }

// MaybePrune prunes the record cache once it has grown well past its size
// after the last pruning (records.go).
func (c *Cache) MaybePrune() { c.records.maybePrune() }
