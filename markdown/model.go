package markdown

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// Model is a goal's board kept as an index that is updated one record at a
// time, so that delivering the board after a mutation costs what changed,
// not what the goal holds.
//
// It keeps, per todo, only what places the todo on the board (priority,
// status, archived, claimed and until when, whether its lease is recorded
// active and until when, its dependencies and their statuses), in board
// order, and per lease only whether it is active, when it expires and when
// its latest execution started. Render, at a render time, counts the
// sections and writes the at most MaxSectionTodos todos per section and
// MaxChartTodos leases it shows. The text of a shown todo (or a drawn
// lease) is rendered from its full record once and kept; a full record is
// fetched again only when its todo, its lease or one of its dependencies'
// statuses changed, or when time crossed its claim's or its lease's expiry
// (the text is kept with whether each was live when it was rendered, so
// render times may come in any order).
//
// The todos are kept in pages of consecutive board order, each with the
// count of its todos per section and the render times those counts hold
// for (until a claim expires); the leases in pages by todo id, with the
// leases whose latest execution started most recently kept apart for the
// timeline; the todos that depend on each todo in an index of their own.
// A saved model (Save, LoadModel) is read a page at a time: a render reads
// only the pages whose counts do not hold at its render time and those
// holding todos it shows, and a record's change reads and rewrites only
// its page. So the cost of a board is what it shows and what changed, not
// the number of todos.
//
// A Model renders exactly the bytes Render gives for the same records
// (TestModelMatchesRender); Render is built on it.
type Model struct {
	renderer int // RendererTimed or RendererUntimed
	goal     goalHead
	pages    []*todoPage  // every todo, in board order (orderCmp)
	lpages   []*leasePage // every lease record, by todo id
	// bands counts the todos of each priority: a todo is looked up by id
	// in each band's pages.
	bands map[string]int
	// dependents names, per todo id, the todos whose dependencies name it
	// (sorted, once each).
	dependents map[string][]string
	// chart is a prefix of the leases with holders in timeline order
	// (latest execution first, then todo id), at most chartKeep long;
	// charted counts every lease with holders.
	chart   []chartRef
	charted int
	// src fetches the pages of a saved model (nil: every page is in
	// memory).
	src PageSource
	// shown and drawn name the todos and leases whose text the last Render
	// wrote (nil before any Render): the texts a saved page keeps. now is
	// that Render's time, at which saved counts are taken.
	shown, drawn map[string]bool
	now          time.Time
	// saved names the pages of the root the model was loaded from or
	// last saved as.
	saved []string
	// seen is the priority of the todos this process found or put: where
	// a lookup by id looks first.
	seen map[string]string
}

// Page sizes: a page is split in two past maxPage entries. chartKeep is
// how many leases the timeline prefix keeps: as many more than it shows may
// leave it before every lease page is read to fill it again. (Variables:
// tests make them small.)
var (
	pageSize  = 64
	maxPage   = 2 * pageSize
	chartKeep = 2 * MaxChartTodos
)

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
	// hasLease: the todo has a lease record; leased: it is recorded active,
	// leaseUntil its recorded expires_at.
	hasLease, leased bool
	leaseUntil       time.Time
	deps             []string
	// depStatus is the recorded status of each dependency ("" when there
	// is no such todo).
	depStatus []string
	// text is the todo's rendered lines (nil when not rendered yet).
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

type leaseEntry struct {
	todoID  string
	active  bool
	holders bool
	expires time.Time // the recorded expires_at
	latest  time.Time // start of its latest execution (last drawn bar)
	// chart is the lease's section of the timeline ("" when not rendered).
	chart string
}

// todoPage is a run of consecutive todos in board order.
type todoPage struct {
	first   orderKey // its first todo's place
	n       int
	name    string       // the saved page it was read from or saved as ("": not saved)
	entries []*todoEntry // nil until read
	dirty   bool         // its entries changed since it was saved
	sum     summary
}

// leasePage is a run of lease entries by todo id.
type leasePage struct {
	first   string
	n       int
	name    string
	entries []*leaseEntry
	dirty   bool
}

type orderKey struct{ priority, id string }

// summary is a page's todos per section (sectionOrder), as counted at a
// render time: the counts hold for every render time in [lo, hi) (an
// unset bound: none), the times between the claim expiries of the page
// around it. ok is false once the page changed.
type summary struct {
	counts       [numSections]int
	lo, hi       time.Time
	hasLo, hasHi bool
	ok           bool
}

func (s *summary) holdsAt(now time.Time) bool {
	return s.ok && (!s.hasLo || !now.Before(s.lo)) && (!s.hasHi || now.Before(s.hi))
}

type chartRef struct {
	id     string
	latest time.Time
}

// chartCmp is timeline order: latest execution first, then todo id.
func chartCmp(a, b chartRef) int {
	if c := b.latest.Compare(a.latest); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// PageSource fetches the pages of a saved model by name (LoadModel).
type PageSource interface {
	Page(name string) ([]byte, error)
}

// NewModel returns an empty model (no goal, no records) of the current
// renderer (RendererTimed).
func NewModel() *Model {
	return &Model{renderer: RendererTimed, bands: map[string]int{}, dependents: map[string][]string{}, seen: map[string]string{}}
}

// Records fetches full records for the todos and leases a Render shows.
type Records interface {
	// Todo returns the goal's todo id (nil when absent).
	Todo(id string) (*lease.Todo, error)
	// Lease returns the lease record of todo id (nil when absent).
	Lease(todoID string) (*lease.Lease, error)
}

// liveAt is how e's claim and lease count at now, from what the model
// keeps of its records.
func (m *Model) liveAt(e *todoEntry, now time.Time) live {
	if m.renderer == RendererUntimed {
		return live{claim: e.claimed, lease: e.leased}
	}
	return live{claim: e.claimed && (e.claimUntil == nil || now.Before(*e.claimUntil)),
		lease: e.leased && now.Before(e.leaseUntil)}
}

// timed reports whether e's section depends on the render time: an open,
// not archived todo without an active lease whose claim expires.
func (m *Model) timed(e *todoEntry) bool {
	return m.renderer != RendererUntimed && e.claimed && e.claimUntil != nil && !e.leased && !e.archived &&
		e.status != lease.TodoDone && e.status != lease.TodoSuperseded
}

// SetGoal records the goal the board is of (nil: none).
func (m *Model) SetGoal(g *lease.Goal) {
	if g == nil {
		m.goal = goalHead{}
		return
	}
	m.goal = goalHead{present: true, id: g.ID, title: g.Title, status: g.Status, handoffMode: g.HandoffMode}
}

// PutTodo adds or replaces the todo t.ID. An error (a saved page that
// cannot be read) leaves the model unusable: rebuild it.
func (m *Model) PutTodo(t *lease.Todo) error {
	old, err := m.removeTodo(t.ID, t.Priority)
	if err != nil {
		return err
	}
	e := newTodoEntry(t)
	le, err := m.lease(t.ID)
	if err != nil {
		return err
	}
	if le != nil {
		e.hasLease, e.leased, e.leaseUntil = true, le.active, le.expires
	}
	if err := m.insertTodo(e); err != nil {
		return err
	}
	m.addDependent(e)
	for i, d := range e.deps {
		if e.depStatus[i], err = m.statusOf(d); err != nil {
			return err
		}
	}
	if oldStatus := statusOfEntry(old); oldStatus != e.status {
		return m.statusChanged(e.id, e.status)
	}
	return nil
}

func statusOfEntry(e *todoEntry) string {
	if e == nil {
		return ""
	}
	return e.status
}

func newTodoEntry(t *lease.Todo) *todoEntry {
	e := &todoEntry{id: t.ID, priority: t.Priority, status: t.Status, archived: t.Archived,
		claimed: t.ClaimedBy != "", deps: slices.Clone(t.DependsOn)}
	e.depStatus = make([]string, len(e.deps))
	if t.ClaimExpiresAt != nil {
		until := *t.ClaimExpiresAt
		e.claimUntil = &until
	}
	return e
}

// DeleteTodo removes the todo id (absent is fine).
func (m *Model) DeleteTodo(id string) error {
	old, err := m.removeTodo(id, "")
	if err != nil || old == nil {
		return err
	}
	return m.statusChanged(id, "")
}

// removeTodo removes the todo id (found first in band hint) and its
// dependency edges, and returns it (nil when absent).
func (m *Model) removeTodo(id, hint string) (*todoEntry, error) {
	p, i, err := m.find(id, hint)
	if err != nil || p == nil {
		return nil, err
	}
	e := p.entries[i]
	p.entries = slices.Delete(p.entries, i, i+1)
	p.n--
	m.changed(p)
	if m.bands[e.priority]--; m.bands[e.priority] <= 0 {
		delete(m.bands, e.priority)
	}
	if p.n == 0 {
		m.pages = slices.DeleteFunc(m.pages, func(q *todoPage) bool { return q == p })
	} else if i == 0 {
		p.first = orderKey{p.entries[0].priority, p.entries[0].id}
	}
	m.removeDependent(e)
	return e, nil
}

// insertTodo inserts e (absent from the model) in board order.
func (m *Model) insertTodo(e *todoEntry) error {
	m.bands[e.priority]++
	m.seen[e.id] = e.priority
	key := orderKey{e.priority, e.id}
	if len(m.pages) == 0 {
		m.pages = []*todoPage{{first: key, n: 1, entries: []*todoEntry{e}, dirty: true}}
		return nil
	}
	pi := max(m.pageOf(key), 0)
	p := m.pages[pi]
	if err := m.read(p); err != nil {
		return err
	}
	i, _ := slices.BinarySearchFunc(p.entries, e, orderCmp)
	p.entries = slices.Insert(p.entries, i, e)
	p.n++
	if i == 0 {
		p.first = key
	}
	m.changed(p)
	if p.n > maxPage {
		half := p.n / 2
		q := &todoPage{entries: slices.Clone(p.entries[half:]), dirty: true}
		q.n, q.first = len(q.entries), orderKey{q.entries[0].priority, q.entries[0].id}
		p.entries = slices.Clip(p.entries[:half])
		p.n = half
		m.pages = slices.Insert(m.pages, pi+1, q)
	}
	return nil
}

// changed marks p as changed: saved anew, its counts taken again.
func (m *Model) changed(p *todoPage) {
	p.dirty, p.name, p.sum.ok = true, "", false
}

// keyCmp orders places on the board (see orderCmp).
func keyCmp(a, b orderKey) int {
	if c := priorityCmp(a.priority, b.priority); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// pageOf is the index of the last page whose first todo is at or before
// key (-1: none).
func (m *Model) pageOf(key orderKey) int {
	i, found := slices.BinarySearchFunc(m.pages, key, func(p *todoPage, k orderKey) int { return keyCmp(p.first, k) })
	if found {
		return i
	}
	return i - 1
}

// find returns the page and index of todo id (nil when absent), looking in
// band hint first ("": where this process saw it last), then in each other
// priority's pages.
func (m *Model) find(id, hint string) (*todoPage, int, error) {
	if hint == "" {
		hint = m.seen[id]
	}
	try := func(priority string) (*todoPage, int, error) {
		pi := m.pageOf(orderKey{priority, id})
		if pi < 0 {
			return nil, 0, nil
		}
		p := m.pages[pi]
		if err := m.read(p); err != nil {
			return nil, 0, err
		}
		i, found := slices.BinarySearchFunc(p.entries, orderKey{priority, id}, func(e *todoEntry, k orderKey) int {
			return keyCmp(orderKey{e.priority, e.id}, k)
		})
		if !found {
			return nil, 0, nil
		}
		m.seen[id] = priority
		return p, i, nil
	}
	if m.bands[hint] > 0 {
		if p, i, err := try(hint); p != nil || err != nil {
			return p, i, err
		}
	}
	for _, b := range m.bandList() {
		if b == hint {
			continue
		}
		if p, i, err := try(b); p != nil || err != nil {
			return p, i, err
		}
	}
	return nil, 0, nil
}

// bandList is the priorities the model holds, in board order.
func (m *Model) bandList() []string {
	out := make([]string, 0, len(m.bands))
	for b := range m.bands {
		out = append(out, b)
	}
	slices.SortFunc(out, priorityCmp)
	return out
}

// todo returns the entry of todo id, nil when absent.
func (m *Model) todo(id string) (*todoEntry, error) {
	p, i, err := m.find(id, "")
	if err != nil || p == nil {
		return nil, err
	}
	return p.entries[i], nil
}

// statusOf is the recorded status of todo id ("" when absent).
func (m *Model) statusOf(id string) (string, error) {
	e, err := m.todo(id)
	if err != nil || e == nil {
		return "", err
	}
	return e.status, nil
}

// statusChanged sets the status of todo id ("": absent) in the entries of
// the todos that depend on it.
func (m *Model) statusChanged(id, status string) error {
	for _, d := range m.dependents[id] {
		p, i, err := m.find(d, "")
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		e := p.entries[i]
		for k, dep := range e.deps {
			if dep == id && e.depStatus[k] != status {
				e.depStatus[k] = status
				m.changed(p)
			}
		}
	}
	return nil
}

func (m *Model) addDependent(e *todoEntry) {
	for _, d := range e.deps {
		ds := m.dependents[d]
		if i, found := slices.BinarySearch(ds, e.id); !found {
			m.dependents[d] = slices.Insert(ds, i, e.id)
		}
	}
}

func (m *Model) removeDependent(e *todoEntry) {
	for _, d := range e.deps {
		ds := m.dependents[d]
		if i, found := slices.BinarySearch(ds, e.id); found {
			if ds = slices.Delete(ds, i, i+1); len(ds) == 0 {
				delete(m.dependents, d)
			} else {
				m.dependents[d] = ds
			}
		}
	}
}

// lease returns the lease entry of todo id, nil when absent.
func (m *Model) lease(id string) (*leaseEntry, error) {
	p, i, err := m.findLease(id)
	if err != nil || p == nil {
		return nil, err
	}
	return p.entries[i], nil
}

// findLease returns the page and index of the lease of todo id (nil when
// absent).
func (m *Model) findLease(id string) (*leasePage, int, error) {
	pi := m.leasePageOf(id)
	if pi < 0 {
		return nil, 0, nil
	}
	p := m.lpages[pi]
	if err := m.readLeases(p); err != nil {
		return nil, 0, err
	}
	i, found := slices.BinarySearchFunc(p.entries, id, func(e *leaseEntry, id string) int { return strings.Compare(e.todoID, id) })
	if !found {
		return nil, 0, nil
	}
	return p, i, nil
}

func (m *Model) leasePageOf(id string) int {
	i, found := slices.BinarySearchFunc(m.lpages, id, func(p *leasePage, id string) int { return strings.Compare(p.first, id) })
	if found {
		return i
	}
	return i - 1
}

// PutLease adds or replaces the lease record of todo l.TodoID.
func (m *Model) PutLease(l *lease.Lease) error {
	e := newLeaseEntry(l)
	p, i, err := m.findLease(l.TodoID)
	if err != nil {
		return err
	}
	var old *leaseEntry
	if p != nil {
		old, p.entries[i] = p.entries[i], e
		p.dirty, p.name = true, ""
	} else if err := m.insertLease(e); err != nil {
		return err
	}
	m.chartChanged(old, e)
	return m.leaseOfTodo(l.TodoID, e)
}

// insertLease inserts e (absent from the model) by todo id.
func (m *Model) insertLease(e *leaseEntry) error {
	if len(m.lpages) == 0 {
		m.lpages = []*leasePage{{first: e.todoID, n: 1, entries: []*leaseEntry{e}, dirty: true}}
		return nil
	}
	pi := max(m.leasePageOf(e.todoID), 0)
	p := m.lpages[pi]
	if err := m.readLeases(p); err != nil {
		return err
	}
	i, _ := slices.BinarySearchFunc(p.entries, e.todoID, func(x *leaseEntry, id string) int { return strings.Compare(x.todoID, id) })
	p.entries = slices.Insert(p.entries, i, e)
	p.n++
	p.dirty, p.name = true, ""
	if i == 0 {
		p.first = e.todoID
	}
	if p.n > maxPage {
		half := p.n / 2
		q := &leasePage{entries: slices.Clone(p.entries[half:]), dirty: true}
		q.n, q.first = len(q.entries), q.entries[0].todoID
		p.entries = slices.Clip(p.entries[:half])
		p.n = half
		m.lpages = slices.Insert(m.lpages, pi+1, q)
	}
	return nil
}

// leaseOfTodo keeps in the entry of todo id what the board needs of its
// lease record le (nil: none).
func (m *Model) leaseOfTodo(id string, le *leaseEntry) error {
	p, i, err := m.find(id, "")
	if err != nil || p == nil {
		return err
	}
	t := p.entries[i]
	t.hasLease, t.leased, t.leaseUntil = le != nil, le != nil && le.active, time.Time{}
	if le != nil {
		t.leaseUntil = le.expires
	}
	t.text = nil // its lease line and note staleness may change
	m.changed(p)
	return nil
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
func (m *Model) DeleteLease(todoID string) error {
	p, i, err := m.findLease(todoID)
	if err != nil || p == nil {
		return err
	}
	old := p.entries[i]
	p.entries = slices.Delete(p.entries, i, i+1)
	p.n--
	p.dirty, p.name = true, ""
	if p.n == 0 {
		m.lpages = slices.DeleteFunc(m.lpages, func(q *leasePage) bool { return q == p })
	} else if i == 0 {
		p.first = p.entries[0].todoID
	}
	m.chartChanged(old, nil)
	return m.leaseOfTodo(todoID, nil)
}

// chartChanged keeps the timeline prefix as a lease entry changed from
// old to e (nil: none).
func (m *Model) chartChanged(old, e *leaseEntry) {
	if old != nil && old.holders {
		m.charted--
		m.chart = slices.DeleteFunc(m.chart, func(r chartRef) bool { return r.id == old.todoID })
	}
	if e == nil || !e.holders {
		return
	}
	m.charted++
	r := chartRef{e.todoID, e.latest}
	// The prefix takes it when it held every other lease, or when it
	// sorts before the prefix's last.
	if len(m.chart) == m.charted-1 || (len(m.chart) > 0 && chartCmp(r, m.chart[len(m.chart)-1]) < 0) {
		i, _ := slices.BinarySearchFunc(m.chart, r, chartCmp)
		m.chart = slices.Insert(m.chart, i, r)
		if len(m.chart) > chartKeep {
			m.chart = m.chart[:chartKeep]
		}
	}
}

// fillChart reads every lease page to take the timeline prefix again
// (after more than chartKeep - MaxChartTodos of its leases left it).
func (m *Model) fillChart() error {
	m.chart = m.chart[:0]
	for _, p := range m.lpages {
		if err := m.readLeases(p); err != nil {
			return err
		}
		for _, e := range p.entries {
			if e.holders {
				m.chart = append(m.chart, chartRef{e.todoID, e.latest})
			}
		}
	}
	slices.SortFunc(m.chart, chartCmp)
	m.chart = slices.Clip(m.chart[:min(len(m.chart), chartKeep)])
	return nil
}

// Dependents returns the ids of the todos whose dependencies name id,
// sorted (never nil).
func (m *Model) Dependents(id string) []string {
	return append([]string{}, m.dependents[id]...)
}

// Len is the number of todos.
func (m *Model) Len() int {
	n := 0
	for _, p := range m.pages {
		n += p.n
	}
	return n
}

// orderCmp is board order: priority (P0 first, unknown ones after P4 in
// byte order), then todo id. Ids are unique, so the order is total.
func orderCmp(a, b *todoEntry) int {
	return keyCmp(orderKey{a.priority, a.id}, orderKey{b.priority, b.id})
}

// priorityCmp orders priorities.
func priorityCmp(a, b string) int {
	if a == b {
		return 0
	}
	if c := cmp.Compare(priorityRank(a), priorityRank(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// deps returns the dependencies of e with their recorded status.
func (m *Model) deps(e *todoEntry) []depState {
	var out []depState
	for i, id := range e.deps {
		d := depState{id: id, status: "missing"}
		if s := e.depStatus[i]; s != "" {
			d.status = s
			d.done = s == lease.TodoDone
		}
		out = append(out, d)
	}
	return out
}

// depKey is the statuses of e's dependencies, what its text depends on
// besides its own records.
func depKey(e *todoEntry) string {
	if len(e.deps) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range e.depStatus {
		if s != "" {
			b.WriteString(s)
		} else {
			b.WriteString("-")
		}
		b.WriteByte(0)
	}
	return b.String()
}

// Sections, as indexes of sectionOrder.
const (
	idxReady = iota
	idxInProgress
	idxBlocked
	idxDone
	idxSuperseded
	idxArchived
	numSections
)

// classify returns the section of e at now (see Render for the rules).
func (m *Model) classify(e *todoEntry, now time.Time) int {
	switch {
	case e.status == lease.TodoDone:
		return idxDone
	case e.status == lease.TodoSuperseded:
		return idxSuperseded
	case e.archived:
		return idxArchived
	case e.leased || m.liveAt(e, now).claim:
		return idxInProgress
	}
	for _, s := range e.depStatus {
		if s != lease.TodoDone {
			return idxBlocked
		}
	}
	return idxReady
}

// summarize counts the todos of page p (read) at now.
func (m *Model) summarize(p *todoPage, now time.Time) summary {
	s := summary{ok: true}
	for _, e := range p.entries {
		s.counts[m.classify(e, now)]++
		if !m.timed(e) {
			continue
		}
		until := *e.claimUntil
		if now.Before(until) {
			if !s.hasHi || until.Before(s.hi) {
				s.hi, s.hasHi = until, true
			}
		} else if !s.hasLo || until.After(s.lo) {
			s.lo, s.hasLo = until, true
		}
	}
	return s
}

// countsAt returns the counts of page p at now, counting them again when
// its saved counts do not hold then.
func (m *Model) countsAt(p *todoPage, now time.Time) (*[numSections]int, error) {
	if !p.sum.holdsAt(now) {
		if err := m.read(p); err != nil {
			return nil, err
		}
		p.sum = m.summarize(p, now)
	}
	return &p.sum.counts, nil
}

// Render writes the board at the render time now (see Board.Now); recs
// supplies the full records of the todos and leases whose text is not kept
// or is stale. An error is the records' or a saved page's (a
// *StaleError: rebuild the model).
func (m *Model) Render(recs Records, now time.Time) ([]byte, error) {
	var counts [numSections]int
	for _, p := range m.pages {
		c, err := m.countsAt(p, now)
		if err != nil {
			return nil, err
		}
		for i, n := range c {
			counts[i] += n
		}
	}
	var shownBy [numSections][]*todoEntry
	wanted := func(sec int) bool { return len(shownBy[sec]) < min(counts[sec], MaxSectionTodos) }
	for _, p := range m.pages {
		need := false
		for sec, n := range p.sum.counts {
			need = need || (n > 0 && wanted(sec))
		}
		if !need {
			continue
		}
		if err := m.read(p); err != nil {
			return nil, err
		}
		for _, e := range p.entries {
			if sec := m.classify(e, now); wanted(sec) {
				shownBy[sec] = append(shownBy[sec], e)
			}
		}
	}
	m.shown, m.drawn, m.now = map[string]bool{}, map[string]bool{}, now
	var w writer
	m.header(&w, counts)
	for sec, name := range sectionOrder {
		if err := m.section(&w, name, counts[sec], shownBy[sec], recs, now); err != nil {
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
	key := depKey(e)
	lv := m.liveAt(e, now)
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
	if e.hasLease {
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
// up to date with them), or a saved page that cannot be read: rebuild the
// model from the records.
type StaleError struct{ What string }

func (e *StaleError) Error() string {
	return "board model is stale: " + e.What + " is not in the records"
}

func errStale(what string) error { return &StaleError{What: what} }
