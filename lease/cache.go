package lease

import (
	"bytes"
	"encoding/gob"
	"slices"
	"time"
)

// HashedFiles is implemented by Files that can enumerate files with their
// content hash without reading them (gitstore snapshots do). With a
// RecordCache, full scans (board, list, ready, scope checks) then read and
// decode only the records they have not seen before.
type HashedFiles interface {
	Files
	WalkHashes(dir string, fn func(path, hash string) error) error
	ReadHash(hash string) ([]byte, error)
}

// PathHasher is implemented by Files that can name the blob at a path
// without reading it: single-record reads then go through the record cache.
type PathHasher interface {
	HashOf(path string) (hash string, ok bool, err error)
}

// RecordCache holds decoded, validated todos and leases by the hash of their
// bytes. Content addressing makes every hit correct; the cache is only an
// optimisation and may be dropped at any time.
type RecordCache struct {
	todos   map[string]*Todo
	leases  map[string]*Lease
	seen    map[string]bool
	learned int // records decoded since load
	load    func() []byte
}

// cacheFile is the persisted form of a RecordCache.
type cacheFile struct {
	Format int
	Todos  map[string]*Todo
	Leases map[string]*Lease
}

// cacheFormat 2 decodes records straight into the cache's pointers (1
// decoded values and copied each). A hit stands for a record decoded and
// validated by this loopx (verify trusts it too): the format changes with
// every change to how todos and leases are decoded or validated. 3: lease
// records keep receipts and retired sets (holders.go, retention.go).
const cacheFormat = 3

// NewRecordCache returns a cache that calls load (once, at first use) for the
// bytes a previous Encode produced; load may return nil.
func NewRecordCache(load func() []byte) *RecordCache {
	return &RecordCache{load: load}
}

func (c *RecordCache) init() {
	if c.todos != nil {
		return
	}
	c.todos, c.leases, c.seen = map[string]*Todo{}, map[string]*Lease{}, map[string]bool{}
	if c.load == nil {
		return
	}
	data := c.load()
	if len(data) == 0 {
		return
	}
	var f cacheFile
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&f); err != nil || f.Format != cacheFormat {
		return // an unreadable cache is an empty cache
	}
	if f.Todos != nil {
		c.todos = f.Todos
	}
	if f.Leases != nil {
		c.leases = f.Leases
	}
}

func cacheGet[T any](c *RecordCache, m map[string]*T, hash string) (*T, bool) {
	rec, ok := m[hash]
	if ok {
		c.seen[hash] = true
	}
	return rec, ok
}

func cachePut[T any](c *RecordCache, m map[string]*T, hash string, rec *T) {
	m[hash] = rec
	c.seen[hash] = true
	c.learned++
}

// cachedTodo returns the cached todo of the blob hash (shared: read only).
func (v *View) cachedTodo(hash string) (*Todo, bool) {
	if hash == "" || v.cache == nil {
		return nil, false
	}
	v.cache.init()
	return cacheGet(v.cache, v.cache.todos, hash)
}

// cachedLease returns the cached lease of the blob hash (shared: read only).
func (v *View) cachedLease(hash string) (*Lease, bool) {
	if hash == "" || v.cache == nil {
		return nil, false
	}
	v.cache.init()
	return cacheGet(v.cache, v.cache.leases, hash)
}

// cacheTodo keeps a todo decoded and validated from the blob hash.
func (v *View) cacheTodo(hash string, t *Todo) {
	if hash != "" && v.cache != nil {
		v.cache.init()
		cachePut(v.cache, v.cache.todos, hash, t)
	}
}

// cacheLease keeps a lease decoded and validated from the blob hash.
func (v *View) cacheLease(hash string, l *Lease) {
	if hash != "" && v.cache != nil {
		v.cache.init()
		cachePut(v.cache, v.cache.leases, hash, l)
	}
}

// WorthSaving reports whether the cache learned enough since it was loaded
// to be worth rewriting: a few misses cost less to decode again than the
// whole cache costs to rewrite (a mutation adds one or two records to a
// cache of thousands).
func (c *RecordCache) WorthSaving() bool {
	return c.learned > 0 && c.learned*64 >= len(c.todos)+len(c.leases)
}

// Encode returns the cache's persisted form, keeping only the records seen
// since it was loaded (so it tracks the live store and stays bounded).
func (c *RecordCache) Encode() []byte {
	c.init()
	f := cacheFile{Format: cacheFormat, Todos: map[string]*Todo{}, Leases: map[string]*Lease{}}
	for h := range c.seen {
		if t, ok := c.todos[h]; ok {
			f.Todos[h] = t
		}
		if l, ok := c.leases[h]; ok {
			f.Leases[h] = l
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&f); err != nil {
		return nil
	}
	return buf.Bytes()
}

// Clone returns a deep copy of t, so a decision can modify it freely.
func (t *Todo) Clone() *Todo {
	c := *t
	c.DependsOn = slices.Clone(t.DependsOn)
	c.RequiredWriteScopes = slices.Clone(t.RequiredWriteScopes)
	c.ExcludedAgents = slices.Clone(t.ExcludedAgents)
	c.Notes = slices.Clone(t.Notes)
	c.Evidence = slices.Clone(t.Evidence)
	c.ClaimedAt = cloneTime(t.ClaimedAt)
	c.ClaimExpiresAt = cloneTime(t.ClaimExpiresAt)
	c.ClosedAt = cloneTime(t.ClosedAt)
	return &c
}

// Clone returns a deep copy of l.
func (l *Lease) Clone() *Lease {
	c := *l
	c.WriteScopes = slices.Clone(l.WriteScopes)
	c.RenewedAt = cloneTime(l.RenewedAt)
	c.ReleasedAt = cloneTime(l.ReleasedAt)
	c.Holders = make([]Holder, len(l.Holders))
	for i, h := range l.Holders {
		h.EndedAt = cloneTime(h.EndedAt)
		c.Holders[i] = h
	}
	if l.Holders == nil {
		c.Holders = nil
	}
	c.Receipts = cloneReceipts(l.Receipts)
	return &c
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
