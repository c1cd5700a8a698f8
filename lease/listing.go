package lease

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync"
	"unsafe"
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
	// Leases holds, by todo id, the todo's lease with only TodoID, Owner,
	// Epoch, Status and ExpiresAt set.
	Leases map[string]*Lease

	// recs are the todos' encoded records in list order, as a decoded
	// listing holds them until every todo is asked for (All): a page of
	// the list, or a list of every todo written straight into its views
	// (ListTodoViews), decodes only what it shows, where it shows it.
	recs []string
	once sync.Once
	// todos are the decoded todos (shared, read only), and err why they
	// could not be.
	todos []*Todo
	err   error
	// at locates a todo id in todos (made when first needed).
	at map[string]int
}

// NewListing is the listing of todos (in list order) and leases.
func NewListing(todos []*Todo, leases map[string]*Lease) *Listing {
	l := &Listing{Leases: leases, todos: todos}
	l.once.Do(func() {})
	return l
}

// Len is the number of todos.
func (l *Listing) Len() int {
	if l.recs != nil {
		return len(l.recs)
	}
	return len(l.todos)
}

// All returns every todo in list order (shared, read only), decoding them
// at the first call; an error says a record does not decode (a listing
// that passed its checksum but not this: the records are read instead).
func (l *Listing) All() ([]*Todo, error) {
	l.once.Do(func() {
		recs := make([]Todo, len(l.recs)) // one allocation for all of them
		todos := make([]*Todo, len(l.recs))
		for i, rec := range l.recs {
			t := &recs[i]
			if !readRecord(rec, t) || (i > 0 && listCmp(todos[i-1], t) >= 0) {
				l.err = errBadListing
				return
			}
			todos[i] = t
		}
		l.todos = todos
	})
	return l.todos, l.err
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

// listedTodos returns every todo of the goal's listing, nil when there is
// no listing or its records do not decode (the records are read then).
func (v *View) listedTodos(goal string) []*Todo {
	if l := v.listing(goal); l != nil {
		if todos, err := l.All(); err == nil {
			return todos
		}
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
	leases := map[string]*Lease{}
	for _, t := range todos {
		x, err := leaseOf(t)
		if err != nil {
			return nil, err
		}
		if x != nil {
			leases[t.ID] = listingLease(x)
		}
	}
	sorted := slices.Clone(todos)
	SortTodos(sorted)
	return NewListing(sorted, leases), nil
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

// Clone returns a copy of l that Set may change (the todos are shared);
// an error says l's records do not decode.
func (l *Listing) Clone() (*Listing, error) {
	todos, err := l.All()
	if err != nil {
		return nil, err
	}
	leases := make(map[string]*Lease, len(l.Leases))
	for k, x := range l.Leases {
		leases[k] = x
	}
	return NewListing(slices.Clone(todos), leases), nil
}

// Set makes id's entry t with lease x (t nil: no such todo), on a Clone.
func (l *Listing) Set(id string, t *Todo, x *Lease) {
	if l.at == nil {
		l.at = make(map[string]int, len(l.todos))
		for i, t := range l.todos {
			l.at[t.ID] = i
		}
	}
	if i, ok := l.at[id]; ok {
		l.todos = slices.Delete(l.todos, i, i+1)
		l.reindex(i)
		delete(l.at, id)
	}
	delete(l.Leases, id)
	if t == nil {
		return
	}
	i, _ := slices.BinarySearchFunc(l.todos, t, listCmp)
	l.todos = slices.Insert(l.todos, i, t)
	l.reindex(i)
	if x != nil {
		l.Leases[id] = listingLease(x)
	}
}

// reindex updates at for the todos from i on.
func (l *Listing) reindex(i int) {
	for ; i < len(l.todos); i++ {
		l.at[l.todos[i].ID] = i
	}
}

// The listing's encoding: "LXLS" version, the count of todos, each its
// length and its record as the record cache writes a todo
// (appendTodoRecord), so that a page is found without decoding the todos
// before it; then the count of leases, each its todo id, owner, epoch
// (varint), status and expiry (the record cache's time). Decoding refuses
// anything else.
const (
	listingMagic   = "LXLS"
	listingVersion = 2
)

var errBadListing = errors.New("lease: not a valid listing")

// Encode returns the persisted form of l.
func (l *Listing) Encode() []byte {
	out := make([]byte, 0, 160*l.Len()+64*len(l.Leases)+16)
	out = append(append(out, listingMagic...), listingVersion)
	out = binary.AppendUvarint(out, uint64(l.Len()))
	if l.recs != nil { // as decoded: its records as they are
		for _, rec := range l.recs {
			out = appendCacheString(out, rec)
		}
	} else {
		var rec []byte
		for _, t := range l.todos {
			rec = appendTodoRecord(rec[:0], t)
			out = binary.AppendUvarint(out, uint64(len(rec)))
			out = append(out, rec...)
		}
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

// DecodeListing reads what Encode wrote: its leases, and where each todo's
// record is (the todos are decoded when asked for: All, ListTodoViews).
// The listing's strings are b's bytes, not a copy of them (a megabyte at
// 10,000 todos): b must not be changed afterwards.
func DecodeListing(b []byte) (*Listing, error) {
	if len(b) < len(listingMagic)+1 || string(b[:len(listingMagic)]) != listingMagic || b[len(listingMagic)] != listingVersion {
		return nil, errBadListing
	}
	body := b[len(listingMagic)+1:]
	r := &cacheReader{s: unsafe.String(unsafe.SliceData(body), len(body))}
	n := r.uvarint()
	if r.bad || n > uint64(len(r.s))/minTodoRecord {
		return nil, errBadListing
	}
	l := &Listing{recs: make([]string, n), Leases: map[string]*Lease{}}
	for i := range l.recs {
		if l.recs[i] = r.str(); r.bad {
			return nil, errBadListing
		}
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

// record decodes the i-th todo into t; false when it does not decode.
func (l *Listing) record(i int, t *Todo) bool {
	if l.recs == nil {
		*t = *l.todos[i]
		return true
	}
	return readRecord(l.recs[i], t)
}

// readRecord decodes one todo's whole record into t.
func readRecord(rec string, t *Todo) bool {
	r := &cacheReader{s: rec}
	return readTodoRecord(r, t) && r.i == len(rec)
}
