package markdown

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// at is t0 plus m minutes.
func at(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

func ptr(t time.Time) *time.Time { return &t }

func goal(title string) *lease.Goal {
	return &lease.Goal{
		ID: "ship-board", Title: title, Status: lease.GoalActive,
		HandoffMode: lease.HandoffHardLease, CreatedBy: "orch",
		CreatedAt: at(0), UpdatedAt: at(0),
	}
}

func todo(id, prio, text string) *lease.Todo {
	return &lease.Todo{
		ID: id, Text: text, Status: lease.TodoOpen, Priority: prio,
		CreatedBy: "orch", CreatedAt: at(0), UpdatedBy: "orch", UpdatedAt: at(0),
	}
}

// mixedBoard has a todo in every state.
func mixedBoard() Board {
	ready1 := todo("todo_parser", "P1", "Write the parser")
	ready1.DependsOn = []string{"todo_schema"}
	ready1.RequiredWriteScopes = []string{"src/parser/**"}
	ready1.BoundAgent = "agent-a"

	ready0 := todo("todo_crash", "P0", "Fix the crash on empty input")
	ready0.ExcludedAgents = []string{"agent-c"}

	claimed := todo("todo_docs", "P2", "Draft the user guide")
	claimed.ClaimedBy = "agent-a"
	claimed.ClaimTTLMinutes = 60
	claimed.ClaimedAt = ptr(at(10))
	claimed.ClaimExpiresAt = ptr(at(70))
	claimed.Notes = []lease.Note{{
		Text: "Outline is in docs/guide.md; chapters 1-2 drafted.", Author: "agent-a", At: at(20),
		Facts: lease.NoteFacts{ClaimedBy: "agent-a"},
	}}

	leased := todo("todo_store", "P1", "Implement the git store")
	leased.ClaimedBy = "orch"
	leased.ClaimScopeAgentID = "agent-b"
	leased.ClaimedAt = ptr(at(5))
	leased.RequiredWriteScopes = []string{"gitstore/**"}
	leased.Notes = []lease.Note{
		{Text: "Started on the CAS loop.", Author: "agent-a", At: at(15),
			Facts: lease.NoteFacts{ClaimedBy: "orch", LeaseOwner: "agent-a", LeaseEpoch: 1}},
		{Text: "Took over from agent-a; CAS loop done, fsync next.", Author: "agent-b", At: at(50),
			Facts: lease.NoteFacts{ClaimedBy: "orch", LeaseOwner: "agent-b", LeaseEpoch: 2}},
	}
	leasedL := &lease.Lease{
		TodoID: "todo_store", Owner: "agent-b", IdempotencyKey: "run-b-1", Version: 4, Epoch: 2,
		Status: lease.LeaseActive, WriteScopes: []string{"gitstore/**"},
		AcquiredAt: at(40), RenewedAt: ptr(at(55)), ExpiresAt: at(70),
		Holders: []lease.Holder{
			{Epoch: 1, Owner: "agent-a", IdempotencyKey: "run-a-1", StartedAt: at(6), EndedAt: ptr(at(40)), EndReason: "transferred"},
			{Epoch: 2, Owner: "agent-b", IdempotencyKey: "run-b-1", StartedAt: at(40)},
		},
	}

	leaseOnly := todo("todo_bench", "P3", "Benchmark the conflict scan")
	leaseOnlyL := &lease.Lease{
		TodoID: "todo_bench", Owner: "agent-c", IdempotencyKey: "bench-1", Version: 1, Epoch: 1,
		Status: lease.LeaseActive, WriteScopes: []string{"bench/**"},
		AcquiredAt: at(30), ExpiresAt: at(60),
		Holders: []lease.Holder{{Epoch: 1, Owner: "agent-c", IdempotencyKey: "bench-1", StartedAt: at(30)}},
	}

	blocked := todo("todo_release", "P1", "Cut the first release")
	blocked.DependsOn = []string{"todo_parser", "todo_schema", "todo_gone"}

	done := todo("todo_schema", "P2", "Define the record schema")
	done.Status = lease.TodoDone
	done.Evidence = []string{"go test ./lease/ passes", "https://example.com/pr/12"}
	done.ClosedBy = "agent-a"
	done.ClosedAt = ptr(at(25))
	doneL := &lease.Lease{
		TodoID: "todo_schema", Owner: "agent-a", IdempotencyKey: "schema-1", Version: 2, Epoch: 1,
		Status: lease.LeaseReleased, AcquiredAt: at(1), ExpiresAt: at(31), ReleasedAt: ptr(at(25)),
		Holders: []lease.Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "schema-1", StartedAt: at(1), EndedAt: ptr(at(25)), EndReason: "completed"}},
	}

	old := todo("todo_monolith", "P2", "Do everything in one go")
	old.Status = lease.TodoSuperseded
	old.SupersededBy = "todo_parser"
	old.Reason = "Split into smaller todos."
	old.ClosedBy = "orch"
	old.ClosedAt = ptr(at(3))

	shelved := todo("todo_gui", "P4", "Build a GUI")
	shelved.Archived = true

	return Board{
		Goal:   goal("Ship the board"),
		Todos:  []*lease.Todo{ready1, ready0, claimed, leased, leaseOnly, blocked, done, old, shelved},
		Leases: []*lease.Lease{leasedL, leaseOnlyL, doneL},
		// After the last record was written, before any claim or lease
		// expires.
		Now: at(56),
	}
}

// expiredBoard is rendered after some claims and leases expired: claims
// expired by the render time show as no claim at all, and the todo goes
// where it would unclaimed (Ready, Blocked; In progress only when its lease
// is recorded active). Active leases show their TTLs, including one that is
// recorded active but long expired.
func expiredBoard() Board {
	now := at(120)

	lapsed := todo("todo_lapsed", "P1", "Claimed, then left")
	lapsed.ClaimedBy, lapsed.ClaimTTLMinutes = "agent-a", 30
	lapsed.ClaimedAt, lapsed.ClaimExpiresAt = ptr(at(10)), ptr(at(40))
	lapsed.Notes = []lease.Note{{Text: "Halfway; the tests are next.", Author: "agent-a", At: at(20),
		Facts: lease.NoteFacts{ClaimedBy: "agent-a"}}}

	// Expired exactly at the render time: expired.
	justNow := todo("todo_just_now", "P2", "Claim ends as the board is drawn")
	justNow.ClaimedBy, justNow.ClaimTTLMinutes = "agent-b", 60
	justNow.ClaimedAt, justNow.ClaimExpiresAt = ptr(at(60)), ptr(now)

	waiting := todo("todo_waiting", "P2", "Blocked once the claim lapsed")
	waiting.DependsOn = []string{"todo_lapsed"}
	waiting.ClaimedBy, waiting.ClaimTTLMinutes = "agent-b", 10
	waiting.ClaimedAt, waiting.ClaimExpiresAt = ptr(at(30)), ptr(at(40))

	live := todo("todo_live", "P1", "Claim still running")
	live.ClaimedBy, live.ClaimTTLMinutes = "agent-a", 120
	live.ClaimedAt, live.ClaimExpiresAt = ptr(at(100)), ptr(at(220))

	forever := todo("todo_forever", "P3", "Claim without expiry")
	forever.ClaimedBy, forever.ClaimedAt = "orch", ptr(at(5))

	// The claim expired but the lease is recorded active: In progress,
	// showing the lease only. The lease was renewed (TTL from the renewal).
	leased := todo("todo_leased", "P0", "Lease outlives the claim")
	leased.ClaimedBy, leased.ClaimTTLMinutes = "agent-c", 15
	leased.ClaimedAt, leased.ClaimExpiresAt = ptr(at(50)), ptr(at(65))
	leased.Notes = []lease.Note{
		{Text: "Claimed and leased.", Author: "agent-c", At: at(51),
			Facts: lease.NoteFacts{ClaimedBy: "agent-c", LeaseOwner: "agent-c", LeaseEpoch: 1}},
		{Text: "Claim lapsed, lease kept.", Author: "agent-c", At: at(110),
			Facts: lease.NoteFacts{LeaseOwner: "agent-c", LeaseEpoch: 1}},
	}
	leasedL := &lease.Lease{
		TodoID: "todo_leased", Owner: "agent-c", IdempotencyKey: "run-c", Version: 5, Epoch: 1,
		Status: lease.LeaseActive, AcquiredAt: at(50), RenewedAt: ptr(at(105)), ExpiresAt: at(195),
		Holders: []lease.Holder{{Epoch: 1, Owner: "agent-c", IdempotencyKey: "run-c", StartedAt: at(50)}},
	}

	// Recorded active, expired long before the render time: still In
	// progress (the record says so), its TTL tells the reader, and a note
	// written under the lease is stale.
	stale := todo("todo_stale_lease", "P2", "Lease never released")
	stale.Notes = []lease.Note{{Text: "Working on it.", Author: "agent-d", At: at(3),
		Facts: lease.NoteFacts{LeaseOwner: "agent-d", LeaseEpoch: 2}}}
	staleL := &lease.Lease{
		TodoID: "todo_stale_lease", Owner: "agent-d", IdempotencyKey: "run-d", Version: 2, Epoch: 2,
		Status: lease.LeaseActive, AcquiredAt: at(2), ExpiresAt: at(2).Add(45 * time.Second),
		Holders: []lease.Holder{
			{Epoch: 1, Owner: "agent-a", IdempotencyKey: "run-a", StartedAt: at(0), EndedAt: ptr(at(2)), EndReason: "transferred"},
			{Epoch: 2, Owner: "agent-d", IdempotencyKey: "run-d", StartedAt: at(2)},
		},
	}

	long := todo("todo_long", "P4", "A long execution")
	longL := &lease.Lease{
		TodoID: "todo_long", Owner: "agent-b", IdempotencyKey: "run-b", Version: 1, Epoch: 1,
		Status: lease.LeaseActive, AcquiredAt: at(90), ExpiresAt: at(90).Add(90*time.Minute + 5*time.Second),
		Holders: []lease.Holder{{Epoch: 1, Owner: "agent-b", IdempotencyKey: "run-b", StartedAt: at(90)}},
	}

	return Board{
		Goal:   goal("Expired claims"),
		Todos:  []*lease.Todo{lapsed, justNow, waiting, live, forever, leased, stale, long},
		Leases: []*lease.Lease{leasedL, staleL, longL},
		Now:    now,
	}
}

// timelineBoard has leases across several epochs: a transfer, a release, a
// new execution still active, and an expiry recorded at takeover.
func timelineBoard() Board {
	migrate := todo("todo_migrate", "P1", "Migrate the store layout")
	migrateL := &lease.Lease{
		TodoID: "todo_migrate", Owner: "agent-c", IdempotencyKey: "mig-c", Version: 6, Epoch: 3,
		Status: lease.LeaseActive, WriteScopes: []string{"gitstore/**", "lease/layout.go"},
		AcquiredAt: at(120), RenewedAt: ptr(at(150)), ExpiresAt: at(165),
		Holders: []lease.Holder{
			{Epoch: 1, Owner: "agent-a", IdempotencyKey: "mig-a", StartedAt: at(0), EndedAt: ptr(at(40)), EndReason: "transferred"},
			{Epoch: 2, Owner: "agent-b", IdempotencyKey: "mig-b", StartedAt: at(40), EndedAt: ptr(at(90)), EndReason: "released"},
			{Epoch: 3, Owner: "agent-c", IdempotencyKey: "mig-c", StartedAt: at(120)},
		},
	}
	index := todo("todo_index", "P2", "Rebuild the index")
	indexL := &lease.Lease{
		TodoID: "todo_index", Owner: "agent-a", IdempotencyKey: "idx-2", Version: 3, Epoch: 2,
		Status: lease.LeaseReleased, AcquiredAt: at(75), ExpiresAt: at(105), ReleasedAt: ptr(at(100)),
		Holders: []lease.Holder{
			{Epoch: 1, Owner: "agent-d", IdempotencyKey: "idx-1", StartedAt: at(10), EndedAt: ptr(at(75)), EndReason: "expired"},
			// Recorded without ended_at: the lease's released_at ends it.
			{Epoch: 2, Owner: "agent-a", IdempotencyKey: "idx-2", StartedAt: at(75)},
		},
	}
	return Board{
		Goal:   goal("Lease timeline"),
		Todos:  []*lease.Todo{migrate, index},
		Leases: []*lease.Lease{migrateL, indexL},
		Now:    at(155),
	}
}

// hostile strings, each of which would break or inject structure if copied
// into the document verbatim.
var hostile = []string{
	"</details><script>alert(1)</script>",
	"| a | b |\n|---|---|\n| c | d |",
	"```\nfenced code\n```",
	"`inline` ``double`` trailing backslash \\",
	"[link](javascript:alert(1)) ![img](http://x/y.png) [ref]: http://evil",
	"# heading\n## another heading",
	"> quote\n- item\n1. numbered\n2) paren\n+ plus\n* star",
	"- leading dash",
	"1. leading number",
	"<!-- comment --> &lt;entity&gt; &#60;script&#62; <b onmouseover=x>",
	"**bold** _em_ ~~strike~~ $x^2$ \\* escaped",
	"line one\r\nline two\u2028line three\u2029four\tfive\vsix\u0085seven\x85eight",
	"unicode: 日本語 ✓ émoji 🚀 \u202Eevil\u202C \x00nul \x1b[31mred",
	"invalid utf-8 \xff\xfe end",
	"---",
	"===",
	"   \n\t  ",
	"trailing spaces   \n   ",
	"section evil\n    e9 x :active, 2026-01-01 00:00:00, 9h\n%% comment ; # :",
	strings.Repeat("long ", 200),
	strings.Repeat("x", 2000),
	strings.Repeat("界", 600),
}

// hostileBoard puts s into every free-text field of a board.
func hostileBoard(s string) Board {
	g := goal(s)
	open := todo("todo_open", "P1", s)
	open.Notes = []lease.Note{{Text: s, Author: "agent-a", At: at(1)}}
	open.Reason = s
	open.DependsOn = []string{"todo_closed"}
	claimed := todo("todo_claimed", "P2", s)
	claimed.ClaimedBy = "agent-a"
	claimed.RequiredWriteScopes = []string{"docs/" + s}
	done := todo("todo_closed", "P2", s)
	done.Status = lease.TodoDone
	done.Evidence = []string{s, s}
	done.ClosedBy = "agent-a"
	done.ClosedAt = ptr(at(5))
	sup := todo("todo_replaced", "P3", s)
	sup.Status = lease.TodoSuperseded
	sup.Reason = s
	sup.SupersededBy = "todo_open"
	l := &lease.Lease{
		TodoID: "todo_claimed", Owner: "agent-a", IdempotencyKey: "k1", Version: 1, Epoch: 2,
		Status: lease.LeaseActive, WriteScopes: []string{"docs/" + s}, AcquiredAt: at(2), ExpiresAt: at(30),
		Holders: []lease.Holder{
			// Holder owners are validated ids on real records; the chart
			// sanitizes them anyway.
			{Epoch: 1, Owner: s, IdempotencyKey: "k0", StartedAt: at(1), EndedAt: ptr(at(2)), EndReason: s},
			{Epoch: 2, Owner: "agent-a", IdempotencyKey: "k1", StartedAt: at(2)},
		},
	}
	return Board{Goal: g, Todos: []*lease.Todo{open, claimed, done, sup}, Leases: []*lease.Lease{l}}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	checkShape(t, got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./markdown/ -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got: %q\nwant: %q\n(go test ./markdown/ -update rewrites it)", path, i+1, g, w)
			}
		}
	}
}

// checkShape: one trailing newline, no trailing spaces, no blank-line runs.
func checkShape(t *testing.T, out []byte) {
	t.Helper()
	s := string(out)
	if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
		t.Errorf("board must end with exactly one newline")
	}
	if strings.Contains(s, "\n\n\n") {
		t.Errorf("board has a run of blank lines")
	}
	for i, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " \t") != line {
			t.Errorf("line %d has trailing whitespace: %q", i+1, line)
		}
	}
}

func TestGoldenEmpty(t *testing.T) {
	checkGolden(t, "empty", Render(Board{Goal: goal("")}))
}

func TestGoldenMixed(t *testing.T) {
	checkGolden(t, "mixed", Render(mixedBoard()))
}

func TestGoldenExpired(t *testing.T) {
	checkGolden(t, "expired", Render(expiredBoard()))
}

// TestUntimedRendererIsTheOldBoard: RendererUntimed draws, byte for byte,
// what loopx drew before boards had a render time, so board commits of that
// loopx keep verifying. testdata/untimed holds that loopx's own renderings
// of these fixtures (never rewritten by -update); its boards ignore Now.
func TestUntimedRendererIsTheOldBoard(t *testing.T) {
	for name, mk := range map[string]func() Board{
		"empty": func() Board { return Board{Goal: goal("")} }, "mixed": mixedBoard,
		"timeline": timelineBoard, "expired": expiredBoard, "hostile": hostileGoldenBoard,
	} {
		want, err := os.ReadFile(filepath.Join("testdata", "untimed", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		for _, now := range []time.Time{{}, at(0), mk().Now, at(100000)} {
			b := mk()
			b.Now, b.Renderer = now, RendererUntimed
			if got := Render(b); !bytes.Equal(got, want) {
				t.Errorf("%s at %v: the untimed renderer differs from the old board:\n%s", name, now, got)
			}
			// Its model, saved and loaded, renders the same.
			_, m := RenderModel(b)
			m = roundTrip(t, m, pageMap{})
			recs := memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}}
			for _, td := range b.Todos {
				recs.todos[td.ID] = td
			}
			for _, l := range b.Leases {
				recs.leases[l.TodoID] = l
			}
			if got, err := m.Render(recs, now.Add(time.Hour)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s at %v: the untimed model differs from the old board (%v)", name, now, err)
			}
		}
	}
}

func TestGoldenTimeline(t *testing.T) {
	checkGolden(t, "timeline", Render(timelineBoard()))
}

func TestGoldenHostile(t *testing.T) {
	checkGolden(t, "hostile", Render(hostileGoldenBoard()))
}

// hostileGoldenBoard holds every hostile string at once, for people to read.
func hostileGoldenBoard() Board {
	var b Board
	b.Goal = goal("Hostile </details> | `x` <script> # title")
	for i, s := range hostile {
		id := "todo_h" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		td := todo(id, "P2", s)
		td.Notes = []lease.Note{{Text: s, Author: "agent-a", At: at(i)}}
		b.Todos = append(b.Todos, td)
	}
	// Evidence, reasons and the chart get the same treatment.
	done := todo("todo_zdone", "P1", "Closed with hostile evidence")
	done.Status, done.ClosedBy, done.ClosedAt = lease.TodoDone, "agent-a", ptr(at(30))
	done.Evidence = []string{hostile[0], hostile[1], hostile[4]}
	sup := todo("todo_zsuper", "P1", "Superseded with a hostile reason")
	sup.Status, sup.ClosedBy, sup.ClosedAt, sup.SupersededBy = lease.TodoSuperseded, "orch", ptr(at(31)), "todo_zdone"
	sup.Reason = hostile[2]
	b.Todos = append(b.Todos, done, sup)
	b.Leases = []*lease.Lease{{
		TodoID: "todo_zdone", Owner: "agent-a", IdempotencyKey: "k2", Version: 3, Epoch: 2,
		Status: lease.LeaseReleased, AcquiredAt: at(10), ExpiresAt: at(40), ReleasedAt: ptr(at(30)),
		Holders: []lease.Holder{
			{Epoch: 1, Owner: "x:y;#z\nsection evil %% c", IdempotencyKey: "k1", StartedAt: at(5), EndedAt: ptr(at(10)), EndReason: "transferred"},
			{Epoch: 2, Owner: "agent-a", IdempotencyKey: "k2", StartedAt: at(10), EndedAt: ptr(at(30)), EndReason: "completed"},
		},
	}}
	return b
}

// TestRenewalLeavesBytesIdentical: a renewal for the TTL the execution
// already has, at any time the lease is live, changes no byte of the board
// rendered then (so it needs no projection commit); a renewal for another
// TTL changes the board (lease.Renew says BoardChanged for it).
func TestRenewalLeavesBytesIdentical(t *testing.T) {
	for name, mk := range map[string]func() Board{"mixed": mixedBoard, "timeline": timelineBoard, "expired": expiredBoard} {
		for _, dt := range []time.Duration{0, time.Second, 3 * time.Minute} {
			renewAt := mk().Now.Add(dt)
			// The renewal is made while the lease is live: renew the
			// leases that are live at renewAt.
			live := func(l *lease.Lease) bool { return l.Status == lease.LeaseActive && renewAt.Before(l.ExpiresAt) }
			before := mk()
			before.Now = renewAt
			want := Render(before)
			for _, other := range []bool{false, true} {
				b := mk()
				b.Now = renewAt
				renewed := 0
				for _, l := range b.Leases {
					if !live(l) {
						continue
					}
					ttl := lease.ExecutionTTL(l)
					if other {
						ttl += time.Minute
					}
					l.Version += 7
					l.RenewedAt = ptr(renewAt)
					l.ExpiresAt = renewAt.Add(ttl)
					renewed++
				}
				if renewed == 0 {
					if dt == 0 {
						t.Fatalf("%s: fixture has no live lease to renew", name)
					}
					continue
				}
				if got := Render(b); bytes.Equal(want, got) == other {
					t.Errorf("%s renewed at +%v (another TTL %v): board changed %v:\n%s\n---\n%s", name, dt, other, !other, want, got)
				}
			}
		}
	}
}

func TestBoardChangesOnTransfer(t *testing.T) {
	// The opposite check: a new epoch must show.
	b := mixedBoard()
	before := Render(b)
	for _, l := range b.Leases {
		if l.TodoID == "todo_bench" {
			l.Holders[0].EndedAt, l.Holders[0].EndReason = ptr(at(35)), "transferred"
			l.Holders = append(l.Holders, lease.Holder{Epoch: 2, Owner: "agent-a", IdempotencyKey: "bench-2", StartedAt: at(35)})
			l.Owner, l.Epoch, l.Version = "agent-a", 2, 2
		}
	}
	if bytes.Equal(before, Render(b)) {
		t.Fatal("a transfer did not change the board")
	}
}

func TestInputOrderDoesNotMatter(t *testing.T) {
	for name, mk := range map[string]func() Board{"mixed": mixedBoard, "timeline": timelineBoard} {
		want := Render(mk())
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 50 {
			b := mk()
			rng.Shuffle(len(b.Todos), func(i, j int) { b.Todos[i], b.Todos[j] = b.Todos[j], b.Todos[i] })
			rng.Shuffle(len(b.Leases), func(i, j int) { b.Leases[i], b.Leases[j] = b.Leases[j], b.Leases[i] })
			if got := Render(b); !bytes.Equal(got, want) {
				t.Fatalf("%s shuffle %d changed the board:\n%s", name, i, got)
			}
		}
	}
}

func headings(s string) []string {
	var hs []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#") {
			hs = append(hs, strings.SplitN(line, " (", 2)[0])
		}
	}
	return hs
}

// structural line starts: every line the renderer writes begins with one of
// these, so no user text can start a line of its own.
var lineStarts = []string{
	"# ", "## ", "- `", "  - ", "    - ", "_", "Goal ", "ready ", "Lease holders per todo",
	"```", "gantt", "    title ", "    dateFormat ", "    axisFormat ", "    todayMarker ",
	"    section ", "    e",
}

func TestHostileTextStaysInert(t *testing.T) {
	benign := string(Render(hostileBoard("plain text")))
	benignLines := strings.Count(benign, "\n")
	for _, s := range hostile {
		out := string(Render(hostileBoard(s)))
		checkShape(t, []byte(out))
		if strings.ContainsAny(out, "<>") {
			t.Errorf("%q: raw < or > in the board", s)
		}
		if got := strings.Count(out, "\n"); got != benignLines {
			t.Errorf("%q: %d lines, want %d (text leaked a line break)", s, got, benignLines)
		}
		if got, want := headings(out), headings(benign); strings.Join(got[1:], "|") != strings.Join(want[1:], "|") || len(got) != len(want) {
			t.Errorf("%q: headings %q, want %q", s, got, want)
		}
		if got, want := strings.Count(out, "\n```"), strings.Count(benign, "\n```"); got != want {
			t.Errorf("%q: %d fence lines, want %d", s, got, want)
		}
		for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if line == "" {
				continue
			}
			if strings.HasPrefix(line, "|") {
				t.Errorf("%q: line %d starts with a pipe: %q", s, i+1, line)
			}
			ok := false
			for _, p := range lineStarts {
				ok = ok || strings.HasPrefix(line, p)
			}
			if !ok {
				t.Errorf("%q: line %d starts outside the board's structure: %q", s, i+1, line)
			}
			if strings.HasPrefix(line, "    e") && !mermaidTask.MatchString(line) {
				t.Errorf("%q: line %d is not a clean Mermaid task: %q", s, i+1, line)
			}
		}
		if n := len([]rune(s)); n > MaxTextRunes && !strings.Contains(out, "truncated: ") {
			t.Errorf("%q: long text (%d runes) not truncated", s[:20], n)
		}
	}
}

func TestEscapeLeavesNoActiveCharacter(t *testing.T) {
	for _, s := range hostile {
		out := text(s)
		if strings.ContainsAny(out, "<>\n\r") {
			t.Errorf("text(%q) = %q has a raw <, > or line break", s, out)
		}
		// Strip the renderer's own truncation marker, then every special
		// character must sit behind an unescaped backslash.
		body, _, _ := strings.Cut(out, " … _(truncated: ")
		if body == "_(empty)_" {
			continue
		}
		for i := 0; i < len(body); i++ {
			switch c := body[i]; {
			case c == '\\':
				i++ // the escaped character
			case strings.IndexByte("`*_[]|#~$", c) >= 0:
				t.Errorf("text(%q): unescaped %q at %d in %q", s, c, i, body)
			case c == '&':
				rest := body[i:]
				if !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") && !strings.HasPrefix(rest, "&amp;") {
					t.Errorf("text(%q): bare & at %d in %q", s, i, body)
				}
			}
		}
		if strings.ContainsAny(body, "\u202E\u202C\x00\x1b") {
			t.Errorf("text(%q) keeps a control character: %q", s, body)
		}
	}
}

func TestEscapeLeadingMarkers(t *testing.T) {
	for in, want := range map[string]string{
		"- x":      `\- x`,
		"+ x":      `\+ x`,
		"= x":      `\= x`,
		"1. x":     `1\. x`,
		"12) x":    `12\) x`,
		"# x":      `\# x`,
		"> x":      `&gt; x`,
		"a-b 1. c": `a-b 1. c`,
		"v1.2":     `v1.2`,
		"2026":     `2026`,
		"  \n- x":  `\- x`,
		"a\\b":     `a\\b`,
		"C# & F#":  `C\# &amp; F\#`,
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCodeFallsBackToText(t *testing.T) {
	for in, want := range map[string]string{
		"todo_parser":   "`todo_parser`",
		"src/**":        "`src/**`",
		"docs/{a,b}.md": "`docs/{a,b}.md`",
		"a`b":           "a\\`b",
		"a b":           "a b",
		"<x>":           "&lt;x&gt;",
		"":              "_(none)_",
	} {
		if got := code(in); got != want {
			t.Errorf("code(%q) = %q, want %q", in, got, want)
		}
	}
}

var mermaidTask = regexp.MustCompile(`^    e[0-9]+ [A-Za-z0-9_ .@-]+ :(done|active|crit, done), [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}, ([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}|[0-9]+[hm])$`)

func TestMermaidName(t *testing.T) {
	for in, want := range map[string]string{
		"agent-a":                 "agent-a",
		"a:b;c#d%e":               "a_b_c_d_e",
		"x\nsection y":            "x_section y",
		"  spaced   out  ":        "spaced out",
		"":                        "_",
		"ünï":                     "_n_",
		strings.Repeat("a", 100):  strings.Repeat("a", 60),
		"ok name.with@all_-chars": "ok name.with@all_-chars",
	} {
		if got := mermaidName(in); got != want {
			t.Errorf("mermaidName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChartOmittedWithoutLeases(t *testing.T) {
	b := mixedBoard()
	b.Leases = nil
	out := string(Render(b))
	if strings.Contains(out, "```mermaid") {
		t.Error("chart drawn without any lease")
	}
	if !strings.Contains(out, "## Lease timeline\n\n_none_\n") {
		t.Error("empty timeline does not say _none_")
	}
}

func TestChartCapsHolders(t *testing.T) {
	l := &lease.Lease{TodoID: "todo_busy", Owner: "agent-a", IdempotencyKey: "k", Version: 30, Epoch: 30,
		Status: lease.LeaseReleased, AcquiredAt: at(0), ExpiresAt: at(1), ReleasedAt: ptr(at(300))}
	for e := 1; e <= 30; e++ {
		l.Holders = append(l.Holders, lease.Holder{Epoch: int64(e), Owner: "agent-a", IdempotencyKey: "k", StartedAt: at(e * 5), EndedAt: ptr(at(e*5 + 4)), EndReason: "released"})
	}
	out := string(Render(Board{Goal: goal("busy"), Todos: []*lease.Todo{todo("todo_busy", "P2", "busy")}, Leases: []*lease.Lease{l}}))
	if got := strings.Count(out, "\n    e"); got != MaxChartHolders {
		t.Errorf("%d bars drawn, want %d", got, MaxChartHolders)
	}
	if !strings.Contains(out, "    %% 10 earlier epochs omitted\n") || !strings.Contains(out, "    e11 ") || strings.Contains(out, "    e10 ") {
		t.Errorf("wrong epochs kept:\n%s", out)
	}
}

func TestNilGoalAndNilEntries(t *testing.T) {
	out := Render(Board{Todos: []*lease.Todo{nil, todo("todo_abc", "P2", "x")}, Leases: []*lease.Lease{nil}})
	checkShape(t, out)
	if !strings.HasPrefix(string(out), "# Goal board\n") {
		t.Errorf("nil goal: got %q", out[:40])
	}
}

// The board's note staleness is lease.NoteStale's at the render time, and
// its claim is shown exactly while lease.ClaimEffective holds: at times
// before, at and after every claim and lease expiry of the fixtures.
func TestNoteStalenessMatchesLease(t *testing.T) {
	for name, mk := range map[string]func() Board{"mixed": mixedBoard, "timeline": timelineBoard, "expired": expiredBoard} {
		var times []time.Time
		for _, td := range mk().Todos {
			if td.ClaimExpiresAt != nil {
				times = append(times, td.ClaimExpiresAt.Add(-time.Second), *td.ClaimExpiresAt, td.ClaimExpiresAt.Add(time.Second))
			}
		}
		for _, l := range mk().Leases {
			times = append(times, l.ExpiresAt.Add(-time.Second), l.ExpiresAt, l.ExpiresAt.Add(time.Second))
		}
		times = append(times, time.Time{}, mk().Now)
		for _, now := range times {
			b := mk()
			b.Now = now
			leaseOf := map[string]*lease.Lease{}
			for _, l := range b.Leases {
				leaseOf[l.TodoID] = l
			}
			type want struct {
				todo  *lease.Todo
				stale bool
			}
			wants := map[string]want{}
			for _, td := range b.Todos {
				l := leaseOf[td.ID]
				// Notes with every plausible fact set, stale or not.
				facts := []lease.NoteFacts{{}, {ClaimedBy: td.ClaimedBy}, lease.CurrentNoteFacts(td, l, now)}
				if l != nil {
					facts = append(facts, lease.NoteFacts{ClaimedBy: td.ClaimedBy, LeaseOwner: l.Owner, LeaseEpoch: l.Epoch},
						lease.NoteFacts{LeaseOwner: l.Owner, LeaseEpoch: l.Epoch})
				}
				td.Notes = nil
				for i, f := range facts {
					n := lease.Note{Text: fmt.Sprintf("note %s %d", td.ID, i), Author: "agent-a", At: at(1), Facts: f}
					td.Notes = append(td.Notes, n)
					wants[n.Text] = want{td, lease.NoteStale(td, l, n, now)}
				}
			}
			out := string(Render(b))
			for text, w := range wants {
				line := regexp.MustCompile(`(?m)^  - note by .*: ` + regexp.QuoteMeta(strings.ReplaceAll(text, "_", `\_`)) + `$`).FindString(out)
				if line == "" {
					t.Fatalf("%s at %v: %q not on the board", name, now, text)
				}
				if got := strings.Contains(line, "_(stale)_"); got != w.stale {
					t.Errorf("%s at %v: %q: board stale=%v, lease.NoteStale=%v", name, now, text, got, w.stale)
				}
			}
			for _, td := range b.Todos {
				if td.ClaimedBy == "" || td.Status != lease.TodoOpen {
					continue
				}
				shown := strings.Contains(todoBlock(out, td.ID), "  - claimed by ")
				if want := lease.ClaimEffective(td, now); shown != want {
					t.Errorf("%s at %v: %s claim shown %v, effective %v", name, now, td.ID, shown, want)
				}
			}
		}
	}
}

// todoBlock is the bullet of todo id and its detail lines.
func todoBlock(board, id string) string {
	i := strings.Index(board, "\n- `"+id+"` ")
	if i < 0 {
		return ""
	}
	rest := board[i+1:]
	if j := strings.Index(rest[1:], "\n- "); j >= 0 {
		rest = rest[:j+1]
	}
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// sectionOf names the section todo id is listed in.
func sectionOf(board, id string) string {
	i := strings.Index(board, "\n- `"+id+"` ")
	if i < 0 {
		return ""
	}
	h := strings.LastIndex(board[:i], "\n## ")
	if h < 0 {
		return ""
	}
	title := board[h+4:]
	return title[:strings.Index(title, " (")]
}

// TestExpiredClaimPlacement: at the render time a claim is gone exactly
// from its expiry on, and the todo goes where it would unclaimed.
func TestExpiredClaimPlacement(t *testing.T) {
	exp := at(40)
	base := func(mod func(td *lease.Todo, b *Board)) Board {
		td := todo("todo_x", "P1", "x")
		td.ClaimedBy, td.ClaimTTLMinutes, td.ClaimedAt, td.ClaimExpiresAt = "agent-a", 30, ptr(at(10)), ptr(exp)
		dep := todo("todo_dep", "P2", "dep")
		b := Board{Goal: goal("g"), Todos: []*lease.Todo{td, dep}}
		if mod != nil {
			mod(td, &b)
		}
		return b
	}
	withLease := func(status string) func(td *lease.Todo, b *Board) {
		return func(td *lease.Todo, b *Board) {
			b.Leases = []*lease.Lease{{TodoID: "todo_x", Owner: "agent-a", IdempotencyKey: "k", Version: 1, Epoch: 1,
				Status: status, AcquiredAt: at(10), ExpiresAt: at(20), ReleasedAt: ptr(at(15)),
				Holders: []lease.Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "k", StartedAt: at(10)}}}}
		}
	}
	for _, c := range []struct {
		name    string
		b       Board
		now     time.Time
		section string
		claim   bool
	}{
		{"before the expiry", base(nil), exp.Add(-time.Second), secInProgress, true},
		{"a nanosecond before", base(nil), exp.Add(-1), secInProgress, true},
		{"at the expiry", base(nil), exp, secReady, false},
		{"after the expiry", base(nil), exp.Add(time.Hour), secReady, false},
		{"no render time", base(nil), time.Time{}, secInProgress, true},
		{"no expiry", base(func(td *lease.Todo, _ *Board) { td.ClaimExpiresAt, td.ClaimTTLMinutes = nil, 0 }), exp.Add(time.Hour), secInProgress, true},
		{"expired, blocked", base(func(td *lease.Todo, _ *Board) { td.DependsOn = []string{"todo_dep"} }), exp, secBlocked, false},
		{"expired, lease recorded active", base(withLease(lease.LeaseActive)), exp, secInProgress, false},
		{"expired, lease released", base(withLease(lease.LeaseReleased)), exp, secReady, false},
		{"expired, archived", base(func(td *lease.Todo, _ *Board) { td.Archived = true }), exp, secArchived, false},
	} {
		c.b.Now = c.now
		out := string(Render(c.b))
		if got := sectionOf(out, "todo_x"); got != c.section {
			t.Errorf("%s: in %q, want %q", c.name, got, c.section)
		}
		block := todoBlock(out, "todo_x")
		if got := strings.Contains(block, "claimed by"); got != c.claim {
			t.Errorf("%s: claim shown %v, want %v:\n%s", c.name, got, c.claim, block)
		}
		if !c.claim && strings.Contains(block, "claim expires") {
			t.Errorf("%s: an expired claim shows its expiry:\n%s", c.name, block)
		}
	}
}

func TestTTLWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute:                      "15m",
		90 * time.Minute:                      "1h30m",
		45 * time.Second:                      "45s",
		24 * time.Hour:                        "24h",
		2*time.Hour + 5*time.Second:           "2h5s",
		time.Hour + time.Minute + time.Second: "1h1m1s",
		1500 * time.Millisecond:               "1s",
		time.Millisecond:                      "0s",
		0:                                     "0s",
		-time.Minute:                          "0s",
	} {
		if got := ttlWords(d); got != want {
			t.Errorf("ttlWords(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestLeaseLineShowsTTL: an active lease shows its start and its TTL
// (from the renewal when there was one); a released one neither.
func TestLeaseLineShowsTTL(t *testing.T) {
	for _, c := range []struct {
		name string
		l    lease.Lease
		want string
	}{
		{"acquired", lease.Lease{Owner: "agent-a", Epoch: 1, Status: lease.LeaseActive, AcquiredAt: at(0), ExpiresAt: at(15)},
			"lease: `agent-a`, epoch 1, active since 2026-03-01T09:00:00Z, TTL 15m"},
		{"renewed", lease.Lease{Owner: "agent-a", Epoch: 1, Status: lease.LeaseActive, AcquiredAt: at(0), RenewedAt: ptr(at(50)), ExpiresAt: at(140)},
			"lease: `agent-a`, epoch 1, active since 2026-03-01T09:00:00Z, TTL 1h30m"},
		{"holder start", lease.Lease{Owner: "agent-b", Epoch: 2, Status: lease.LeaseActive, AcquiredAt: at(30), ExpiresAt: at(31),
			Holders: []lease.Holder{{Epoch: 2, Owner: "agent-b", StartedAt: at(29)}}, WriteScopes: []string{"src/**"}},
			"lease: `agent-b`, epoch 2, active since 2026-03-01T09:29:00Z, TTL 1m; scopes `src/**`"},
		{"released", lease.Lease{Owner: "agent-a", Epoch: 1, Status: lease.LeaseReleased, AcquiredAt: at(0), ExpiresAt: at(15), ReleasedAt: ptr(at(5))},
			"lease: `agent-a`, epoch 1, released 2026-03-01T09:05:00Z"},
	} {
		if got := leaseLine(&c.l, true); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestLargeGoalIsBounded: a goal of many todos lists the first
// MaxSectionTodos of each section and counts the rest, and the timeline draws
// the MaxChartTodos todos whose latest execution started last.
func TestLargeGoalIsBounded(t *testing.T) {
	b := Board{Goal: goal("Big")}
	for i := 0; i < MaxSectionTodos+150; i++ {
		b.Todos = append(b.Todos, todo(fmt.Sprintf("todo_r%04d", i), "P2", "ready work"))
	}
	for i := 0; i < MaxChartTodos+10; i++ {
		id := fmt.Sprintf("todo_l%04d", i)
		b.Todos = append(b.Todos, todo(id, "P3", "leased work"))
		b.Leases = append(b.Leases, &lease.Lease{TodoID: id, Owner: "agent-a", IdempotencyKey: "k" + id, Version: 1, Epoch: 1,
			Status: lease.LeaseReleased, AcquiredAt: at(i), ExpiresAt: at(i + 10), ReleasedAt: ptr(at(i + 1)),
			Holders: []lease.Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "k" + id, StartedAt: at(i), EndedAt: ptr(at(i + 1)), EndReason: "released"}}})
	}
	out := string(Render(b))
	checkShape(t, []byte(out))
	if n := strings.Count(out, "\n- `todo_r"); n != MaxSectionTodos {
		t.Fatalf("%d ready todos listed, want %d", n, MaxSectionTodos)
	}
	if !strings.Contains(out, "- _… and more: the first 100 by priority are shown") || !strings.Contains(out, "## Ready (100+)") {
		t.Fatalf("no overflow line or capped count")
	}
	// Adding work past what a full section shows changes no byte, so a big
	// goal's board needs no new commit for it.
	more := b
	more.Todos = append(append([]*lease.Todo{}, b.Todos...), todo("todo_z9999", "P4", "one more"))
	if string(Render(more)) != out {
		t.Fatalf("adding a todo beyond a full section changed the board")
	}
	if n := strings.Count(out, "    section todo_l"); n != MaxChartTodos {
		t.Fatalf("%d todos in the chart, want %d", n, MaxChartTodos)
	}
	if strings.Contains(out, "section todo_l0000\n") || !strings.Contains(out, fmt.Sprintf("section todo_l%04d", MaxChartTodos+9)) {
		t.Fatalf("the chart should keep the most recently started executions")
	}
}

// plain must accept exactly plainPattern's language.
func TestPlainMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(plainPattern)
	var cases []string
	for c := 0; c < 256; c++ {
		cases = append(cases, string(rune(c)), "a"+string([]byte{byte(c)}), string([]byte{byte(c)}))
	}
	cases = append(cases, "", strings.Repeat("a", 255), strings.Repeat("a", 256), strings.Repeat("a", 257),
		"src/**/*.go", "todo_x", "a b", "é", "[x]", "a`b", "a\nb")
	rng := rand.New(rand.NewPCG(7, 9))
	alphabet := "aZ09_.:@/*?{},!+=[]-` <\n\x00é"
	for range 20000 {
		n := rng.IntN(12)
		if rng.IntN(20) == 0 {
			n = 250 + rng.IntN(10)
		}
		b := make([]rune, n)
		for i := range b {
			b[i] = []rune(alphabet)[rng.IntN(len([]rune(alphabet)))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := plain(c), re.MatchString(c); got != want {
			t.Fatalf("plain(%q) = %v, pattern says %v", c, got, want)
		}
	}
}

func FuzzPlain(f *testing.F) {
	re := regexp.MustCompile(plainPattern)
	f.Add("todo_x")
	f.Add("a b")
	f.Fuzz(func(t *testing.T, s string) {
		if plain(s) != re.MatchString(s) {
			t.Fatalf("plain(%q) disagrees with the pattern", s)
		}
	})
}
