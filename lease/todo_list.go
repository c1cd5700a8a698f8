package lease

import (
	"slices"
	"sort"
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
	sort.SliceStable(todos, func(i, j int) bool {
		a, b := todos[i], todos[j]
		if ra, rb := PriorityRank(a.Priority), PriorityRank(b.Priority); ra != rb {
			return ra < rb
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}

// ListTodos returns the goal's todos filtered by status ("" = all) and by
// agent ("" = all; else todos whose effective claim the agent holds, as
// claimed_by or scope agent, or whose active lease it owns), sorted.
func ListTodos(v *View, goal, status, agent string, now time.Time) ([]*Todo, error) {
	all, err := v.Todos(goal)
	if err != nil {
		return nil, err
	}
	var out []*Todo
	for _, t := range all {
		if status != "" && t.Status != status {
			continue
		}
		if agent != "" && !HoldsClaim(t, agent, now) {
			l, err := v.Lease(goal, t.ID)
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
