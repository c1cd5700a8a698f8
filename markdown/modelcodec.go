package markdown

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"time"
)

// The persisted form of a Model (Encode, DecodeModel): a compact binary
// record, cheap to read back for a goal of many todos, guarded by a
// checksum. It is a cache: a model that does not decode is rebuilt from the
// records.
//
//	"LXBM" version renderer
//	goal:   present byte, id, title, status, handoff mode
//	todos:  count, then in board order: id, priority, status, flags,
//	        [claim expiry], dependency count and ids, [text, dependency key]
//	leases: count, then by todo id: todo id, flags, expiry, [latest start],
//	        [chart]
//	CRC-32 (IEEE) of everything before it, big endian
//
// Strings are a uvarint length and the bytes; times a varint of Unix
// seconds and a uvarint of nanoseconds. Only the texts the last Render
// wrote are kept, each flagged with how its claim and its lease counted
// when it was written. Version 1 (before the board had a render time)
// kept no expiries: it is refused, and the model rebuilt.

const (
	modelMagic   = "LXBM"
	modelVersion = 2
)

const (
	flagArchived = 1 << iota
	flagClaimed
	flagText
	flagLeased
	flagExpiring
	flagTextClaimLive
	flagTextLeaseLive
)

const (
	flagActive = 1 << iota
	flagHolders
	flagChart
)

// Encode returns the persisted form of m.
func (m *Model) Encode() []byte {
	// One allocation of the right size: a CLI process runs on fresh
	// memory, where growing a buffer by doubling costs page faults.
	size := 64 + len(m.goal.title)
	for _, e := range m.order {
		size += 16 + len(e.id) + len(e.priority) + len(e.status)
		if e.claimUntil != nil {
			size += 16
		}
		for _, d := range e.deps {
			size += 4 + len(d)
		}
		if e.text != nil {
			size += 8 + len(e.text.lines) + len(e.text.depKey)
		}
	}
	for _, e := range m.leases {
		size += 40 + len(e.todoID) + len(e.chart)
	}
	b := make([]byte, 0, size)
	b = append(append(b, modelMagic...), modelVersion, byte(m.renderer))
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	stamp := func(t time.Time) {
		b = binary.AppendVarint(b, t.Unix())
		b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	}
	g := m.goal
	if g.present {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	str(g.id)
	str(g.title)
	str(g.status)
	str(g.handoffMode)
	b = binary.AppendUvarint(b, uint64(len(m.order)))
	for _, e := range m.order {
		str(e.id)
		str(e.priority)
		str(e.status)
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
		b = append(b, f)
		if e.claimUntil != nil {
			stamp(*e.claimUntil)
		}
		b = binary.AppendUvarint(b, uint64(len(e.deps)))
		for _, d := range e.deps {
			str(d)
		}
		if keep {
			str(e.text.lines)
			str(e.text.depKey)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(m.leases)))
	for _, e := range m.leases {
		str(e.todoID)
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
		b = append(b, f)
		stamp(e.expires)
		if e.holders {
			stamp(e.latest)
		}
		if keep {
			str(e.chart)
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

var errBadModel = errors.New("board model: not a valid encoding")

// modelReader decodes with bounds checks; the first failure sticks.
type modelReader struct {
	b   []byte
	s   string // the same bytes as a string: decoded strings share it
	off int    // position of b in s
	bad bool
	// interned holds the few distinct priorities and statuses.
	interned []string
}

func (r *modelReader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	r.off++
	return c
}

func (r *modelReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	r.off += n
	return v
}

func (r *modelReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	r.off += n
	return v
}

// time reads a time stamp wrote (nanoseconds below a second).
func (r *modelReader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= 1e9 {
		r.bad = true
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// count reads a count no larger than the bytes left (each item takes one).
func (r *modelReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return 0
	}
	return int(n)
}

func (r *modelReader) str() string {
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

func (r *modelReader) intern() string {
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

// DecodeModel reads a model Encode wrote. Any damage (a wrong checksum, a
// truncation, entries out of order) is an error, never a wrong model.
func DecodeModel(data []byte) (*Model, error) {
	if len(data) < len(modelMagic)+1+4 || !strings.HasPrefix(string(data[:len(modelMagic)]), modelMagic) || data[len(modelMagic)] != modelVersion {
		return nil, errBadModel
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errBadModel
	}
	b := body[len(modelMagic)+1:]
	r := &modelReader{b: b, s: string(b)}
	m := NewModel()
	if m.renderer = int(r.byte()); m.renderer != RendererTimed && m.renderer != RendererUntimed {
		return nil, errBadModel
	}
	m.goal.present = r.byte() == 1
	m.goal.id, m.goal.title, m.goal.status, m.goal.handoffMode = r.str(), r.str(), r.str(), r.str()
	n := r.count()
	m.order = make([]*todoEntry, 0, n)
	slab := make([]todoEntry, n)
	for i := 0; i < n && !r.bad; i++ {
		e := &slab[i]
		e.id, e.priority, e.status = r.str(), r.intern(), r.intern()
		f := r.byte()
		if f&^(flagArchived|flagClaimed|flagText|flagLeased|flagExpiring|flagTextClaimLive|flagTextLeaseLive) != 0 ||
			(f&flagText == 0 && f&(flagTextClaimLive|flagTextLeaseLive) != 0) {
			return nil, errBadModel
		}
		e.archived, e.claimed, e.leased = f&flagArchived != 0, f&flagClaimed != 0, f&flagLeased != 0
		if f&flagExpiring != 0 {
			until := r.time()
			e.claimUntil = &until
		}
		if nd := r.count(); nd > 0 {
			e.deps = make([]string, nd)
			for j := range e.deps {
				e.deps[j] = r.str()
			}
		}
		if f&flagText != 0 {
			e.text = &todoText{lines: r.str(), depKey: r.str(),
				live: live{claim: f&flagTextClaimLive != 0, lease: f&flagTextLeaseLive != 0}}
		}
		if k := len(m.order); k > 0 && orderCmp(m.order[k-1], e) >= 0 {
			return nil, errBadModel
		}
		m.order = append(m.order, e)
	}
	n = r.count()
	m.leases = make([]*leaseEntry, 0, n)
	lslab := make([]leaseEntry, n)
	for i := 0; i < n && !r.bad; i++ {
		e := &lslab[i]
		e.todoID = r.str()
		f := r.byte()
		if f&^(flagActive|flagHolders|flagChart) != 0 {
			return nil, errBadModel
		}
		e.active, e.holders = f&flagActive != 0, f&flagHolders != 0
		e.expires = r.time()
		if e.holders {
			e.latest = r.time()
		}
		if f&flagChart != 0 {
			e.chart = r.str()
		}
		if k := len(m.leases); k > 0 && m.leases[k-1].todoID >= e.todoID {
			return nil, errBadModel
		}
		m.leases = append(m.leases, e)
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadModel
	}
	return m, nil
}
