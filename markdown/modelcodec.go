package markdown

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"time"
)

// The persisted form of a Model (Save, LoadModel): a root and pages.
//
// The root holds the goal, the directory of the todo pages (each page's
// first todo, size, name, and counts per section with the render times
// they hold for), the directory of the lease pages, the todos per
// priority, the dependents index and the timeline prefix; a page holds its
// entries, with the texts the last Render wrote. A page is named by the
// first 16 bytes of the SHA-256 of its bytes, so a page is never changed
// in place: a change writes a new page and a new root, and a page read
// back is checked against its name. Loading a model reads the root alone;
// a page is read when a render or a change needs it.
//
//	root:  "LXBM" version renderer
//	       goal: present byte, id, title, status, handoff mode
//	       todo pages: count, then per page: first priority, first id,
//	               size, name, six counts, flags, [lo], [hi]
//	       lease pages: count, then per page: first todo id, size, name
//	       bands: count, then priority and todos
//	       dependents: count, then id, count and the dependent ids
//	       timeline: leases with holders, prefix length, then todo id
//	               and latest start per lease
//	       CRC-32 (IEEE) of everything before it, big endian
//	todo page: "LXTP" version renderer count, then per todo: id,
//	       priority, status, flags, [claim expiry], [lease expiry],
//	       dependency count and per dependency its id and status,
//	       [text, dependency key]
//	lease page: "LXLP" version count, then per lease: todo id, flags,
//	       expiry, [latest start], [chart]
//
// Strings are a uvarint length and the bytes; times a varint of Unix
// seconds and a uvarint of nanoseconds. Any damage is an error (a root)
// or a *StaleError (a page, found when it is read): the model is rebuilt
// from the records. Version 2 (one file holding every todo, decoded and
// encoded again on every mutation) and version 1 are refused.

const (
	modelMagic   = "LXBM"
	modelVersion = 3
	todoPageTag  = "LXTP"
	leasePageTag = "LXLP"
	pageVersion  = 1
	nameBytes    = 16
)

// Todo entry flags.
const (
	flagArchived = 1 << iota
	flagClaimed
	flagText
	flagLeased
	flagExpiring
	flagTextClaimLive
	flagTextLeaseLive
	flagHasLease
)

// Lease entry flags.
const (
	flagActive = 1 << iota
	flagHolders
	flagChart
)

// Summary flags.
const (
	flagLo = 1 << iota
	flagHi
)

var errBadModel = errors.New("board model: not a valid encoding")

// pageName names a page by its bytes.
func pageName(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:nameBytes])
}

// encoder appends the encoding's items.
type encoder struct{ b []byte }

func (w *encoder) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *encoder) uint(n int)  { w.b = binary.AppendUvarint(w.b, uint64(n)) }
func (w *encoder) byte(c byte) { w.b = append(w.b, c) }
func (w *encoder) time(t time.Time) {
	w.b = binary.AppendVarint(w.b, t.Unix())
	w.b = binary.AppendUvarint(w.b, uint64(t.Nanosecond()))
}

// name appends a page name as its bytes.
func (w *encoder) name(n string) {
	raw, err := hex.DecodeString(n)
	if err != nil || len(raw) != nameBytes {
		panic("markdown: page name " + n) // names are pageName's
	}
	w.b = append(w.b, raw...)
}

// Save writes the pages that changed since the model was loaded or last
// saved with put (name, bytes), and returns the root, and the names of the
// pages the previous root named that this one does not (the caller may
// remove them). Counts of changed pages are taken at the last Render's
// time; texts and charts that Render did not write are left out.
func (m *Model) Save(put func(name string, data []byte) error) (root []byte, unused []string, err error) {
	for _, p := range m.pages {
		if p.name != "" && !p.dirty {
			continue
		}
		if err := m.read(p); err != nil {
			return nil, nil, err
		}
		if !p.sum.ok {
			p.sum = m.summarize(p, m.now)
		}
		data := m.encodeTodoPage(p)
		p.name = pageName(data)
		if err := put(p.name, data); err != nil {
			return nil, nil, err
		}
		p.dirty = false
	}
	for _, p := range m.lpages {
		if p.name != "" && !p.dirty {
			continue
		}
		if err := m.readLeases(p); err != nil {
			return nil, nil, err
		}
		data := m.encodeLeasePage(p)
		p.name = pageName(data)
		if err := put(p.name, data); err != nil {
			return nil, nil, err
		}
		p.dirty = false
	}
	names := m.Pages()
	for _, n := range m.saved {
		if _, found := slices.BinarySearch(names, n); !found {
			unused = append(unused, n)
		}
	}
	m.saved = names
	return m.encodeRoot(), unused, nil
}

// Pages returns the names of the saved pages the model names, sorted.
func (m *Model) Pages() []string {
	out := make([]string, 0, len(m.pages)+len(m.lpages))
	for _, p := range m.pages {
		if p.name != "" {
			out = append(out, p.name)
		}
	}
	for _, p := range m.lpages {
		if p.name != "" {
			out = append(out, p.name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (m *Model) encodeRoot() []byte {
	w := &encoder{b: make([]byte, 0, 256+64*len(m.pages)+32*len(m.lpages)+32*len(m.chart))}
	w.b = append(w.b, modelMagic...)
	w.byte(modelVersion)
	w.byte(byte(m.renderer))
	if m.goal.present {
		w.byte(1)
	} else {
		w.byte(0)
	}
	w.str(m.goal.id)
	w.str(m.goal.title)
	w.str(m.goal.status)
	w.str(m.goal.handoffMode)
	w.uint(len(m.pages))
	for _, p := range m.pages {
		w.str(p.first.priority)
		w.str(p.first.id)
		w.uint(p.n)
		w.name(p.name)
		for _, c := range p.sum.counts {
			w.uint(c)
		}
		var f byte
		if p.sum.hasLo {
			f |= flagLo
		}
		if p.sum.hasHi {
			f |= flagHi
		}
		w.byte(f)
		if p.sum.hasLo {
			w.time(p.sum.lo)
		}
		if p.sum.hasHi {
			w.time(p.sum.hi)
		}
	}
	w.uint(len(m.lpages))
	for _, p := range m.lpages {
		w.str(p.first)
		w.uint(p.n)
		w.name(p.name)
	}
	bands := m.bandList()
	w.uint(len(bands))
	for _, b := range bands {
		w.str(b)
		w.uint(m.bands[b])
	}
	ids := make([]string, 0, len(m.dependents))
	for id := range m.dependents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.uint(len(ids))
	for _, id := range ids {
		w.str(id)
		w.uint(len(m.dependents[id]))
		for _, d := range m.dependents[id] {
			w.str(d)
		}
	}
	w.uint(m.charted)
	w.uint(len(m.chart))
	for _, r := range m.chart {
		w.str(r.id)
		w.time(r.latest)
	}
	return binary.BigEndian.AppendUint32(w.b, crc32.ChecksumIEEE(w.b))
}

func (m *Model) encodeTodoPage(p *todoPage) []byte {
	size := 16
	for _, e := range p.entries {
		size += 48 + len(e.id)
		for _, d := range e.deps {
			size += 16 + len(d)
		}
		if e.text != nil {
			size += 8 + len(e.text.lines) + len(e.text.depKey)
		}
	}
	w := &encoder{b: make([]byte, 0, size)}
	w.b = append(w.b, todoPageTag...)
	w.byte(pageVersion)
	w.byte(byte(m.renderer))
	w.uint(len(p.entries))
	for _, e := range p.entries {
		w.str(e.id)
		w.str(e.priority)
		w.str(e.status)
		keep := e.text != nil && (m.shown == nil || m.shown[e.id])
		var f byte
		if e.archived {
			f |= flagArchived
		}
		if e.claimed {
			f |= flagClaimed
		}
		if keep {
			f |= flagText
		}
		if e.leased {
			f |= flagLeased
		}
		if e.claimUntil != nil {
			f |= flagExpiring
		}
		if keep && e.text.live.claim {
			f |= flagTextClaimLive
		}
		if keep && e.text.live.lease {
			f |= flagTextLeaseLive
		}
		if e.hasLease {
			f |= flagHasLease
		}
		w.byte(f)
		if e.claimUntil != nil {
			w.time(*e.claimUntil)
		}
		if e.hasLease {
			w.time(e.leaseUntil)
		}
		w.uint(len(e.deps))
		for i, d := range e.deps {
			w.str(d)
			w.str(e.depStatus[i])
		}
		if keep {
			w.str(e.text.lines)
			w.str(e.text.depKey)
		}
	}
	return w.b
}

func (m *Model) encodeLeasePage(p *leasePage) []byte {
	size := 16
	for _, e := range p.entries {
		size += 40 + len(e.todoID) + len(e.chart)
	}
	w := &encoder{b: make([]byte, 0, size)}
	w.b = append(w.b, leasePageTag...)
	w.byte(pageVersion)
	w.uint(len(p.entries))
	for _, e := range p.entries {
		w.str(e.todoID)
		keep := e.chart != "" && (m.drawn == nil || m.drawn[e.todoID])
		var f byte
		if e.active {
			f |= flagActive
		}
		if e.holders {
			f |= flagHolders
		}
		if keep {
			f |= flagChart
		}
		w.byte(f)
		w.time(e.expires)
		if e.holders {
			w.time(e.latest)
		}
		if keep {
			w.str(e.chart)
		}
	}
	return w.b
}

// reader decodes with bounds checks; the first failure sticks.
type reader struct {
	b   []byte
	s   string // the same bytes as a string: decoded strings share it
	off int    // position of b in s
	bad bool
	// interned holds the few distinct priorities and statuses.
	interned []string
}

func newReader(b []byte) *reader { return &reader{b: b, s: string(b)} }

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	r.off++
	return c
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	r.off += n
	return v
}

// time reads a time stamp (nanoseconds below a second).
func (r *reader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= 1e9 {
		r.bad = true
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// count reads a count no larger than the bytes left (each item takes one).
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return 0
	}
	return int(n)
}

// num reads a number no larger than limit.
func (r *reader) num(limit int) int {
	n := r.uvarint()
	if n > uint64(limit) {
		r.bad = true
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.b = r.b[n:]
	r.off += int(n)
	return s
}

func (r *reader) intern() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) || n > 64 {
		r.bad = true
		return ""
	}
	var s string
	for _, x := range r.interned {
		if x == string(r.b[:n]) {
			s = x
			break
		}
	}
	if s == "" && n > 0 {
		s = r.s[r.off : r.off+int(n)]
		if len(r.interned) < 16 {
			r.interned = append(r.interned, s)
		}
	}
	r.b = r.b[n:]
	r.off += int(n)
	return s
}

func (r *reader) name() string {
	if len(r.b) < nameBytes {
		r.bad = true
		return ""
	}
	n := hex.EncodeToString(r.b[:nameBytes])
	r.b = r.b[nameBytes:]
	r.off += nameBytes
	return n
}

// LoadModel reads the root Save returned; its pages are read from src as
// they are needed. Any damage to the root (a wrong checksum, a truncation,
// entries out of order) is an error, never a wrong model.
func LoadModel(root []byte, src PageSource) (*Model, error) {
	if len(root) < len(modelMagic)+1+4 || string(root[:len(modelMagic)]) != modelMagic || root[len(modelMagic)] != modelVersion {
		return nil, errBadModel
	}
	body, sum := root[:len(root)-4], binary.BigEndian.Uint32(root[len(root)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errBadModel
	}
	r := newReader(body[len(modelMagic)+1:])
	m := NewModel()
	m.src = src
	if m.renderer = int(r.byte()); m.renderer != RendererTimed && m.renderer != RendererUntimed {
		return nil, errBadModel
	}
	m.goal.present = r.byte() == 1
	m.goal.id, m.goal.title, m.goal.status, m.goal.handoffMode = r.str(), r.str(), r.str(), r.str()
	n := r.count()
	m.pages = make([]*todoPage, 0, n)
	total := 0
	for i := 0; i < n && !r.bad; i++ {
		p := &todoPage{first: orderKey{r.intern(), r.str()}}
		p.n = r.num(maxPage)
		p.name = r.name()
		s := &p.sum
		sum := 0
		for k := range s.counts {
			s.counts[k] = r.num(maxPage)
			sum += s.counts[k]
		}
		f := r.byte()
		if f&^(flagLo|flagHi) != 0 || p.n == 0 || sum != p.n {
			return nil, errBadModel
		}
		if s.hasLo = f&flagLo != 0; s.hasLo {
			s.lo = r.time()
		}
		if s.hasHi = f&flagHi != 0; s.hasHi {
			s.hi = r.time()
		}
		s.ok = true
		if k := len(m.pages); k > 0 && keyCmp(m.pages[k-1].first, p.first) >= 0 {
			return nil, errBadModel
		}
		total += p.n
		m.pages = append(m.pages, p)
	}
	n = r.count()
	m.lpages = make([]*leasePage, 0, n)
	for i := 0; i < n && !r.bad; i++ {
		p := &leasePage{first: r.str()}
		p.n = r.num(maxPage)
		p.name = r.name()
		if p.n == 0 || (len(m.lpages) > 0 && m.lpages[len(m.lpages)-1].first >= p.first) {
			return nil, errBadModel
		}
		m.lpages = append(m.lpages, p)
	}
	n = r.count()
	banded := 0
	for i := 0; i < n && !r.bad; i++ {
		b, k := r.intern(), r.num(total)
		if k == 0 || m.bands[b] != 0 {
			return nil, errBadModel
		}
		m.bands[b] = k
		banded += k
	}
	if banded != total {
		return nil, errBadModel
	}
	n = r.count()
	prev := ""
	for i := 0; i < n && !r.bad; i++ {
		id := r.str()
		k := r.count()
		if k == 0 || (i > 0 && id <= prev) {
			return nil, errBadModel
		}
		prev = id
		ds := make([]string, k)
		for j := range ds {
			if ds[j] = r.str(); j > 0 && ds[j] <= ds[j-1] {
				return nil, errBadModel
			}
		}
		m.dependents[id] = ds
	}
	m.charted = r.num(1 << 30)
	n = r.count()
	if n > chartKeep || n > m.charted {
		return nil, errBadModel
	}
	for i := 0; i < n && !r.bad; i++ {
		ref := chartRef{r.str(), r.time()}
		if i > 0 && chartCmp(m.chart[i-1], ref) >= 0 {
			return nil, errBadModel
		}
		m.chart = append(m.chart, ref)
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadModel
	}
	m.saved = m.Pages()
	return m, nil
}

// fetch reads saved page name from the model's source, checked against
// its name.
func (m *Model) fetch(name string) ([]byte, error) {
	if m.src == nil || name == "" {
		return nil, errStale("page " + name)
	}
	data, err := m.src.Page(name)
	if err != nil || data == nil || pageName(data) != name {
		return nil, errStale("page " + name)
	}
	return data, nil
}

// read reads the entries of todo page p, when it has not been.
func (m *Model) read(p *todoPage) error {
	if p.entries != nil {
		return nil
	}
	data, err := m.fetch(p.name)
	if err != nil {
		return err
	}
	entries, err := m.decodeTodoPage(data)
	if err != nil || len(entries) != p.n || keyCmp(orderKey{entries[0].priority, entries[0].id}, p.first) != 0 {
		return errStale("page " + p.name)
	}
	p.entries = entries
	return nil
}

func (m *Model) decodeTodoPage(data []byte) ([]*todoEntry, error) {
	if len(data) < len(todoPageTag)+2 || string(data[:len(todoPageTag)]) != todoPageTag ||
		data[len(todoPageTag)] != pageVersion || int(data[len(todoPageTag)+1]) != m.renderer {
		return nil, errBadModel
	}
	r := newReader(data[len(todoPageTag)+2:])
	n := r.num(maxPage)
	slab := make([]todoEntry, n)
	out := make([]*todoEntry, 0, n)
	for i := 0; i < n && !r.bad; i++ {
		e := &slab[i]
		e.id, e.priority, e.status = r.str(), r.intern(), r.intern()
		f := r.byte()
		if f&flagText == 0 && f&(flagTextClaimLive|flagTextLeaseLive) != 0 {
			return nil, errBadModel
		}
		e.archived, e.claimed, e.leased, e.hasLease = f&flagArchived != 0, f&flagClaimed != 0, f&flagLeased != 0, f&flagHasLease != 0
		if e.leased && !e.hasLease {
			return nil, errBadModel
		}
		if f&flagExpiring != 0 {
			until := r.time()
			e.claimUntil = &until
		}
		if e.hasLease {
			e.leaseUntil = r.time()
		}
		if nd := r.count(); nd > 0 {
			e.deps, e.depStatus = make([]string, nd), make([]string, nd)
			for j := range e.deps {
				e.deps[j], e.depStatus[j] = r.str(), r.intern()
			}
		}
		if f&flagText != 0 {
			e.text = &todoText{lines: r.str(), depKey: r.str(),
				live: live{claim: f&flagTextClaimLive != 0, lease: f&flagTextLeaseLive != 0}}
		}
		if k := len(out); k > 0 && orderCmp(out[k-1], e) >= 0 {
			return nil, errBadModel
		}
		out = append(out, e)
	}
	if r.bad || len(r.b) != 0 || len(out) == 0 {
		return nil, errBadModel
	}
	return out, nil
}

// readLeases reads the entries of lease page p, when it has not been.
func (m *Model) readLeases(p *leasePage) error {
	if p.entries != nil {
		return nil
	}
	data, err := m.fetch(p.name)
	if err != nil {
		return err
	}
	if len(data) < len(leasePageTag)+1 || string(data[:len(leasePageTag)]) != leasePageTag || data[len(leasePageTag)] != pageVersion {
		return errStale("page " + p.name)
	}
	r := newReader(data[len(leasePageTag)+1:])
	n := r.num(maxPage)
	slab := make([]leaseEntry, n)
	out := make([]*leaseEntry, 0, n)
	for i := 0; i < n && !r.bad; i++ {
		e := &slab[i]
		e.todoID = r.str()
		f := r.byte()
		if f&^(flagActive|flagHolders|flagChart) != 0 {
			return errStale("page " + p.name)
		}
		e.active, e.holders = f&flagActive != 0, f&flagHolders != 0
		e.expires = r.time()
		if e.holders {
			e.latest = r.time()
		}
		if f&flagChart != 0 {
			e.chart = r.str()
		}
		if k := len(out); k > 0 && strings.Compare(out[k-1].todoID, e.todoID) >= 0 {
			return errStale("page " + p.name)
		}
		out = append(out, e)
	}
	if r.bad || len(r.b) != 0 || len(out) != p.n || out[0].todoID != p.first {
		return errStale("page " + p.name)
	}
	p.entries = out
	return nil
}
