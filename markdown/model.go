package markdown

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// Model is a goal's board kept as an index that is updated one record at a
// time, so that delivering the board after a mutation costs what changed,
// not what the goal holds.
//
// It keeps, per todo, only what places the todo on the board (priority,
// status, archived, claimed and until when, dependencies) in board order,
// and per lease only whether it is active, when it expires and when its
// latest execution started. Render, at a render time, then classifies the
// todos, counts the sections and writes the at most MaxSectionTodos todos
// per section and MaxChartTodos leases it shows. The text of a shown todo
// (or a drawn lease) is rendered from its full record once and kept; a full
// record is fetched again only when its todo, its lease or one of its
// dependencies' statuses changed, or when time crossed its claim's or its
// lease's expiry (the text is kept with whether each was live when it was
// rendered, so render times may come in any order).
//
// A Model renders exactly the bytes Render gives for the same records
// (TestModelMatchesRender); Render is built on it. Encode and DecodeModel
// persist it between processes.
type Model struct {
	renderer int // RendererTimed or RendererUntimed
	goal     goalHead
	order    []*todoEntry  // every todo, in board order (orderCmp)
	leases   []*leaseEntry // every lease record, by todo id
	// shown and drawn name the todos and leases whose text the last Render
	// wrote: the texts Encode keeps (nil before any Render: keep all).
	shown, drawn map[string]bool
}

// goalHead is what the board shows of the goal record.
type goalHead struct {
	present                        bool
	id, title, status, handoffMode string
}

type todoEntry struct {
	id, priority, status string
	archived, claimed    bool // claimed: claimed_by is recorded
	// claimUntil is the recorded claim_expires_at (nil: none).
	claimUntil *time.Time
	leased     bool // its lease is recorded active
	deps       []string
	// text is the todo's rendered lines (nil when not rendered yet): only
	// the shown todos have one, so it is kept apart from the entry.
	text *todoText
}

// todoText is a todo's rendered lines, valid while depKey equals the
// statuses of its dependencies and its claim and lease count at the render
// time as they did when the lines were written (writeTodo depends on the
// render time through nothing else).
type todoText struct {
	lines, depKey string
	live          live
}

// liveAt is liveAt of e's records (le: its lease entry, nil when none), from
// what the model keeps of them.
func (m *Model) liveAt(e *todoEntry, le *leaseEntry, now time.Time) live {
	if m.renderer == RendererUntimed {
		return live{claim: e.claimed, lease: le != nil && le.active}
	}
	return live{claim: e.claimed && (e.claimUntil == nil || now.Before(*e.claimUntil)),
		lease: le != nil && le.active && now.Before(le.expires)}
}

type leaseEntry struct {
	todoID  string
	active  bool
	holders bool
	expires time.Time // the recorded expires_at
	latest  time.Time // start of its latest execution (last drawn bar)
	// chart is the lease's section of the timeline ("" when not rendered).
	chart string
}

// NewModel returns an empty model (no goal, no records) of the current
// renderer (RendererTimed).
func NewModel() *Model { return &Model{renderer: RendererTimed} }

// Records fetches full records for the todos and leases a Render shows.
type Records interface {
	// Todo returns the goal's todo id (nil when absent).
	Todo(id string) (*lease.Todo, error)
	// Lease returns the lease record of todo id (nil when absent).
	Lease(todoID string) (*lease.Lease, error)
}

// SetGoal records the goal the board is of (nil: none).
func (m *Model) SetGoal(g *lease.Goal) {
	if g == nil {
		m.goal = goalHead{}
		return
	}
	m.goal = goalHead{present: true, id: g.ID, title: g.Title, status: g.Status, handoffMode: g.HandoffMode}
}

// PutTodo adds or replaces the todo t.ID.
func (m *Model) PutTodo(t *lease.Todo) {
	m.DeleteTodo(t.ID)
	e := newTodoEntry(t)
	if l := m.lease(t.ID); l != nil {
		e.leased = l.active
	}
	i, _ := slices.BinarySearchFunc(m.order, e, orderCmp)
	m.order = slices.Insert(m.order, i, e)
}

func newTodoEntry(t *lease.Todo) *todoEntry {
	e := &todoEntry{id: t.ID, priority: t.Priority, status: t.Status, archived: t.Archived,
		claimed: t.ClaimedBy != "", deps: slices.Clone(t.DependsOn)}
	if t.ClaimExpiresAt != nil {
		until := *t.ClaimExpiresAt
		e.claimUntil = &until
	}
	return e
}

// DeleteTodo removes the todo id (absent is fine).
func (m *Model) DeleteTodo(id string) {
	if i, ok := m.find(id); ok {
		m.order = slices.Delete(m.order, i, i+1)
	}
}

// find returns the index of todo id in m.order. The order is by priority,
// then id: each run of one priority (a handful) is searched by id.
func (m *Model) find(id string) (int, bool) {
	for lo := 0; lo < len(m.order); {
		p := m.order[lo].priority
		band := &todoEntry{priority: p}
		hi := lo + sort.Search(len(m.order)-lo, func(k int) bool {
			return bandCmp(m.order[lo+k], band) > 0
		})
		k := lo + sort.Search(hi-lo, func(k int) bool { return m.order[lo+k].id >= id })
		if k < hi && m.order[k].id == id {
			return k, true
		}
		lo = hi
	}
	return 0, false
}

// todo returns the entry of todo id, nil when absent.
func (m *Model) todo(id string) *todoEntry {
	if i, ok := m.find(id); ok {
		return m.order[i]
	}
	return nil
}

// lease returns the lease entry of todo id, nil when absent.
func (m *Model) lease(id string) *leaseEntry {
	if i, ok := m.findLease(id); ok {
		return m.leases[i]
	}
	return nil
}

func (m *Model) findLease(id string) (int, bool) {
	return slices.BinarySearchFunc(m.leases, id, func(e *leaseEntry, id string) int { return strings.Compare(e.todoID, id) })
}

// PutLease adds or replaces the lease record of todo l.TodoID.
func (m *Model) PutLease(l *lease.Lease) {
	e := newLeaseEntry(l)
	if i, ok := m.findLease(l.TodoID); ok {
		m.leases[i] = e
	} else {
		m.leases = slices.Insert(m.leases, i, e)
	}
	if t := m.todo(l.TodoID); t != nil {
		t.leased = e.active
		t.text = nil // its lease line and note staleness may change
	}
}

func newLeaseEntry(l *lease.Lease) *leaseEntry {
	e := &leaseEntry{todoID: l.TodoID, active: l.Status == lease.LeaseActive, holders: len(l.Holders) > 0, expires: l.ExpiresAt}
	if e.holders {
		bars := holderBars(l)
		e.latest = bars[len(bars)-1].start
		e.chart = chartText(l.TodoID, bars)
	}
	return e
}

// DeleteLease removes the lease record of todo id (absent is fine).
func (m *Model) DeleteLease(todoID string) {
	i, ok := m.findLease(todoID)
	if !ok {
		return
	}
	m.leases = slices.Delete(m.leases, i, i+1)
	if t := m.todo(todoID); t != nil {
		t.leased, t.text = false, nil
	}
}

// Dependents returns the ids of the todos whose dependencies name id,
// sorted (never nil).
func (m *Model) Dependents(id string) []string {
	out := []string{}
	for _, e := range m.order {
		if slices.Contains(e.deps, id) {
			out = append(out, e.id)
		}
	}
	slices.Sort(out)
	return out
}

// Len is the number of todos.
func (m *Model) Len() int { return len(m.order) }

// orderCmp is board order: priority (P0 first, unknown ones after P4 in
// byte order), then todo id. Ids are unique, so the order is total.
func orderCmp(a, b *todoEntry) int {
	if c := bandCmp(a, b); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// bandCmp orders by priority alone.
func bandCmp(a, b *todoEntry) int {
	if a.priority == b.priority {
		return 0
	}
	if c := cmp.Compare(priorityRank(a.priority), priorityRank(b.priority)); c != 0 {
		return c
	}
	return strings.Compare(a.priority, b.priority)
}

// deps returns the dependencies of e with their recorded status.
func (m *Model) deps(e *todoEntry) []depState {
	var out []depState
	for _, id := range e.deps {
		d := depState{id: id, status: "missing"}
		if dt := m.todo(id); dt != nil {
			d.status = dt.status
			d.done = dt.status == lease.TodoDone
		}
		out = append(out, d)
	}
	return out
}

// depKey is the statuses of e's dependencies, what its text depends on
// besides its own records.
func (m *Model) depKey(e *todoEntry) string {
	if len(e.deps) == 0 {
		return ""
	}
	var b strings.Builder
	for _, id := range e.deps {
		if dt := m.todo(id); dt != nil {
			b.WriteString(dt.status)
		} else {
			b.WriteString("-")
		}
		b.WriteByte(0)
	}
	return b.String()
}

// classify names the section of e at now (see Render for the rules).
func (m *Model) classify(e *todoEntry, now time.Time) string {
	switch {
	case e.status == lease.TodoDone:
		return secDone
	case e.status == lease.TodoSuperseded:
		return secSuperseded
	case e.archived:
		return secArchived
	case e.leased || m.liveAt(e, nil, now).claim:
		return secInProgress
	}
	for _, id := range e.deps {
		if dt := m.todo(id); dt == nil || dt.status != lease.TodoDone {
			return secBlocked
		}
	}
	return secReady
}

// Render writes the board at the render time now (see Board.Now); recs
// supplies the full records of the todos and leases whose text is not kept
// or is stale.
func (m *Model) Render(recs Records, now time.Time) ([]byte, error) {
	counts := map[string]int{}
	shownBy := map[string][]*todoEntry{}
	for _, e := range m.order {
		name := m.classify(e, now)
		counts[name]++
		if len(shownBy[name]) < MaxSectionTodos {
			shownBy[name] = append(shownBy[name], e)
		}
	}
	m.shown, m.drawn = map[string]bool{}, map[string]bool{}
	var w writer
	m.header(&w, counts)
	for _, name := range sectionOrder {
		if err := m.section(&w, name, counts[name], shownBy[name], recs, now); err != nil {
			return nil, err
		}
	}
	if err := m.timeline(&w, recs); err != nil {
		return nil, err
	}
	return w.bytes(), nil
}

// todoText returns e's rendered lines at now, rendering them from its
// records when they are not kept or are stale.
func (m *Model) todoText(e *todoEntry, recs Records, now time.Time) (string, error) {
	m.shown[e.id] = true
	key := m.depKey(e)
	le := m.lease(e.id)
	lv := m.liveAt(e, le, now)
	if x := e.text; x != nil && x.depKey == key && x.live == lv {
		return x.lines, nil
	}
	t, err := recs.Todo(e.id)
	if err != nil {
		return "", err
	}
	if t == nil {
		return "", errStale("todo " + e.id)
	}
	var l *lease.Lease
	if le != nil {
		if l, err = recs.Lease(e.id); err != nil {
			return "", err
		}
		if l == nil {
			return "", errStale("lease of " + e.id)
		}
	}
	var w writer
	writeTodo(&w, m.renderer, t, l, m.deps(e), lv)
	e.text = &todoText{lines: string(w.bytes()), depKey: key, live: lv}
	return e.text.lines, nil
}

// chartOf returns the timeline section of lease e.
func (m *Model) chartOf(e *leaseEntry, recs Records) (string, error) {
	m.drawn[e.todoID] = true
	if e.chart != "" {
		return e.chart, nil
	}
	l, err := recs.Lease(e.todoID)
	if err != nil {
		return "", err
	}
	if l == nil || len(l.Holders) == 0 {
		return "", errStale("lease of " + e.todoID)
	}
	e.chart = chartText(l.TodoID, holderBars(l))
	return e.chart, nil
}

// StaleError reports records that disagree with the model (it was not kept
// up to date with them): rebuild the model from the records.
type StaleError struct{ What string }

func (e *StaleError) Error() string {
	return "board model is stale: " + e.What + " is not in the records"
}

func errStale(what string) error { return &StaleError{What: what} }
