package lease

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"hash/crc32"
	"slices"
	"strings"
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

// The persisted form of a RecordCache is cacheMagic, the todos as
// appendTodoRecords writes them (after their length, a uvarint), and the
// leases' map in gob. Decoding the todos (10,000 of them in a large goal,
// all needed by every list) is a few times cheaper than gob's was (a tenth
// of a list), and their strings share one copy of the bytes.
const cacheMagic = "loopx record cache\n"

// cacheFormat 2 decodes records straight into the cache's pointers (1
// decoded values and copied each). A hit stands for a record decoded and
// validated by this loopx (verify trusts it too): the format changes with
// every change to how todos and leases are decoded or validated. 3: lease
// records keep receipts and retired sets (holders.go, retention.go). 4:
// todos in their own encoding (todo_codec below). 5: a CRC-32C of
// everything after the magic ends the file (a damaged cache, which verify
// would take records from, loads empty). 6: receipts keep an
// expected_version of 0 (Receipt.GobEncode). 7: a saved cache holds only
// records of the store's head (Keep); caches of 6 could hold every version
// a long-lived process saw. 8: a todo or lease holding more than 64 write
// scopes is invalid (records.go checkScopeList). 9: a receipt id may be 24
// hex digits (store format 4).
const cacheFormat = 9

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
	if len(data) < len(cacheMagic)+4 {
		return
	}
	body, sum := data[len(cacheMagic):len(data)-4], data[len(data)-4:]
	if binary.BigEndian.Uint32(sum) != crc32.Checksum(body, castagnoli()) {
		return
	}
	data = data[:len(data)-4]
	// An unreadable cache is an empty cache.
	rest, ok := strings.CutPrefix(string(data), cacheMagic)
	if !ok {
		return
	}
	format, n := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	if n <= 0 || format != cacheFormat {
		return
	}
	rest = rest[n:]
	size, n := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	if n <= 0 || size > uint64(len(rest)-n) {
		return
	}
	todos, ok := decodeTodoRecords(rest[n : n+int(size)])
	if !ok {
		return
	}
	leases := map[string]*Lease{}
	if tail := rest[n+int(size):]; tail != "" {
		if err := gob.NewDecoder(strings.NewReader(tail)).Decode(&leases); err != nil {
			return
		}
	}
	c.todos, c.leases = todos, leases
	c.seen = make(map[string]bool, len(c.todos)+len(c.leases))
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

// Len is the number of records the cache holds (0 before its first use).
func (c *RecordCache) Len() int { return len(c.todos) + len(c.leases) }

// Keep drops the records whose blob hash keep rejects: those no longer in
// the store. A process that lives for many mutations (an MCP server, a
// seeder) decodes every version of the records it follows; holding them,
// or saving them, would grow without bound (a store seeded with 20,000
// mutations in one process saved a 100 MB cache that every later command
// then loaded, for 10 s).
func (c *RecordCache) Keep(keep func(hash string) bool) {
	for h := range c.todos {
		if !keep(h) {
			delete(c.todos, h)
			delete(c.seen, h)
		}
	}
	for h := range c.leases {
		if !keep(h) {
			delete(c.leases, h)
			delete(c.seen, h)
		}
	}
}

// Encode returns the cache's persisted form, keeping only the records seen
// since it was loaded (so it tracks the live store and stays bounded).
func (c *RecordCache) Encode() []byte {
	c.init()
	todos, leases := map[string]*Todo{}, map[string]*Lease{}
	for h := range c.seen {
		if t, ok := c.todos[h]; ok {
			todos[h] = t
		}
		if l, ok := c.leases[h]; ok {
			leases[h] = l
		}
	}
	recs := appendTodoRecords(nil, todos)
	out := binary.AppendUvarint([]byte(cacheMagic), cacheFormat)
	out = append(binary.AppendUvarint(out, uint64(len(recs))), recs...)
	if len(leases) > 0 {
		buf := bytes.NewBuffer(out)
		if err := gob.NewEncoder(buf).Encode(leases); err != nil {
			return nil
		}
		out = buf.Bytes()
	}
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out[len(cacheMagic):], castagnoli()))
}

// castagnoli is the CRC-32C table, made at first use (not at start-up:
// making it costs more than a command that never checks a cache takes).
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

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

// todo_codec: the todos of the record cache, keyed by blob hash, as
//
//	uvarint count, then per todo: hash, then the Todo's fields in
//	declaration order
//
// with strings as uvarint length and bytes, []string as uvarint 0 (nil) or
// 1+length and the strings, integers as varints, bools as a byte, times as
// their MarshalBinary bytes (what gob keeps of a time: the instant and the
// zone offset) after a length byte, *time.Time as 0 (nil) or that, and
// notes as []string are. Every field of Todo is written
// (TestTodoRecordCodec fills them all by reflection).

func appendTodoRecords(out []byte, todos map[string]*Todo) []byte {
	out = binary.AppendUvarint(out, uint64(len(todos)))
	for h, t := range todos {
		out = appendCacheString(out, h)
		out = appendTodoRecord(out, t)
	}
	return out
}

func appendTodoRecord(out []byte, t *Todo) []byte {
	out = appendCacheString(out, t.ID)
	out = appendCacheString(out, t.Text)
	out = appendCacheString(out, t.Status)
	out = appendCacheString(out, t.Priority)
	out = appendCacheStrings(out, t.DependsOn)
	out = appendCacheStrings(out, t.RequiredWriteScopes)
	out = appendCacheString(out, t.BoundAgent)
	out = appendCacheStrings(out, t.ExcludedAgents)
	out = appendCacheString(out, t.ClaimedBy)
	out = appendCacheString(out, t.ClaimScopeAgentID)
	out = binary.AppendVarint(out, t.ClaimTTLMinutes)
	out = appendCacheTimePtr(out, t.ClaimedAt)
	out = appendCacheTimePtr(out, t.ClaimExpiresAt)
	if t.Notes == nil {
		out = append(out, 0)
	} else {
		out = binary.AppendUvarint(out, uint64(len(t.Notes))+1)
		for _, n := range t.Notes {
			out = appendCacheString(out, n.Text)
			out = appendCacheString(out, n.Author)
			out = appendCacheTime(out, n.At)
			out = appendCacheString(out, n.Facts.ClaimedBy)
			out = appendCacheString(out, n.Facts.LeaseOwner)
			out = binary.AppendVarint(out, n.Facts.LeaseEpoch)
		}
	}
	out = appendCacheStrings(out, t.Evidence)
	out = appendCacheString(out, t.SupersededBy)
	out = appendCacheString(out, t.Reason)
	out = appendCacheBool(out, t.Archived)
	out = appendCacheString(out, t.CreatedBy)
	out = appendCacheTime(out, t.CreatedAt)
	out = appendCacheString(out, t.UpdatedBy)
	out = appendCacheTime(out, t.UpdatedAt)
	out = appendCacheString(out, t.ClosedBy)
	out = appendCacheTimePtr(out, t.ClosedAt)
	return binary.AppendVarint(out, t.LeaseEpoch)
}

func appendCacheString(out []byte, s string) []byte {
	return append(binary.AppendUvarint(out, uint64(len(s))), s...)
}

func appendCacheStrings(out []byte, ss []string) []byte {
	if ss == nil {
		return append(out, 0)
	}
	out = binary.AppendUvarint(out, uint64(len(ss))+1)
	for _, s := range ss {
		out = appendCacheString(out, s)
	}
	return out
}

func appendCacheBool(out []byte, b bool) []byte {
	if b {
		return append(out, 1)
	}
	return append(out, 0)
}

func appendCacheTime(out []byte, t time.Time) []byte {
	b, err := t.MarshalBinary()
	if err != nil || len(b) == 0 || len(b) > 255 {
		// A time gob could not keep either (its zone offset is not whole
		// minutes... or out of range): a length the decoder refuses.
		return append(out, 0)
	}
	return append(append(out, byte(len(b))), b...)
}

func appendCacheTimePtr(out []byte, t *time.Time) []byte {
	if t == nil {
		return append(out, 0)
	}
	return appendCacheTime(append(out, 1), *t)
}

// cacheReader reads what appendTodoRecords wrote; its strings are cut
// from the one string of all the bytes. A read past the end or a bad length
// sets bad (the cache is then empty).
type cacheReader struct {
	s   string
	i   int
	bad bool
}

// uvarint reads what binary.AppendUvarint wrote.
func (r *cacheReader) uvarint() uint64 {
	var x uint64
	for shift := uint(0); r.i < len(r.s); shift += 7 {
		c := r.s[r.i]
		r.i++
		if shift == 63 && c > 1 {
			break // overflow
		}
		if c < 0x80 {
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
	}
	r.bad, r.i = true, len(r.s)
	return 0
}

// varint reads what binary.AppendVarint wrote.
func (r *cacheReader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// take returns the next n bytes' offset, or -1 when there are fewer.
func (r *cacheReader) take(n uint64) int {
	if n > uint64(len(r.s)-r.i) {
		r.bad, r.i = true, len(r.s)
		return -1
	}
	at := r.i
	r.i += int(n)
	return at
}

func (r *cacheReader) str() string {
	n := r.uvarint()
	at := r.take(n)
	if at < 0 {
		return ""
	}
	return r.s[at : at+int(n)]
}

func (r *cacheReader) strs() []string {
	n := r.uvarint()
	if n == 0 || r.bad {
		return nil
	}
	n--
	if n > uint64(len(r.s)-r.i) { // every string takes a byte at least
		r.bad, r.i = true, len(r.s)
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *cacheReader) byte1() byte {
	at := r.take(1)
	if at < 0 {
		return 0
	}
	return r.s[at]
}

func (r *cacheReader) instant() time.Time {
	n := uint64(r.byte1())
	at := r.take(n)
	if at < 0 {
		r.bad = true
		return time.Time{}
	}
	b := r.s[at : at+int(n)]
	// A UTC time (what records hold), version 1 of MarshalBinary: read
	// without the copy UnmarshalBinary needs; it gives the same Time.
	if n == 15 && b[0] == 1 && b[13] == 0xff && b[14] == 0xff {
		sec := int64(binary.BigEndian.Uint64([]byte(b[1:9])))
		nsec := int64(binary.BigEndian.Uint32([]byte(b[9:13])))
		if nsec < 1e9 {
			return time.Unix(sec-unixToInternal, nsec).UTC()
		}
	}
	var t time.Time
	if n == 0 || t.UnmarshalBinary([]byte(b)) != nil {
		r.bad = true
	}
	return t
}

// unixToInternal is the seconds from January 1 of year 1 (where
// MarshalBinary counts from) to the Unix epoch.
const unixToInternal int64 = (1969*365 + 1969/4 - 1969/100 + 1969/400) * 86400

func (r *cacheReader) instantPtr() *time.Time {
	if r.byte1() == 0 {
		return nil
	}
	t := r.instant()
	return &t
}

// minTodoRecord and minNoteRecord are the fewest bytes a todo (with its
// hash) and a note take: a count read from a damaged file that would need
// more is refused before anything is allocated for it.
const minTodoRecord, minNoteRecord = 27, 7

// decodeTodoRecords decodes what appendTodoRecords wrote; ok is false for
// anything else.
func decodeTodoRecords(b string) (_ map[string]*Todo, ok bool) {
	r := &cacheReader{s: b}
	n := r.uvarint()
	if r.bad || n > uint64(len(b))/minTodoRecord {
		return nil, false
	}
	todos := make(map[string]*Todo, n)
	recs := make([]Todo, n) // one allocation for all of them
	for i := range recs {
		h := r.str()
		t := &recs[i]
		if !readTodoRecord(r, t) {
			return nil, false
		}
		todos[h] = t
	}
	if r.i != len(b) {
		return nil, false
	}
	return todos, true
}

// readTodoRecord reads one todo as appendTodoRecord wrote it into t; false
// when the bytes are not one.
func readTodoRecord(r *cacheReader, t *Todo) bool {
	t.ID = r.str()
	t.Text = r.str()
	t.Status = r.str()
	t.Priority = r.str()
	t.DependsOn = r.strs()
	t.RequiredWriteScopes = r.strs()
	t.BoundAgent = r.str()
	t.ExcludedAgents = r.strs()
	t.ClaimedBy = r.str()
	t.ClaimScopeAgentID = r.str()
	t.ClaimTTLMinutes = r.varint()
	t.ClaimedAt = r.instantPtr()
	t.ClaimExpiresAt = r.instantPtr()
	if k := r.uvarint(); k > 0 && !r.bad {
		if k-1 > uint64(len(r.s)-r.i)/minNoteRecord {
			return false
		}
		t.Notes = make([]Note, k-1)
		for j := range t.Notes {
			no := &t.Notes[j]
			no.Text = r.str()
			no.Author = r.str()
			no.At = r.instant()
			no.Facts.ClaimedBy = r.str()
			no.Facts.LeaseOwner = r.str()
			no.Facts.LeaseEpoch = r.varint()
		}
	}
	t.Evidence = r.strs()
	t.SupersededBy = r.str()
	t.Reason = r.str()
	t.Archived = r.byte1() != 0
	t.CreatedBy = r.str()
	t.CreatedAt = r.instant()
	t.UpdatedBy = r.str()
	t.UpdatedAt = r.instant()
	t.ClosedBy = r.str()
	t.ClosedAt = r.instantPtr()
	t.LeaseEpoch = r.varint()
	return !r.bad
}

// gob drops a pointer to a zero value (it decodes as nil), and a receipt's
// expected_version 0 is a value the record keeps ("expected_version: 0"):
// a lease record read from the cache and written back by a decision lost
// it, and its commit no longer verified. Receipts cross the cache with the
// pointer's presence spelled out.
type receiptWire struct {
	R           receiptFields
	HasExpected bool
	Expected    int64
}

// receiptFields is Receipt without its gob methods.
type receiptFields Receipt

// GobEncode implements gob.GobEncoder (the record cache's lease encoding).
func (r Receipt) GobEncode() ([]byte, error) {
	w := receiptWire{R: receiptFields(r)}
	if r.ExpectedVersion != nil {
		w.HasExpected, w.Expected = true, *r.ExpectedVersion
	}
	w.R.ExpectedVersion = nil
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(&w)
	return buf.Bytes(), err
}

// GobDecode implements gob.GobDecoder.
func (r *Receipt) GobDecode(data []byte) error {
	var w receiptWire
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return err
	}
	*r = Receipt(w.R)
	if w.HasExpected {
		v := w.Expected
		r.ExpectedVersion = &v
	}
	return nil
}
