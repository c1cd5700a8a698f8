package lease

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// PriorityRank orders priorities: P0 is 0 (highest).
func PriorityRank(p string) int {
	if i := slices.Index(Priorities, p); i >= 0 {
		return i
	}
	return len(Priorities)
}

// SortTodos orders todos highest priority first, then oldest, then by id.
func SortTodos(todos []*Todo) {
	type keyed struct {
		rank int
		t    *Todo
	}
	ks := make([]keyed, len(todos))
	for i, t := range todos {
		ks[i] = keyed{PriorityRank(t.Priority), t}
	}
	slices.SortStableFunc(ks, func(x, y keyed) int {
		if x.rank != y.rank {
			return cmp.Compare(x.rank, y.rank)
		}
		if c := x.t.CreatedAt.Compare(y.t.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(x.t.ID, y.t.ID)
	})
	for i, k := range ks {
		todos[i] = k.t
	}
}

// ListTodos returns the goal's todos filtered by status ("" = all) and by
// agent ("" = all; else todos whose effective claim the agent holds, as
// claimed_by or scope agent, or whose active lease it owns), sorted.
func ListTodos(v *View, goal, status, agent string, now time.Time) ([]*Todo, error) {
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
	SortTodos(out)
	return out, nil
}
