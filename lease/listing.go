package lease

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
)

// Listing is a goal's todos as todo list and todo ready read them at one
// revision: every todo in list order (SortTodos), and of each todo's lease
// what a list shows and filters by (its owner, epoch, status and expiry).
// Every record in it was read and checked as the scan reads and checks it
// (a lease's epoch against its todo's). It is derived data
// (internal/derived keeps one per goal, tagged with its revision): a view
// given one (UseListing) lists from it instead of walking every record's
// path, and a list costs what it shows.
type Listing struct {
	// Todos are shared, read only.
	Todos []*Todo
	// Leases holds, by todo id, the todo's lease with only TodoID, Owner,
	// Epoch, Status and ExpiresAt set.
	Leases map[string]*Lease
	// at locates a todo id in Todos (made when first needed).
	at map[string]int
}

// ListingSource gives a view the listing of a goal at the view's revision;
// ok is false when there is none (the records are scanned).
type ListingSource func(goal string) (l *Listing, ok bool)

// UseListing makes todo list and todo ready read the goal's listing.
func (v *View) UseListing(src ListingSource) { v.listings = src }

// listing returns the goal's listing, nil when the view has none or holds
// writes of its own among the goal's todos or leases (a listing is of the
// revision).
func (v *View) listing(goal string) *Listing {
	if v.listings == nil {
		return nil
	}
	todos, leases := TodosDir(goal)+"/", LeasesDir(goal)+"/"
	for p := range v.writes {
		if strings.HasPrefix(p, todos) || strings.HasPrefix(p, leases) {
			return nil
		}
	}
	if l, ok := v.listings(goal); ok {
		return l
	}
	return nil
}

// lease is what the listing holds of todo id's lease (nil: none).
func (l *Listing) lease(t *Todo) (*Lease, error) { return l.Leases[t.ID], nil }

// listingLease is what a listing keeps of lease x.
func listingLease(x *Lease) *Lease {
	if x == nil {
		return nil
	}
	return &Lease{TodoID: x.TodoID, Owner: x.Owner, Epoch: x.Epoch, Status: x.Status, ExpiresAt: x.ExpiresAt}
}

// BuildListing reads the goal's todos and leases as todo list does.
func BuildListing(v *View, goal string) (*Listing, error) {
	todos, err := v.todosShared(goal)
	if err != nil {
		return nil, err
	}
	leaseOf, err := v.leaseScan(goal)
	if err != nil {
		return nil, err
	}
	l := &Listing{Todos: slices.Clone(todos), Leases: map[string]*Lease{}}
	for _, t := range todos {
		x, err := leaseOf(t)
		if err != nil {
			return nil, err
		}
		if x != nil {
			l.Leases[t.ID] = listingLease(x)
		}
	}
	SortTodos(l.Todos)
	return l, nil
}

// ListingRecords reads todo id of the goal and its lease as BuildListing
// reads them (nil todo: none), for a listing's Set.
func (v *View) ListingRecords(goal, id string) (*Todo, *Lease, error) {
	t, err := v.Todo(goal, id)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		// A lease record without its todo: as the scan, which reads the
		// leases of the todos it lists, the listing does not see it.
		return nil, nil, nil
	}
	x, err := v.leaseOfRecord(goal, t)
	if err != nil {
		return nil, nil, err
	}
	return t, x, nil
}

// listCmp is SortTodos's order for todos of distinct ids.
func listCmp(a, b *Todo) int {
	if c := cmp.Compare(PriorityRank(a.Priority), PriorityRank(b.Priority)); c != 0 {
		return c
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Clone returns a copy of l that Set may change (the todos are shared).
func (l *Listing) Clone() *Listing {
	c := &Listing{Todos: slices.Clone(l.Todos), Leases: make(map[string]*Lease, len(l.Leases))}
	for k, x := range l.Leases {
		c.Leases[k] = x
	}
	return c
}

// Set makes id's entry t with lease x (t nil: no such todo).
func (l *Listing) Set(id string, t *Todo, x *Lease) {
	if l.at == nil {
		l.at = make(map[string]int, len(l.Todos))
		for i, t := range l.Todos {
			l.at[t.ID] = i
		}
	}
	if i, ok := l.at[id]; ok {
		l.Todos = slices.Delete(l.Todos, i, i+1)
		l.reindex(i)
		delete(l.at, id)
	}
	delete(l.Leases, id)
	if t == nil {
		return
	}
	i, _ := slices.BinarySearchFunc(l.Todos, t, listCmp)
	l.Todos = slices.Insert(l.Todos, i, t)
	l.reindex(i)
	if x != nil {
		l.Leases[id] = listingLease(x)
	}
}

// reindex updates at for the todos from i on.
func (l *Listing) reindex(i int) {
	for ; i < len(l.Todos); i++ {
		l.at[l.Todos[i].ID] = i
	}
}

// The listing's encoding: "LXLS" version, the count of todos, each as the
// record cache writes a todo (appendTodoRecord); then the count of leases,
// each its todo id, owner, epoch (varint), status and expiry (the record
// cache's time). Decoding refuses anything else.
const (
	listingMagic   = "LXLS"
	listingVersion = 1
)

var errBadListing = errors.New("lease: not a valid listing")

// Encode returns the persisted form of l.
func (l *Listing) Encode() []byte {
	out := make([]byte, 0, 160*len(l.Todos)+64*len(l.Leases)+16)
	out = append(append(out, listingMagic...), listingVersion)
	out = binary.AppendUvarint(out, uint64(len(l.Todos)))
	for _, t := range l.Todos {
		out = appendTodoRecord(out, t)
	}
	ids := make([]string, 0, len(l.Leases))
	for id := range l.Leases {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out = binary.AppendUvarint(out, uint64(len(ids)))
	for _, id := range ids {
		x := l.Leases[id]
		out = appendCacheString(out, id)
		out = appendCacheString(out, x.Owner)
		out = binary.AppendVarint(out, x.Epoch)
		out = appendCacheString(out, x.Status)
		out = appendCacheTime(out, x.ExpiresAt)
	}
	return out
}

// DecodeListing reads what Encode wrote.
func DecodeListing(b []byte) (*Listing, error) {
	if len(b) < len(listingMagic)+1 || string(b[:len(listingMagic)]) != listingMagic || b[len(listingMagic)] != listingVersion {
		return nil, errBadListing
	}
	r := &cacheReader{s: string(b[len(listingMagic)+1:])}
	n := r.uvarint()
	if r.bad || n > uint64(len(r.s))/minTodoRecord {
		return nil, errBadListing
	}
	l := &Listing{Todos: make([]*Todo, n), Leases: map[string]*Lease{}}
	recs := make([]Todo, n)
	for i := range recs {
		t := &recs[i]
		if !readTodoRecord(r, t) {
			return nil, errBadListing
		}
		if i > 0 && listCmp(l.Todos[i-1], t) >= 0 {
			return nil, errBadListing
		}
		l.Todos[i] = t
	}
	n = r.uvarint()
	if r.bad || n > uint64(len(r.s)) {
		return nil, errBadListing
	}
	prev := ""
	for i := uint64(0); i < n; i++ {
		id := r.str()
		x := &Lease{TodoID: id, Owner: r.str(), Epoch: r.varint(), Status: r.str(), ExpiresAt: r.instant()}
		if r.bad || (i > 0 && id <= prev) {
			return nil, errBadListing
		}
		prev = id
		l.Leases[id] = x
	}
	if r.bad || r.i != len(r.s) {
		return nil, errBadListing
	}
	return l, nil
}
