// Package markdown renders a goal's board: the human-readable projection
// (goals/<goal>/TODO.md) of the goal's todo and lease records.
//
// Render is pure and deterministic: no I/O, no map iteration, and no clock
// of its own. A board is rendered at a render time (Board.Now: the decision
// time of the commit that delivers it), and its bytes are a function of the
// records and that time alone, whatever the order of the input slices. At
// the render time a claim whose claim_expires_at is at or before it is
// shown as no claim at all (as `todo show` shows it), and a note is marked
// stale by lease.NoteStale's rule at that time. The board still never shows
// a value that ticks: not the lease version, renewed_at or expires_at, and
// not the render time itself. An active lease shows its start and its TTL
// (expires_at minus the later of acquired_at and renewed_at), which a
// renewal of the same length keeps, so such a renewal changes no byte and
// needs no projection commit. A lease's status is shown as recorded: the
// reader tells a live lease from a long-expired one by its start and TTL.
//
// Renderers are versioned, as decisions are: a board commit is checked
// against the renderer that drew it, so a board an older loopx drew keeps
// verifying (RendererUntimed: before boards had a render time).
//
// Every string taken from a record is treated as hostile: it is flattened to
// one line, stripped of control and bidirectional-override characters,
// capped in length and escaped, so it cannot open a block, a link, an HTML
// tag or a code span, nor break the Mermaid chart.
package markdown

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loopx-dev/loopx/lease"
)

// Board is the snapshot of one goal that Render draws.
type Board struct {
	Goal   *lease.Goal
	Todos  []*lease.Todo  // any order; Render sorts
	Leases []*lease.Lease // lease records of the goal's todos, any order; may be empty
	// Now is the render time: claims (and, for note staleness, leases)
	// whose expiry is at or before it have expired. The zero time is
	// before every expiry: nothing has expired.
	Now time.Time
	// Renderer is the renderer version to draw with (0: RendererTimed).
	Renderer int
}

// Renderer versions.
const (
	// RendererUntimed is the board of loopx before boards had a render
	// time: Now is ignored, a recorded claim always shows (and counts for
	// placement and note facts), a lease counts for note facts while it is
	// recorded active, and no TTL is shown. Kept to verify history.
	RendererUntimed = 1
	// RendererTimed is the board drawn at Board.Now, with lease TTLs: what
	// loopx delivers.
	RendererTimed = 2
)

// renderer normalizes a Board.Renderer.
func renderer(v int) int {
	if v == RendererUntimed {
		return RendererUntimed
	}
	return RendererTimed
}

// Limits of what the board shows.
const (
	// MaxTextRunes caps one piece of user text (todo text, note, evidence,
	// reason, title). Longer text is cut and marked; the record keeps it whole.
	MaxTextRunes = 500
	// MaxChartHolders caps the holders drawn per todo in the lease timeline
	// (the most recent epochs are kept), so a long lease history cannot grow
	// the board without bound.
	MaxChartHolders = 20
	// MaxSectionTodos caps the todos listed per section; the rest are
	// counted, so a goal of 10,000 todos still renders a board people can
	// read (and one that stays cheap to write and to diff).
	MaxSectionTodos = 100
	// MaxChartTodos caps the todos drawn in the lease timeline: those whose
	// latest execution started most recently.
	MaxChartTodos = 50
	// ActiveDisplayDuration is how long the timeline draws a holder that is
	// still active. The real end (expires_at) moves with every renewal, and
	// the board must not change on renewal, so an active holder is drawn for
	// this fixed width from its recorded start and tagged active.
	ActiveDisplayDuration = time.Hour
)

// Section titles, in board order.
const (
	secReady      = "Ready"
	secInProgress = "In progress"
	secBlocked    = "Blocked"
	secDone       = "Done"
	secSuperseded = "Superseded"
	secArchived   = "Archived"
	secTimeline   = "Lease timeline"
)

var sectionOrder = []string{secReady, secInProgress, secBlocked, secDone, secSuperseded, secArchived}

// Render draws the board of b. The output ends with a newline and has no
// trailing spaces.
//
// Sections, in order (each todo appears in exactly one):
//   - Ready: open, not archived, unclaimed, no active lease, every dependency done.
//   - In progress: open, not archived, and claimed (a claim recorded and
//     not expired at b.Now) or with a lease recorded as active.
//   - Blocked: open, not archived, unclaimed, no active lease, and some
//     dependency not done (open, superseded or missing; each is listed).
//   - Done, Superseded: by status (archived ones are marked archived).
//   - Archived: open todos that are archived (they take no new work).
//
// Within a section todos are sorted by priority (P0 first), then todo id.
// Each todo shows its claim unless it expired by b.Now (owner, scope agent,
// claimed and claim-expiry times), its lease (holder, epoch, active since
// its start with its TTL, or released), dependencies with their status,
// scopes, binding, exclusions, evidence and closure, reason, and its notes
// in record order (stale ones marked, as of b.Now). Then comes the lease timeline: a Mermaid gantt chart of every lease
// holder (epoch) per todo, omitted when no todo has a lease holder.
func Render(b Board) []byte {
	out, _ := RenderModel(b)
	return out
}

// RenderModel renders the board of b and returns the model it was drawn
// from, holding the text of what it shows: keep the model up to date with
// the records (PutTodo, PutLease, ...) and its Render gives the same bytes
// as Render of the records.
//
// Should b hold two todos with one id (or two leases of one todo), which a
// store never does, the board shows one of them, chosen by a total order so
// that the input order never matters.
func RenderModel(b Board) ([]byte, *Model) {
	recs := memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}}
	for _, t := range b.Todos {
		if t == nil {
			continue
		}
		if cur, ok := recs.todos[t.ID]; !ok || compareTodos(t, cur) < 0 {
			recs.todos[t.ID] = t
		}
	}
	for _, l := range b.Leases {
		if l == nil {
			continue
		}
		if cur, ok := recs.leases[l.TodoID]; !ok || compareLeases(l, cur) > 0 {
			recs.leases[l.TodoID] = l
		}
	}
	m := NewModel()
	m.renderer = renderer(b.Renderer)
	m.SetGoal(b.Goal)
	var les []*leaseEntry
	for _, l := range b.Leases {
		if l != nil && recs.leases[l.TodoID] == l {
			les = append(les, newLeaseEntry(l))
		}
	}
	slices.SortFunc(les, func(a, b *leaseEntry) int { return strings.Compare(a.todoID, b.todoID) })
	leaseOf := map[string]*leaseEntry{}
	for _, e := range les {
		leaseOf[e.todoID] = e
		if e.holders {
			m.chart = append(m.chart, chartRef{e.todoID, e.latest})
		}
	}
	m.charted = len(m.chart)
	slices.SortFunc(m.chart, chartCmp)
	m.chart = slices.Clip(m.chart[:min(len(m.chart), chartKeep)])
	var order []*todoEntry
	for _, t := range b.Todos {
		if t != nil && recs.todos[t.ID] == t {
			e := newTodoEntry(t)
			if le := leaseOf[t.ID]; le != nil {
				e.hasLease, e.leased, e.leaseUntil = true, le.active, le.expires
			}
			for i, d := range e.deps {
				if dt := recs.todos[d]; dt != nil {
					e.depStatus[i] = dt.Status
				}
			}
			m.bands[e.priority]++
			m.addDependent(e)
			order = append(order, e)
		}
	}
	slices.SortFunc(order, orderCmp)
	for len(order) > 0 {
		n := min(len(order), pageSize)
		m.pages = append(m.pages, &todoPage{first: orderKey{order[0].priority, order[0].id}, n: n, entries: order[:n:n], dirty: true})
		order = order[n:]
	}
	for len(les) > 0 {
		n := min(len(les), pageSize)
		m.lpages = append(m.lpages, &leasePage{first: les[0].todoID, n: n, entries: les[:n:n], dirty: true})
		les = les[n:]
	}
	out, err := m.Render(recs, b.Now)
	if err != nil {
		panic(err) // cannot happen: recs holds every record the model has
	}
	return out, m
}

// memRecords serves Render's records from memory.
type memRecords struct {
	todos  map[string]*lease.Todo
	leases map[string]*lease.Lease
}

func (r memRecords) Todo(id string) (*lease.Todo, error)   { return r.todos[id], nil }
func (r memRecords) Lease(id string) (*lease.Lease, error) { return r.leases[id], nil }

func priorityRank(p string) int {
	if i := slices.Index(lease.Priorities, p); i >= 0 {
		return i
	}
	return len(lease.Priorities)
}

func compareTodos(a, b *lease.Todo) int {
	if c := priorityRank(a.Priority) - priorityRank(b.Priority); c != 0 {
		return c
	}
	for _, c := range []int{
		strings.Compare(a.Priority, b.Priority),
		strings.Compare(a.ID, b.ID),
		strings.Compare(a.Status, b.Status),
		a.UpdatedAt.Compare(b.UpdatedAt),
		strings.Compare(a.Text, b.Text),
	} {
		if c != 0 {
			return c
		}
	}
	return 0
}

func compareLeases(a, b *lease.Lease) int {
	for _, c := range []int{
		cmpInt(a.Version, b.Version),
		cmpInt(a.Epoch, b.Epoch),
		cmpInt(int64(len(a.Holders)), int64(len(b.Holders))),
		strings.Compare(a.Status, b.Status),
		strings.Compare(a.Owner, b.Owner),
		strings.Compare(a.IdempotencyKey, b.IdempotencyKey),
		a.AcquiredAt.Compare(b.AcquiredAt),
	} {
		if c != 0 {
			return c
		}
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// depState is a dependency and its recorded status ("missing" when the goal
// has no such todo).
type depState struct {
	id, status string
	done       bool
}

func (m *Model) header(w *writer, counts [numSections]int) {
	g := m.goal
	title := g.title
	if strings.TrimSpace(title) == "" {
		title = g.id
	}
	if strings.TrimSpace(title) == "" {
		w.line("# Goal board")
	} else {
		w.line("# " + text(title))
	}
	w.blank()
	w.line(fmt.Sprintf("Goal %s · handoff mode %s · status %s · %s",
		code(g.id), code(g.handoffMode), code(g.status), count(m.Len(), MaxSectionTodos, "todo")))
	w.blank()
	parts := make([]string, 0, len(sectionOrder))
	for i, name := range sectionOrder {
		parts = append(parts, strings.ToLower(name)+" "+capped(counts[i], MaxSectionTodos))
	}
	w.line(strings.Join(parts, " · "))
	w.blank()
	regen := "loopx todo project-markdown"
	if lease.ValidGoalID(g.id) {
		regen += " --goal-id " + g.id
	}
	if m.renderer == RendererUntimed {
		w.line("_Generated from the loopx records of this goal; edits here are overwritten. Regenerate with `" + regen + "`._")
		return
	}
	w.line("_Generated from the loopx records of this goal as of its commit's time (claims expired by then are not shown); edits here are overwritten. Regenerate with `" + regen + "`._")
}

// section writes one section: its count, the first MaxSectionTodos of its
// todos (shown, in board order) and a line for the rest.
func (m *Model) section(w *writer, name string, n int, shown []*todoEntry, recs Records, now time.Time) error {
	w.blank()
	w.line(fmt.Sprintf("## %s (%s)", name, capped(n, MaxSectionTodos)))
	w.blank()
	if n == 0 {
		w.line("_none_")
		return nil
	}
	for _, e := range shown {
		t, err := m.todoText(e, recs, now)
		if err != nil {
			return err
		}
		w.raw(t)
	}
	if n > len(shown) {
		list := "loopx todo list"
		if m.goal.present && lease.ValidGoalID(m.goal.id) {
			list += " --goal-id " + m.goal.id
		}
		w.line(fmt.Sprintf("- _… and more: the first %d by priority are shown; all are listed by `%s`_", MaxSectionTodos, list))
	}
	return nil
}

// live is how a todo's claim and lease count at the render time: claim,
// whether its claim is shown and is a note's claimed_by (RendererTimed:
// lease.ClaimEffective at Board.Now); lease, whether its lease's owner and
// epoch are a note's facts (RendererTimed: the lease is active and
// unexpired then, as lease.CurrentNoteFacts has it). Model.liveAt computes
// it from what the model keeps of the records; it is all a todo's text
// depends on the render time through, so the model keys the texts it
// keeps by it. TestNoteStalenessMatchesLease and TestExpiredClaimPlacement
// hold it to the lease package's rules.
type live struct{ claim, lease bool }

// noteFacts are the facts a note must record to be fresh: for
// RendererTimed exactly lease.CurrentNoteFacts(t, l, now)
// (TestNoteStalenessMatchesLease).
func noteFacts(t *lease.Todo, l *lease.Lease, lv live) lease.NoteFacts {
	var f lease.NoteFacts
	if lv.claim {
		f.ClaimedBy = t.ClaimedBy
	}
	if lv.lease {
		f.LeaseOwner, f.LeaseEpoch = l.Owner, l.Epoch
	}
	return f
}

// writeTodo writes one todo as a bullet with indented detail bullets: how
// it closed (closed todos), its claim (while it counts), lease,
// dependencies, scopes, binding, exclusions, then its notes (stale against
// the facts of lv).
func writeTodo(w *writer, r int, t *lease.Todo, l *lease.Lease, ds []depState, lv live) {
	head := fmt.Sprintf("- %s · %s · %s", code(t.ID), priority(t.Priority), text(t.Text))
	if t.Archived {
		head += " _(archived, " + text(t.Status) + ")_"
	}
	w.line(head)
	detail := func(s string) { w.line("  - " + s) }

	switch t.Status {
	case lease.TodoDone:
		detail(closedLine("completed", t))
		if len(t.Evidence) == 0 {
			detail("evidence: _none_")
		} else {
			detail("evidence:")
			for _, e := range t.Evidence {
				w.line("    - " + text(e))
			}
		}
	case lease.TodoSuperseded:
		s := "superseded"
		if t.SupersededBy != "" {
			s += " by " + code(t.SupersededBy)
		}
		detail(s + "; " + closedLine("closed", t))
		detail("reason: " + text(t.Reason))
	}
	if lv.claim {
		s := "claimed by " + code(t.ClaimedBy)
		if t.ClaimScopeAgentID != "" {
			s += " for scope agent " + code(t.ClaimScopeAgentID)
		}
		if t.ClaimedAt != nil {
			s += " at " + stamp(*t.ClaimedAt)
		}
		if t.ClaimExpiresAt != nil {
			s += "; claim expires " + stamp(*t.ClaimExpiresAt)
		}
		detail(s)
	}
	if l != nil {
		detail(leaseLine(l, r != RendererUntimed))
	}
	if len(ds) > 0 {
		label := "depends on"
		if t.Status == lease.TodoOpen && slices.ContainsFunc(ds, func(d depState) bool { return !d.done }) {
			label = "blocked by"
		}
		parts := make([]string, 0, len(ds))
		for _, d := range ds {
			if label == "blocked by" && d.done {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", code(d.id), text(d.status)))
		}
		detail(label + ": " + strings.Join(parts, ", "))
	}
	if len(t.RequiredWriteScopes) > 0 {
		detail("write scopes: " + codeList(t.RequiredWriteScopes))
	}
	if t.BoundAgent != "" {
		detail("bound to " + code(t.BoundAgent))
	}
	if len(t.ExcludedAgents) > 0 {
		detail("excluded: " + codeList(t.ExcludedAgents))
	}
	if t.Status != lease.TodoSuperseded && t.Reason != "" {
		detail("reason: " + text(t.Reason))
	}
	facts := noteFacts(t, l, lv)
	for _, n := range t.Notes {
		s := "note by " + code(n.Author)
		if !n.At.IsZero() {
			s += " at " + stamp(n.At)
		}
		if n.Facts != facts {
			s += " _(stale)_"
		}
		detail(s + ": " + text(n.Text))
	}
}

// priority shows a known priority as is, anything else escaped.
func priority(p string) string {
	if slices.Contains(lease.Priorities, p) {
		return p
	}
	return text(p)
}

// leaseLine shows the lease holder and epoch and, for an active lease, its
// start and (withTTL) its TTL; never the version or expiry (both change on
// every renewal; the TTL does only when a renewal asks for another length).
func leaseLine(l *lease.Lease, withTTL bool) string {
	s := fmt.Sprintf("lease: %s, epoch %d, ", code(l.Owner), l.Epoch)
	switch l.Status {
	case lease.LeaseActive:
		s += "active since " + stamp(holderStart(l))
		if withTTL {
			s += ", TTL " + ttlWords(lease.ExecutionTTL(l))
		}
	case lease.LeaseReleased:
		s += "released"
		if l.ReleasedAt != nil {
			s += " " + stamp(*l.ReleasedAt)
		}
	default:
		s += text(l.Status)
	}
	if len(l.WriteScopes) > 0 {
		s += "; scopes " + codeList(l.WriteScopes)
	}
	return s
}

// ttlWords writes a TTL in hours, minutes and seconds, leaving out the
// zero ones ("15m", "1h30m", "45s"); a fraction of a second is cut, and a
// TTL that is not positive (a record whose expiry precedes its grant) is
// "0s".
func ttlWords(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

// holderStart is when the lease's current execution started: the start of
// its holder of the current epoch, else acquired_at.
func holderStart(l *lease.Lease) time.Time {
	for i := len(l.Holders) - 1; i >= 0; i-- {
		if l.Holders[i].Epoch == l.Epoch {
			return l.Holders[i].StartedAt
		}
	}
	return l.AcquiredAt
}

func closedLine(verb string, t *lease.Todo) string {
	s := verb
	if t.ClosedBy != "" {
		s += " by " + code(t.ClosedBy)
	}
	if t.ClosedAt != nil {
		s += " at " + stamp(*t.ClosedAt)
	}
	return s
}

// bar is one holder drawn in the timeline.
type bar struct {
	name, tags   string
	start, end   time.Time
	activeLength bool // drawn with ActiveDisplayDuration instead of end
}

func (m *Model) timeline(w *writer, recs Records) error {
	if len(m.chart) < min(m.charted, MaxChartTodos) {
		if err := m.fillChart(); err != nil {
			return err
		}
	}
	refs := slices.Clone(m.chart[:min(len(m.chart), MaxChartTodos)])
	omittedTodos := m.charted - len(refs)
	slices.SortFunc(refs, func(a, b chartRef) int { return strings.Compare(a.id, b.id) })
	w.blank()
	w.line("## " + secTimeline)
	w.blank()
	if len(refs) == 0 {
		w.line("_none_")
		return nil
	}
	expiry := "so the chart does not show it (the todo's lease line gives the TTL)"
	if m.renderer == RendererUntimed {
		expiry = "so the board does not show it"
	}
	w.line(fmt.Sprintf("Lease holders per todo, one bar per epoch, in UTC. A holder still recorded as active is drawn %s long from its start; its real expiry moves with every renewal, %s. At most the last %d epochs of a todo are drawn.",
		durationWords(ActiveDisplayDuration), expiry, MaxChartHolders))
	w.blank()
	if omittedTodos > 0 {
		w.line(fmt.Sprintf("Only the %d todos whose latest execution started most recently are drawn; %d more have lease history.", MaxChartTodos, omittedTodos))
		w.blank()
	}
	w.line("```mermaid")
	w.line("gantt")
	w.line("    title Lease holders")
	w.line("    dateFormat YYYY-MM-DD HH:mm:ss")
	w.line("    axisFormat %m-%d %H:%M")
	w.line("    todayMarker off")
	for _, r := range refs {
		e, err := m.lease(r.id)
		if err != nil {
			return err
		}
		if e == nil || !e.holders {
			return errStale("lease of " + r.id)
		}
		c, err := m.chartOf(e, recs)
		if err != nil {
			return err
		}
		w.raw(c)
	}
	w.line("```")
	return nil
}

// chartText is the timeline section of one todo's lease: its last
// MaxChartHolders bars.
func chartText(todoID string, bars []bar) string {
	var w writer
	w.line("    section " + mermaidName(todoID))
	if n := len(bars); n > MaxChartHolders {
		w.line(fmt.Sprintf("    %%%% %d earlier epochs omitted", n-MaxChartHolders))
		bars = bars[n-MaxChartHolders:]
	}
	for _, b := range bars {
		end := mermaidTime(b.end)
		if b.activeLength {
			end = mermaidDuration(ActiveDisplayDuration)
		}
		w.line(fmt.Sprintf("    %s :%s, %s, %s", b.name, b.tags, mermaidTime(b.start), end))
	}
	return string(w.bytes())
}

// holderBars turns a lease's holders into bars, oldest epoch first. A holder
// ends at its recorded ended_at; one without it ends where the next holder
// starts, or, for the last one, at the lease's released_at, or is drawn as
// active when the lease is recorded active.
func holderBars(l *lease.Lease) []bar {
	hs := slices.Clone(l.Holders)
	slices.SortStableFunc(hs, func(a, b lease.Holder) int {
		if c := cmpInt(a.Epoch, b.Epoch); c != 0 {
			return c
		}
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	bars := make([]bar, 0, len(hs))
	for i, h := range hs {
		b := bar{start: h.StartedAt, tags: "done"}
		reason := h.EndReason
		switch {
		case h.EndedAt != nil:
			b.end = *h.EndedAt
		case i+1 < len(hs):
			b.end = hs[i+1].StartedAt
		case l.Status == lease.LeaseReleased && l.ReleasedAt != nil:
			b.end = *l.ReleasedAt
		case l.Status == lease.LeaseActive:
			b.activeLength, b.tags, reason = true, "active", "active"
		default:
			b.end = h.StartedAt
		}
		if reason == "" {
			reason = "ended"
		}
		if reason == "expired" {
			b.tags = "crit, done"
		}
		if !b.activeLength && b.end.Before(b.start) {
			b.end = b.start
		}
		b.name = fmt.Sprintf("e%d %s %s", h.Epoch, mermaidName(h.Owner), mermaidName(reason))
		bars = append(bars, b)
	}
	return bars
}

func mermaidTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func mermaidDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
}

func durationWords(d time.Duration) string {
	if d == time.Hour {
		return "one hour"
	}
	return mermaidDuration(d)
}

// mermaidName keeps only [A-Za-z0-9_ .@-] (anything else becomes '_'),
// collapses spaces and caps the length, so a name can never end a task
// title (':'), start a comment ('%%'), an entity ('#', ';') or a new line.
func mermaidName(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == 60 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '_', r == '.', r == '@', r == '-':
			b.WriteRune(r)
		case r == ' ':
			if b.Len() > 0 && !strings.HasSuffix(b.String(), " ") {
				b.WriteByte(' ')
			}
		default:
			b.WriteByte('_')
		}
		n++
	}
	out := strings.TrimSpace(b.String())
	if out == "" {
		return "_"
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// capped shows a count up to limit exactly and beyond it as "limit+": a
// board of a big goal then keeps its bytes when work is added past what it
// shows, and needs no new commit (the exact numbers are a `todo list` away).
func capped(n, limit int) string {
	if n > limit {
		return fmt.Sprintf("%d+", limit)
	}
	return fmt.Sprint(n)
}

// count is plural with a capped number.
func count(n, limit int, word string) string {
	if n > limit {
		return fmt.Sprintf("%d+ %ss", limit, word)
	}
	return plural(n, word)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// plain reports whether s is in the alphabet shown verbatim in a code span:
// ids, priorities, statuses and ordinary scope globs. A code span cannot
// hold escapes, so anything outside it (a backtick, '<', a space, ...) is
// shown as escaped text instead. It is the pattern plainPattern, written
// out by hand: a compiled bounded repetition costs every process start-up
// about a millisecond.
const plainPattern = `^[A-Za-z0-9_.:@/*?{},!+=\[\]-]{1,256}$`

func plain(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_.:@/*?{},!+=[]-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// code shows an identifier-like value: in a code span when it is plainly
// safe, else as escaped text.
func code(s string) string {
	if plain(s) {
		return "`" + s + "`"
	}
	if s == "" {
		return "_(none)_"
	}
	return text(s)
}

func codeList(vs []string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = code(v)
	}
	return strings.Join(parts, ", ")
}

// text shows user text inline: flattened to one line, cut at MaxTextRunes
// runes and escaped. Empty text shows as "(empty)".
func text(s string) string {
	s = flatten(s)
	if s == "" {
		return "_(empty)_"
	}
	more := utf8.RuneCountInString(s) - MaxTextRunes
	if more > 0 {
		s = strings.TrimRight(string([]rune(s)[:MaxTextRunes]), " ")
	}
	out := escape(s)
	if more > 0 {
		out += fmt.Sprintf(" … _(truncated: %d more characters; the full text is on the record)_", more)
	}
	return out
}

// flatten makes s one clean line: invalid UTF-8 and bidirectional controls
// become U+FFFD (they could reorder what the reader sees), other control
// characters and every kind of whitespace or line/paragraph separator become
// one space, and the ends are trimmed.
func flatten(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case isBidiControl(r):
			r = '\uFFFD'
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return r == '\u061C' || r == '\u200E' || r == '\u200F' ||
		(r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// escape makes one flattened line inert inline Markdown. '<', '>' and '&'
// become entities (no HTML tag, comment, autolink or entity can form);
// the characters that open emphasis, strikethrough, code, links, images,
// math, table cells or headings, and the backslash itself, are
// backslash-escaped ('!' needs no escape: an image needs the '[' that is
// always escaped). A leading list, quote or setext marker is escaped too,
// in case the text ever starts a line.
func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	switch {
	case strings.HasPrefix(s, "-"), strings.HasPrefix(s, "+"), strings.HasPrefix(s, "="):
		b.WriteByte('\\')
	}
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	for i, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~', '$':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '.', ')':
			if digits > 0 && i == digits {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writer collects lines; bytes() drops trailing spaces and ends the
// document with exactly one newline.
type writer struct {
	buf       bytes.Buffer
	lastEmpty bool // the last line written is empty (or nothing is written)
	started   bool
}

func (w *writer) line(s string) {
	w.buf.WriteString(strings.TrimRight(s, " \t"))
	w.buf.WriteByte('\n')
	w.started, w.lastEmpty = true, s == ""
}

// raw writes lines another writer made (each ending with a newline, none
// empty).
func (w *writer) raw(s string) {
	w.buf.WriteString(s)
	w.started, w.lastEmpty = true, false
}

func (w *writer) blank() {
	if w.started && !w.lastEmpty {
		w.line("")
	}
}

func (w *writer) bytes() []byte {
	return append(bytes.TrimRight(w.buf.Bytes(), "\n"), '\n')
}
