package web

import (
	"net/url"
	"strconv"
)

// The board's sections, in page order. A todo is in exactly one:
//   - held: open, with a claim or a lease in force;
//   - stale: open, nobody holds it in force, but a claim or an active lease
//     that lapsed (expired, owner unregistered, ...) was not taken over or
//     cleared yet: the "is that teammate dead?" list;
//   - blocked: open, not held, and not ready (open dependencies, or a lease
//     in force on another todo covers a scope it needs), each with why;
//   - ready: open, and somebody may take it now;
//   - done, superseded; archived todos last.
//
// Each section shows PageSize todos and a link for PageSize more (a query
// parameter per section, so sections page independently and the page
// works without JavaScript); a 10,000-todo goal renders at most a few
// hundred cards.
var sectionDefs = []struct{ key, title, help string }{
	{"held", "In progress", "open todos with a claim or a task lease in force"},
	{"stale", "Stale holders", "a claim or lease no longer in force that nobody took over yet"},
	{"blocked", "Blocked", "open, not held, and not ready: why is on each card"},
	{"ready", "Ready", "open todos somebody may take now"},
	{"done", "Done", ""},
	{"superseded", "Superseded", ""},
	{"archived", "Archived", ""},
}

// PageSize is how many todos a board section shows before "more".
const PageSize = 100

// maxShown bounds the todos one section may be asked to show.
const maxShown = 100000

// sectionOf places a todo on the board.
func sectionOf(t *Todo) string {
	switch {
	case t.Archived:
		return "archived"
	case t.Status == "done":
		return "done"
	case t.Status == "superseded":
		return "superseded"
	case t.Lease != nil && t.Lease.InForce, t.Claim != nil && t.Claim.InForce:
		return "held"
	case t.Lease != nil || t.Claim != nil:
		return "stale"
	case t.Ready:
		return "ready"
	}
	return "blocked"
}

// section is one section of the board page.
type section struct {
	Key, Title, Help string
	Total            int
	Todos            []*Todo
	// More is the link that shows the next page ("" when all are shown).
	More     string
	MoreN    int
	Shown    int
	Selected bool
}

// sections groups a board's todos and pages each section as q asks
// (n_<key>=COUNT).
func sections(b *Board, q url.Values, pageSize int) []*section {
	out := make([]*section, len(sectionDefs))
	byKey := map[string]*section{}
	for i, d := range sectionDefs {
		s := &section{Key: d.key, Title: d.title, Help: d.help}
		s.Shown = shownOf(q, d.key, pageSize)
		out[i], byKey[d.key] = s, s
	}
	for i := range b.Todos {
		t := &b.Todos[i]
		s := byKey[sectionOf(t)]
		s.Total++
		if len(s.Todos) < s.Shown {
			s.Todos = append(s.Todos, t)
		}
	}
	for _, s := range out {
		if s.Total > len(s.Todos) {
			s.MoreN = min(pageSize, s.Total-len(s.Todos))
			v := url.Values{}
			for k, vs := range q {
				v[k] = vs
			}
			v.Set("n_"+s.Key, strconv.Itoa(len(s.Todos)+pageSize))
			s.More = "?" + v.Encode() + "#todo-" + s.Todos[len(s.Todos)-1].ID
		}
	}
	return out
}

// shownOf reads how many todos section key should show.
func shownOf(q url.Values, key string, pageSize int) int {
	n, err := strconv.Atoi(q.Get("n_" + key))
	if err != nil || n < pageSize {
		return pageSize
	}
	return min(n, maxShown)
}
