package lease

// Continuation notes and the todo JSON shape of every todo result.
//
// Decisions written down here (contract section 6 leaves them open):
//   - A note records the todo facts as they stand AFTER the commit that
//     writes it: the effective claimant, and the owner and epoch of the
//     todo's lease while that lease is active and unexpired. A note is
//     stale as soon as those facts differ: the claim moved, was cleared or
//     expired; the lease was transferred, taken over, released, completed or
//     expired. A renewal (same owner, same epoch) keeps notes fresh.
//   - Note text keeps its bytes exactly (no trimming). It must be non-empty
//     valid UTF-8 without NUL, so the YAML record can hold it byte for byte.
//   - A note identical to the todo's last note (same text, author and facts)
//     is not appended again, so retrying an update after an ambiguous
//     outcome does not duplicate it.
//   - In results, claimed_by is the EFFECTIVE claim: an expired claim shows
//     "claim_expired": true and no claim fields at all (claimed_by,
//     claim_scope_agent_id, claimed_at, claim_ttl_minutes,
//     claim_expires_at), as seed 004 says; the record keeps them until the
//     claim is taken over or cleared.

import (
	"strings"
	"time"
	"unicode/utf8"
)

// liveLeaseFacts reports whether l is active and unexpired at now (the
// lease part of note facts; registration is not consulted).
func liveLeaseFacts(l *Lease, now time.Time) bool {
	return l != nil && l.Status == LeaseActive && now.Before(l.ExpiresAt)
}

// CurrentNoteFacts returns the facts a note written now on t would record.
func CurrentNoteFacts(t *Todo, l *Lease, now time.Time) NoteFacts {
	f := NoteFacts{ClaimedBy: EffectiveClaimant(t, now)}
	if liveLeaseFacts(l, now) {
		f.LeaseOwner, f.LeaseEpoch = l.Owner, l.Epoch
	}
	return f
}

// NoteStale reports whether the facts n was written against changed: the
// effective claim owner differs from n's claimed_by, or the current live
// lease execution (owner and epoch; none when released or expired) differs.
func NoteStale(t *Todo, l *Lease, n Note, now time.Time) bool {
	return CurrentNoteFacts(t, l, now) != n.Facts
}

// checkNoteText refuses a note that a YAML record cannot keep byte for byte.
func checkNoteText(text string) error {
	if text == "" {
		return Errorf(CodeInvalidRequest, "note is empty")
	}
	if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
		return Errorf(CodeInvalidRequest, "note must be valid UTF-8 text without NUL bytes")
	}
	return nil
}

// appendNote appends a note by author to t with the facts of t and l at now,
// unless it repeats t's last note. It reports whether a note was appended.
func appendNote(t *Todo, l *Lease, text, author string, now time.Time) bool {
	n := Note{Text: text, Author: author, At: now, Facts: CurrentNoteFacts(t, l, now)}
	if k := len(t.Notes); k > 0 {
		last := t.Notes[k-1]
		if last.Text == n.Text && last.Author == n.Author && last.Facts == n.Facts {
			return false
		}
	}
	t.Notes = append(t.Notes, n)
	return true
}

// NoteView is a note as results show it.
type NoteView struct {
	Note
	Stale bool `json:"stale"`
}

// TodoRelations are the relations `todo show` adds to a todo.
type TodoRelations struct {
	// OpenDependencies are the depends_on ids not yet satisfied (see
	// OpenDependencies).
	OpenDependencies []string `json:"open_dependencies"`
	// Unblocks are the todos whose depends_on include this one, by id.
	Unblocks []string `json:"unblocks"`
	// Lease is the todo's current lease, null when it never had one.
	Lease *LeaseView `json:"lease"`
}

// TodoView is a todo as results show it: the record's fields with the
// effective claim, notes marked stale, and (for show) its relations.
type TodoView struct {
	Todo
	Notes []NoteView `json:"notes"`
	// ClaimExpired: the record holds a claim that has expired. As seed 004
	// says, the view then shows no claim fields at all (claimed_by, the
	// scope agent, claimed_at, claim_ttl_minutes, claim_expires_at); the
	// record keeps them until the claim is taken over or cleared, and the
	// audit trail names the holder then.
	ClaimExpired bool `json:"claim_expired"`
	*TodoRelations
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ViewTodo returns t as results show it at now. withRelations adds
// open_dependencies, unblocks and lease (for `todo show`).
func ViewTodo(v *View, goal string, t *Todo, now time.Time, withRelations bool) (TodoView, error) {
	l, err := v.Lease(goal, t.ID)
	if err != nil {
		return TodoView{}, err
	}
	return viewTodo(v, goal, t, l, now, withRelations)
}

// ViewTodos returns todos as list and ready show them (ViewTodo without
// relations), for todos just read from v and not modified since.
func ViewTodos(v *View, goal string, todos []*Todo, now time.Time) ([]TodoView, error) {
	out := make([]TodoView, len(todos)) // each view made in place (10,000 of them at scale)
	leaseOf := func(t *Todo) (*Lease, error) { return v.leaseOfRecord(goal, t) }
	if lst := v.listing(goal); lst != nil {
		leaseOf = lst.lease
	} else if len(todos) > 16 {
		var err error
		if leaseOf, err = v.leaseScan(goal); err != nil {
			return nil, err
		}
	}
	for i, t := range todos {
		l, err := leaseOf(t)
		if err != nil {
			return nil, err
		}
		out[i].Todo = *t
		fillView(&out[i], l, now)
	}
	return out, nil
}

// fillView makes tv, whose Todo is a copy of the record, the view of it at
// now without relations (l is the todo's lease).
func fillView(tv *TodoView, l *Lease, now time.Time) {
	t := &tv.Todo
	tv.Notes = []NoteView{}
	for _, n := range t.Notes {
		tv.Notes = append(tv.Notes, NoteView{Note: n, Stale: NoteStale(t, l, n, now)})
	}
	t.Notes = nil // shown through tv.Notes
	if t.ClaimedBy != "" && !ClaimEffective(t, now) {
		tv.ClaimExpired = true
		clearClaim(t)
	}
	t.DependsOn = nonNil(t.DependsOn)
	t.RequiredWriteScopes = nonNil(t.RequiredWriteScopes)
	t.ExcludedAgents = nonNil(t.ExcludedAgents)
	t.Evidence = nonNil(t.Evidence)
}

func viewTodo(v *View, goal string, t *Todo, l *Lease, now time.Time, withRelations bool) (TodoView, error) {
	var err error
	tv := TodoView{Todo: *t}
	fillView(&tv, l, now)
	if !withRelations {
		return tv, nil
	}
	rel := &TodoRelations{Unblocks: []string{}}
	if rel.OpenDependencies, err = OpenDependencies(v, goal, t); err != nil {
		return TodoView{}, err
	}
	if rel.Unblocks, err = Dependents(v, goal, t.ID); err != nil {
		return TodoView{}, err
	}
	if l != nil {
		lv, err := ViewLease(v, goal, l, now)
		if err != nil {
			return TodoView{}, err
		}
		rel.Lease = &lv
	}
	tv.TodoRelations = rel
	return tv, nil
}

// OpenDependencies returns the ids in t.depends_on that are not satisfied,
// in depends_on order. A dependency is satisfied when it is done, or
// superseded without a replacement, or superseded by a todo that is itself
// satisfied (following the superseded_by chain; a cycle or a missing todo
// is not satisfied). The result is never nil.
func OpenDependencies(v *View, goal string, t *Todo) ([]string, error) {
	lookup := func(id string) (*Todo, error) { return v.Todo(goal, id) }
	return openDeps(t, lookup)
}

func openDeps(t *Todo, lookup func(string) (*Todo, error)) ([]string, error) {
	out := []string{}
	for _, d := range t.DependsOn {
		ok, err := depSatisfied(d, lookup)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func depSatisfied(id string, lookup func(string) (*Todo, error)) (bool, error) {
	seen := map[string]bool{}
	for !seen[id] {
		seen[id] = true
		d, err := lookup(id)
		if err != nil || d == nil {
			return false, err
		}
		switch d.Status {
		case TodoDone:
			return true, nil
		case TodoSuperseded:
			if d.SupersededBy == "" {
				return true, nil
			}
			id = d.SupersededBy
		default:
			return false, nil
		}
	}
	return false, nil
}
