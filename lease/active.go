package lease

// The active leases of a goal, as every acquire needs them.
//
// An acquire (and a transfer, a claim with a lease key, ready) checks the
// requested scopes against every effective lease of the goal's other
// todos. Only an active, unexpired lease with scopes can be one, so the
// scan needs, of each lease record, just its status, todo, expiry and
// scopes; its todo and owner are read only for the leases whose scopes
// overlap (ScopeConflicts). ActiveLeases keeps exactly that, by record
// path, for one revision: derived data that the root package keeps beside
// the store and brings up to date from the tree diff between the revision
// it reflects and the head (so it costs what changed, not the number of
// leases), handed to a view with UseActiveLeases. A view without one scans
// the lease records, and both give the same answer: the index says only
// which leases to look at, and those are read from the view itself.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// ActiveLease is what the scans need of one active lease record.
type ActiveLease struct {
	Path      string
	TodoID    string
	ExpiresAt time.Time
	Scopes    []string // as recorded
	// Owner and OwnerRegistration are the record's: with the expiry they
	// are all of the record an effectiveness check reads (todo ready
	// judges every active lease without decoding one).
	Owner             string
	OwnerRegistration int64
}

// Lease is the part of the record the entry keeps, as a lease: enough for
// LeaseEffective and for naming its holder, never for a decision's record.
func (e ActiveLease) Lease() *Lease {
	return &Lease{TodoID: e.TodoID, Owner: e.Owner, Status: LeaseActive, ExpiresAt: e.ExpiresAt,
		WriteScopes: e.Scopes, OwnerRegistration: e.OwnerRegistration}
}

// ActiveLeases is the active lease records (status active) of one goal at
// one revision, by path.
type ActiveLeases struct {
	byPath map[string]ActiveLease
	// sorted is List's answer once made (nil: not yet, or changed since):
	// an index is shared by the views of its revision, and an acquire's
	// scope check lists it once per process.
	sorted atomic.Pointer[[]ActiveLease]
}

// NewActiveLeases returns an empty index.
func NewActiveLeases() *ActiveLeases { return &ActiveLeases{byPath: map[string]ActiveLease{}} }

// Set records the lease record l found at path: kept when it is active,
// dropped otherwise (nil: the record is gone).
func (a *ActiveLeases) Set(path string, l *Lease) {
	a.sorted.Store(nil)
	if l == nil || l.Status != LeaseActive {
		delete(a.byPath, path)
		return
	}
	e := ActiveLease{Path: path, TodoID: l.TodoID, ExpiresAt: l.ExpiresAt.UTC(), Owner: l.Owner, OwnerRegistration: l.OwnerRegistration}
	if len(l.WriteScopes) > 0 {
		e.Scopes = slices.Clone(l.WriteScopes)
	}
	a.byPath[path] = e
}

// Len is the number of active leases.
func (a *ActiveLeases) Len() int { return len(a.byPath) }

// Clone returns a copy that can be changed independently.
func (a *ActiveLeases) Clone() *ActiveLeases {
	c := NewActiveLeases()
	for p, e := range a.byPath {
		c.byPath[p] = e
	}
	c.sorted.Store(a.sorted.Load()) // never changed in place: shared
	return c
}

// List returns the entries sorted by path. The slice is shared: callers
// must not change it.
func (a *ActiveLeases) List() []ActiveLease {
	if p := a.sorted.Load(); p != nil {
		return *p
	}
	out := make([]ActiveLease, 0, len(a.byPath))
	for _, e := range a.byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	a.sorted.Store(&out)
	return out
}

// activeLeasesMagic starts the encoding; its last byte is the version.
const activeLeasesMagic = "loopx-active-leases\x00\x02"

// Encode returns the index's persisted form, with a checksum.
func (a *ActiveLeases) Encode() []byte {
	b := []byte(activeLeasesMagic)
	b = binary.AppendUvarint(b, uint64(len(a.byPath)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, e := range a.List() {
		str(e.Path)
		str(e.TodoID)
		b = binary.AppendVarint(b, e.ExpiresAt.Unix())
		b = binary.AppendUvarint(b, uint64(e.ExpiresAt.Nanosecond()))
		b = binary.AppendUvarint(b, uint64(len(e.Scopes)))
		for _, s := range e.Scopes {
			str(s)
		}
		str(e.Owner)
		b = binary.AppendVarint(b, e.OwnerRegistration)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

var errDamagedIndex = errors.New("lease: damaged active-lease index")

// DecodeActiveLeases reads what Encode wrote; damaged bytes (a bad
// checksum, a short or long encoding) are an error, never a partial index.
func DecodeActiveLeases(data []byte) (*ActiveLeases, error) {
	if len(data) < len(activeLeasesMagic)+sha256.Size || !bytes.HasPrefix(data, []byte(activeLeasesMagic)) {
		return nil, errDamagedIndex
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errDamagedIndex
	}
	b := body[len(activeLeasesMagic):]
	bad := false
	uv := func() uint64 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return x
	}
	sv := func() int64 {
		x, n := binary.Varint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return x
	}
	str := func() string {
		n := uv()
		if bad || n > uint64(len(b)) {
			bad = true
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	count := uv()
	if bad || count > uint64(len(b)) {
		return nil, errDamagedIndex
	}
	a := &ActiveLeases{byPath: make(map[string]ActiveLease, count)}
	list := make([]ActiveLease, 0, count)
	for i := uint64(0); i < count && !bad; i++ {
		e := ActiveLease{Path: str(), TodoID: str()}
		sec := sv()
		nsec := uv()
		if nsec >= 1e9 {
			bad = true
		}
		e.ExpiresAt = time.Unix(sec, int64(nsec)).UTC()
		n := uv()
		if n > uint64(len(b)) {
			bad = true
		}
		for j := uint64(0); j < n && !bad; j++ {
			e.Scopes = append(e.Scopes, str())
		}
		e.Owner = str()
		e.OwnerRegistration = sv()
		a.byPath[e.Path] = e
		list = append(list, e)
	}
	if bad || len(b) != 0 || uint64(len(a.byPath)) != count {
		return nil, errDamagedIndex
	}
	// Encode writes List's order; a file in another order (not ours) is
	// sorted when listed.
	if slices.IsSortedFunc(list, func(x, y ActiveLease) int { return strings.Compare(x.Path, y.Path) }) {
		a.sorted.Store(&list)
	}
	return a, nil
}

// ActiveLeaseIndex returns the index of a goal's active leases at the
// view's revision (without the view's own writes), or false when there is
// none (the view then scans the lease records).
type ActiveLeaseIndex func(goal string) (*ActiveLeases, bool)

// UseActiveLeases makes the scans consult ix instead of every lease record.
func (v *View) UseActiveLeases(ix ActiveLeaseIndex) { v.activeIndex = ix }

// activeLeases returns the goal's active lease records (status active), the
// view's writes included, sorted by path: from the index when the view has
// one, else from every lease record (which fails closed on a damaged one,
// as the index's maintainer does by not offering an index then).
func (v *View) activeLeases(goal string) ([]ActiveLease, error) {
	if m, ok := v.activeMemo[goal]; ok && m.gen == v.gen {
		return m.list, nil
	}
	var list []ActiveLease
	if ix, ok := v.activeIndexOf(goal); ok {
		dir := LeasesDir(goal) + "/"
		var overlay *ActiveLeases
		for p, data := range v.writes {
			if len(p) <= len(dir) || p[:len(dir)] != dir {
				continue
			}
			if overlay == nil {
				overlay = ix.Clone()
			}
			var l *Lease
			if data != nil {
				l = &Lease{}
				if err := DecodeAt(p, data, l); err != nil {
					return nil, err
				}
			}
			overlay.Set(p, l)
		}
		if overlay != nil {
			ix = overlay
		}
		list = ix.List()
	} else {
		leases, err := v.Leases(goal)
		if err != nil {
			return nil, err
		}
		a := NewActiveLeases()
		for _, l := range leases {
			a.Set(LeasePath(goal, l.TodoID), l)
		}
		list = a.List()
	}
	if v.activeMemo == nil {
		v.activeMemo = map[string]activeMemo{}
	}
	v.activeMemo[goal] = activeMemo{gen: v.gen, list: list}
	return list, nil
}

func (v *View) activeIndexOf(goal string) (*ActiveLeases, bool) {
	if v.activeIndex == nil {
		return nil, false
	}
	return v.activeIndex(goal)
}

// activeMemo is a view's last answer of activeLeases for a goal, valid
// while the view's writes stay as they were (gen).
type activeMemo struct {
	gen  int
	list []ActiveLease
}
