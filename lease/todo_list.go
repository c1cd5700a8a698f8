package lease

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// PriorityRank orders priorities: P0 is 0 (highest), an unknown one
// after every known one. Priorities are P0..P4, so a priority's rank is
// its digit: read without a search of Priorities (a listing's decode
// checks the order of 10,000 todos with it).
func PriorityRank(p string) int {
	if len(p) == 2 && p[0] == 'P' && p[1] >= '0' && int(p[1]-'0') < len(Priorities) && Priorities[p[1]-'0'] == p {
		return int(p[1] - '0')
	}
	if i := slices.Index(Priorities, p); i >= 0 {
		return i
	}
	return len(Priorities)
}

// SortTodos orders todos highest priority first, then oldest, then by id;
// todos equal in all three keep their order (a stable sort). The keys are
// computed once per todo, and the original position breaks the last ties,
// so an unstable sort (faster than a stable one on 10,000 todos) gives
// the stable order. Ids mostly share a long prefix (todo_seed_00...): each
// is compared first by the 8 bytes after the prefix all share, as a
// number, and as a string only when those are equal.
func SortTodos(todos []*Todo) {
	type keyed struct {
		rank, nsec int32
		sec        int64
		idKey      uint64
		id         string
		pos        int
	}
	common := 0
	if len(todos) > 0 {
		first := todos[0].ID
		common = len(first)
		for _, t := range todos[1:] {
			n := 0
			for n < common && n < len(t.ID) && t.ID[n] == first[n] {
				n++
			}
			common = n
		}
	}
	ks := make([]keyed, len(todos))
	for i, t := range todos {
		ks[i] = keyed{int32(PriorityRank(t.Priority)), int32(t.CreatedAt.Nanosecond()), t.CreatedAt.Unix(), idKey(t.ID[common:]), t.ID, i}
	}
	idx := make([]int32, len(ks))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(i, j int32) int {
		x, y := &ks[i], &ks[j]
		if x.rank != y.rank {
			return cmp.Compare(x.rank, y.rank)
		}
		if x.sec != y.sec {
			return cmp.Compare(x.sec, y.sec)
		}
		if x.nsec != y.nsec {
			return cmp.Compare(x.nsec, y.nsec)
		}
		if x.idKey != y.idKey {
			return cmp.Compare(x.idKey, y.idKey)
		}
		if c := strings.Compare(x.id, y.id); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	sorted := make([]*Todo, len(todos))
	for n, i := range idx {
		sorted[n] = todos[i]
	}
	copy(todos, sorted)
}

// idKey is the first 8 bytes of s as a big-endian number, zeros after its
// end: a < b when idKey(a) < idKey(b) (equal keys tell nothing).
func idKey(s string) uint64 {
	var k uint64
	for i := 0; i < 8; i++ {
		k <<= 8
		if i < len(s) {
			k |= uint64(s[i])
		}
	}
	return k
}

// ListTodos returns the goal's todos filtered by status ("" = all) and by
// agent ("" = all; else todos whose effective claim the agent holds, as
// claimed_by or scope agent, or whose active lease it owns), sorted.
func ListTodos(v *View, goal, status, agent string, now time.Time) ([]*Todo, error) {
	if lst := v.listing(goal); lst != nil {
		if todos, err := lst.All(); err == nil {
			// In list order already, every record checked.
			return filterTodos(todos, status, agent, now, lst.lease)
		}
	}
	all, err := v.todosShared(goal) // read only: shown, never modified
	if err != nil {
		return nil, err
	}
	leaseOf := func(t *Todo) (*Lease, error) { return v.leaseOfRecord(goal, t) }
	if agent != "" {
		if leaseOf, err = v.leaseScan(goal); err != nil {
			return nil, err
		}
	}
	out, err := filterTodos(all, status, agent, now, leaseOf)
	if err != nil {
		return nil, err
	}
	SortTodos(out)
	return out, nil
}

// ListTodoViews is ViewTodos of the page of ListTodos from the offset-th
// todo on, at most limit of them (0: all), with the count of every todo
// listed. A list of every todo of a goal with a listing, or a page of it,
// decodes only the todos it shows, each straight into its view: no todo
// before the page is decoded, and none is decoded twice (into the
// listing's todos, then copied into a view).
func ListTodoViews(v *View, goal, status, agent string, now time.Time, offset, limit int) ([]TodoView, int, error) {
	if lst := v.listing(goal); lst != nil && status == "" && agent == "" {
		if views, total, ok := listingViews(lst, now, offset, limit); ok {
			return views, total, nil
		}
	}
	todos, err := ListTodos(v, goal, status, agent, now)
	if err != nil {
		return nil, 0, err
	}
	lo, hi := pageOf(len(todos), offset, limit)
	views, err := ViewTodos(v, goal, todos[lo:hi], now)
	return views, len(todos), err
}

// pageOf is the page [lo, hi) of a list of n from offset, at most limit
// (0: all).
func pageOf(n, offset, limit int) (lo, hi int) {
	lo = min(max(offset, 0), n)
	hi = n
	if limit > 0 && hi-lo > limit {
		hi = lo + limit
	}
	return lo, hi
}

// listingViews is the page of every todo of lst as views; ok is false when
// a record does not decode or the page is out of order (the records are
// read instead).
func listingViews(lst *Listing, now time.Time, offset, limit int) (_ []TodoView, total int, ok bool) {
	total = lst.Len()
	lo, hi := pageOf(total, offset, limit)
	views := make([]TodoView, hi-lo)
	for i := range views {
		tv := &views[i]
		// (A view keeps its record's priority, creation and id: the
		// order is checked on the views.)
		if !lst.record(lo+i, &tv.Todo) || (i > 0 && listCmp(&views[i-1].Todo, &tv.Todo) >= 0) {
			return nil, 0, false
		}
		fillView(tv, lst.Leases[tv.ID], now)
	}
	return views, total, true
}

// filterTodos keeps the todos of status ("" = all) that agent holds (""
// = all), in their order.
func filterTodos(all []*Todo, status, agent string, now time.Time, leaseOf func(*Todo) (*Lease, error)) ([]*Todo, error) {
	var out []*Todo
	for _, t := range all {
		if status != "" && t.Status != status {
			continue
		}
		if agent != "" && !HoldsClaim(t, agent, now) {
			l, err := leaseOf(t)
			if err != nil {
				return nil, err
			}
			if l == nil || l.Owner != agent || l.Status != LeaseActive || !now.Before(l.ExpiresAt) {
				continue
			}
		}
		out = append(out, t)
	}
	return out, nil
}
