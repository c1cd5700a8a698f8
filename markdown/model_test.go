package markdown

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// world is the records of one goal, as a store holds them (one todo per id,
// one lease per todo).
type world struct {
	goal   *lease.Goal
	todos  map[string]*lease.Todo
	leases map[string]*lease.Lease
	now    time.Time // the render time
}

func (w *world) board() Board {
	b := Board{Goal: w.goal, Now: w.now}
	for _, t := range w.todos {
		b.Todos = append(b.Todos, t)
	}
	for _, l := range w.leases {
		b.Leases = append(b.Leases, l)
	}
	return b
}

func (w *world) records() Records { return memRecords{todos: w.todos, leases: w.leases} }

var (
	modelStatuses = []string{lease.TodoOpen, lease.TodoOpen, lease.TodoOpen, lease.TodoDone, lease.TodoSuperseded}
	modelOwners   = []string{"agent-a", "agent-b", "orch"}
)

func randomTodo(rng *rand.Rand, id string, ids []string, w *world) *lease.Todo {
	t := todo(id, lease.Priorities[rng.IntN(len(lease.Priorities))], fmt.Sprintf("work %d", rng.IntN(5)))
	t.Status = modelStatuses[rng.IntN(len(modelStatuses))]
	t.Archived = rng.IntN(10) == 0
	if rng.IntN(3) == 0 {
		t.ClaimedBy = modelOwners[rng.IntN(len(modelOwners))]
		t.ClaimedAt = ptr(at(rng.IntN(60)))
		if rng.IntN(4) > 0 {
			// Expiring around the render time, so that time moving on
			// crosses it (some exactly at a whole minute it may land on).
			t.ClaimTTLMinutes = 30
			t.ClaimExpiresAt = ptr(w.now.Add(time.Duration(rng.IntN(120)-30) * time.Minute))
		}
	}
	for range rng.IntN(4) {
		if rng.IntN(8) == 0 {
			t.DependsOn = append(t.DependsOn, "todo_missing")
		} else {
			t.DependsOn = append(t.DependsOn, ids[rng.IntN(len(ids))])
		}
	}
	if t.Status != lease.TodoOpen {
		t.ClosedBy, t.ClosedAt = "orch", ptr(at(rng.IntN(90)))
	}
	if rng.IntN(2) == 0 {
		// A note whose facts may or may not match the todo's claim and
		// lease (stale once either expires).
		f := lease.NoteFacts{ClaimedBy: t.ClaimedBy}
		if l := w.leases[id]; l != nil && rng.IntN(2) == 0 {
			f.LeaseOwner, f.LeaseEpoch = l.Owner, l.Epoch
		}
		t.Notes = []lease.Note{{Text: "note", Author: "agent-a", At: at(rng.IntN(90)), Facts: f}}
	}
	return t
}

func randomLease(rng *rand.Rand, id string, now time.Time) *lease.Lease {
	l := &lease.Lease{TodoID: id, Owner: modelOwners[rng.IntN(len(modelOwners))], IdempotencyKey: "k",
		Version: int64(1 + rng.IntN(4)), Epoch: 1, Status: lease.LeaseActive, AcquiredAt: at(rng.IntN(200)),
		ExpiresAt: now.Add(time.Duration(rng.IntN(90)-20) * time.Minute)}
	if rng.IntN(2) == 0 {
		l.RenewedAt = ptr(now.Add(-time.Duration(rng.IntN(20)) * time.Minute))
	}
	if rng.IntN(2) == 0 {
		l.Status, l.ReleasedAt = lease.LeaseReleased, ptr(at(250))
	}
	start := rng.IntN(200)
	for e := range rng.IntN(4) {
		h := lease.Holder{Epoch: int64(e + 1), Owner: modelOwners[rng.IntN(len(modelOwners))], IdempotencyKey: "k", StartedAt: at(start + 10*e)}
		if rng.IntN(2) == 0 {
			h.EndedAt, h.EndReason = ptr(at(start+10*e+5)), "transferred"
		}
		l.Holders = append(l.Holders, h)
		l.Epoch = h.Epoch
	}
	return l
}

// TestModelMatchesRender: a model kept up to date record by record, saved
// and loaded between steps, always renders the bytes a full Render of the
// records gives at the same render time, while the time moves on across
// claim and lease expiries (and now and then back). The pools are big
// enough to overflow a section (100) and the timeline (50), and small
// enough for dependencies to hit.
func TestModelMatchesRender(t *testing.T) {
	timeOnly := 0 // renders where time alone changed the board
	defer func(p, c int) { pageSize, maxPage, chartKeep = p, 2*p, c }(pageSize, chartKeep)
	for seed := range uint64(12) {
		// Half the seeds with tiny pages and a short timeline prefix, so
		// that pages split, empty and are read back, and the prefix runs
		// out and is filled again from every lease page.
		if seed%2 == 1 {
			pageSize, maxPage, chartKeep = 3, 6, MaxChartTodos+1
		} else {
			pageSize, maxPage, chartKeep = 64, 128, 2*MaxChartTodos
		}
		rng := rand.New(rand.NewPCG(seed, 99))
		nIDs := 20 + int(seed)*15 // up to 185 todos
		ids := make([]string, nIDs)
		for i := range ids {
			ids[i] = fmt.Sprintf("todo_m%03d", i)
		}
		w := &world{goal: goal("Model"), todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}, now: at(60)}
		m := NewModel()
		m.SetGoal(w.goal)
		store := pageMap{}
		steps := 600
		var last []byte // the last render, and the records it was of
		changed := false
		for step := range steps {
			// Time moves on a few minutes per step, by whole minutes (so it
			// lands on expiries) or seconds, and rarely back.
			switch k := rng.IntN(10); {
			case k < 5:
				w.now = w.now.Add(time.Duration(rng.IntN(6)) * time.Minute)
			case k < 9:
				w.now = w.now.Add(time.Duration(rng.IntN(300)) * time.Second)
			default:
				w.now = w.now.Add(-time.Duration(rng.IntN(40)) * time.Minute)
			}
			id := ids[rng.IntN(len(ids))]
			var op string
			switch k := rng.IntN(23); {
			case k < 9:
				op = "put todo"
				td := randomTodo(rng, id, ids, w)
				w.todos[id] = td
				must(t, m.PutTodo(td))
			case k < 11:
				op = "delete todo"
				delete(w.todos, id)
				must(t, m.DeleteTodo(id))
			case k < 16:
				op = "put lease"
				l := randomLease(rng, id, w.now)
				w.leases[id] = l
				must(t, m.PutLease(l))
			case k < 17:
				op = "delete lease"
				delete(w.leases, id)
				must(t, m.DeleteLease(id))
			case k < 18:
				op = "goal"
				w.goal = goal(fmt.Sprintf("Model %d", rng.IntN(3)))
				w.goal.Status = []string{lease.GoalActive, lease.GoalArchived}[rng.IntN(2)]
				m.SetGoal(w.goal)
			case k < 20:
				// Only time passes (a board rendered later of the same
				// records): render now.
				op = "time passes"
				w.now = w.now.Add(time.Duration(1+rng.IntN(30)) * time.Minute)
			default:
				op = "save and load"
				m = roundTrip(t, m, store)
			}
			if op != "save and load" && op != "time passes" {
				changed = true
			}
			if rng.IntN(3) > 0 && step != steps-1 && op != "time passes" {
				continue // let several changes pile up between renders
			}
			got, err := m.Render(w.records(), w.now)
			if err != nil {
				t.Fatalf("seed %d step %d (%s): %v", seed, step, op, err)
			}
			if want := Render(w.board()); !bytes.Equal(got, want) {
				t.Fatalf("seed %d step %d (%s) at %v: model and full render differ\nmodel:\n%s\nfull:\n%s", seed, step, op, w.now, got, want)
			}
			if !changed && last != nil && !bytes.Equal(got, last) {
				timeOnly++
			}
			last, changed = got, false
			for _, id := range []string{ids[rng.IntN(len(ids))], "todo_missing"} {
				var want []string
				for _, td := range w.todos {
					if slices.Contains(td.DependsOn, id) {
						want = append(want, td.ID)
					}
				}
				slices.Sort(want)
				if got := m.Dependents(id); len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
					t.Fatalf("seed %d step %d: dependents of %s: %v, want %v", seed, step, id, got, want)
				}
			}
		}
		if m.Len() != len(w.todos) {
			t.Fatalf("seed %d: model has %d todos, records %d", seed, m.Len(), len(w.todos))
		}
	}
	// The test must exercise what time alone changes.
	if timeOnly < 20 {
		t.Fatalf("only %d renders changed by time alone", timeOnly)
	}
}

// TestModelFetchesOnlyWhatChanged: once rendered, a model fetches records
// only for shown todos whose own records or dependencies changed.
func TestModelFetchesOnlyWhatChanged(t *testing.T) {
	b := Board{Goal: goal("Big")}
	for i := range 5000 {
		b.Todos = append(b.Todos, todo(fmt.Sprintf("todo_r%05d", i), "P2", "ready work"))
	}
	_, m := RenderModel(b)
	m = roundTrip(t, m, pageMap{})
	recs := &countingRecords{Records: memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}}}
	for _, td := range b.Todos {
		recs.Records.(memRecords).todos[td.ID] = td
	}
	if _, err := m.Render(recs, time.Time{}); err != nil || recs.n != 0 {
		t.Fatalf("a loaded model fetched %d records (err %v), want 0", recs.n, err)
	}
	// A new todo that sorts first is fetched; the one pushed off the page
	// is not.
	first := todo("todo_a0000", "P0", "urgent")
	recs.Records.(memRecords).todos[first.ID] = first
	must(t, m.PutTodo(first))
	out, err := m.Render(recs, time.Time{})
	if err != nil || recs.n != 1 {
		t.Fatalf("fetched %d records (err %v), want 1", recs.n, err)
	}
	b.Todos = append(b.Todos, first)
	if !bytes.Equal(out, Render(b)) {
		t.Fatal("model and full render differ")
	}
	// A todo past the first page changes nothing and fetches nothing.
	late := todo("todo_z9999", "P4", "later")
	recs.Records.(memRecords).todos[late.ID] = late
	must(t, m.PutTodo(late))
	if again, err := m.Render(recs, time.Time{}); err != nil || recs.n != 1 || !bytes.Equal(again, out) {
		t.Fatalf("a todo past the page: fetched %d, same bytes %v, err %v", recs.n, bytes.Equal(again, out), err)
	}
}

// TestModelRefetchesAtExpiry: time crossing a shown todo's claim or lease
// expiry fetches that todo's records again (its text changes), and nothing
// else; time that crosses no expiry fetches nothing.
func TestModelRefetchesAtExpiry(t *testing.T) {
	b := Board{Goal: goal("Big"), Now: at(0)}
	for i := range 2000 {
		b.Todos = append(b.Todos, todo(fmt.Sprintf("todo_r%05d", i), "P2", "ready work"))
	}
	claimed := todo("todo_claimed", "P1", "claimed")
	claimed.ClaimedBy, claimed.ClaimTTLMinutes, claimed.ClaimedAt, claimed.ClaimExpiresAt = "agent-a", 30, ptr(at(0)), ptr(at(30))
	leased := todo("todo_leased", "P1", "leased")
	leased.Notes = []lease.Note{{Text: "n", Author: "agent-a", At: at(0), Facts: lease.NoteFacts{LeaseOwner: "agent-b", LeaseEpoch: 1}}}
	l := &lease.Lease{TodoID: "todo_leased", Owner: "agent-b", IdempotencyKey: "k", Version: 1, Epoch: 1, Status: lease.LeaseActive,
		AcquiredAt: at(0), ExpiresAt: at(50), Holders: []lease.Holder{{Epoch: 1, Owner: "agent-b", IdempotencyKey: "k", StartedAt: at(0)}}}
	b.Todos = append(b.Todos, claimed, leased)
	b.Leases = []*lease.Lease{l}
	_, m := RenderModel(b)
	m = roundTrip(t, m, pageMap{})
	mem := memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{l.TodoID: l}}
	for _, td := range b.Todos {
		mem.todos[td.ID] = td
	}
	for _, c := range []struct {
		now     time.Time
		fetches int
	}{
		{at(29), 0}, // no expiry crossed
		{at(30), 1}, // the claim expired: its todo
		{at(49), 0},
		{at(50), 2}, // the lease expired: its todo and lease (a note goes stale)
		{at(90), 0},
		{at(10), 3}, // back before both
	} {
		recs := &countingRecords{Records: mem}
		got, err := m.Render(recs, c.now)
		if err != nil {
			t.Fatal(err)
		}
		if recs.n != c.fetches {
			t.Errorf("at %v: fetched %d records, want %d", c.now, recs.n, c.fetches)
		}
		b.Now = c.now
		if !bytes.Equal(got, Render(b)) {
			t.Fatalf("at %v: model and full render differ", c.now)
		}
	}
}

// TestLoadModelRefusesVersion2: an encoding from before the model was
// kept in pages (version 2: every todo in one file) is refused, so the
// caller rebuilds it.
func TestLoadModelRefusesVersion2(t *testing.T) {
	_, m := RenderModel(mixedBoard())
	root, _, err := m.Save(pageMap{}.put)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Clone(root[:len(root)-4])
	body[len(modelMagic)] = 2
	old := binary.BigEndian.AppendUint32(body, crc32.ChecksumIEEE(body))
	if _, err := LoadModel(old, pageMap{}); err == nil {
		t.Fatal("a version 2 encoding loaded")
	}
}

type countingRecords struct {
	Records
	n int
}

func (c *countingRecords) Todo(id string) (*lease.Todo, error) {
	c.n++
	return c.Records.Todo(id)
}

func (c *countingRecords) Lease(id string) (*lease.Lease, error) {
	c.n++
	return c.Records.Lease(id)
}

// TestModelRefusesStaleRecords: records the model does not know of are an
// error (the caller rebuilds), not a wrong board.
func TestModelRefusesStaleRecords(t *testing.T) {
	m := NewModel()
	m.PutTodo(todo("todo_gone", "P1", "x"))
	_, err := m.Render(memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}}, time.Time{})
	if _, ok := err.(*StaleError); !ok {
		t.Fatalf("got %v, want a StaleError", err)
	}
}

// TestLoadModelRejectsDamage: every truncation and every flipped byte of
// a root is refused; a page that is missing, damaged or not the one its
// root names is a StaleError when it is read (the caller rebuilds).
func TestLoadModelRejectsDamage(t *testing.T) {
	b := mixedBoard()
	for i := range 300 {
		b.Todos = append(b.Todos, todo(fmt.Sprintf("todo_z%04d", i), "P3", "more"))
	}
	_, m := RenderModel(b)
	store := pageMap{}
	root, _, err := m.Save(store.put)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadModel(root, store); err != nil {
		t.Fatal(err)
	}
	for i := range root {
		if _, err := LoadModel(root[:i], store); err == nil {
			t.Fatalf("truncation at %d accepted", i)
		}
		bad := bytes.Clone(root)
		bad[i] ^= 0x41
		if _, err := LoadModel(bad, store); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	recs := memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}}
	for _, td := range b.Todos {
		recs.todos[td.ID] = td
	}
	for _, l := range b.Leases {
		recs.leases[l.TodoID] = l
	}
	names, stale := m.Pages(), 0
	if len(names) < 6 {
		t.Fatalf("only %d pages", len(names))
	}
	for _, name := range names {
		for what, damage := range map[string]func(pageMap){
			"missing":   func(s pageMap) { delete(s, name) },
			"truncated": func(s pageMap) { s[name] = s[name][:len(s[name])-1] },
			"flipped":   func(s pageMap) { s[name] = bytes.Clone(s[name]); s[name][len(s[name])/2] ^= 1 },
			"another":   func(s pageMap) { s[name] = s[names[(slices.Index(names, name)+1)%len(names)]] },
		} {
			s := maps.Clone(store)
			damage(s)
			loaded, err := LoadModel(root, s)
			if err != nil {
				t.Fatal(err)
			}
			// A render that reads the page finds it stale; one that does
			// not need it draws the board.
			got, err := loaded.Render(recs, b.Now)
			if _, isStale := err.(*StaleError); isStale {
				stale++
			} else if err != nil || !bytes.Equal(got, Render(b)) {
				t.Fatalf("page %s %s: render gave %v, want the board or a StaleError", name, what, err)
			}
			// Reading every page (all todos' dependents) finds it.
			loaded, _ = LoadModel(root, s)
			if err := readAll(loaded); err == nil {
				t.Fatalf("page %s %s: read without error", name, what)
			} else if _, isStale := err.(*StaleError); !isStale {
				t.Fatalf("page %s %s: %v, want a StaleError", name, what, err)
			}
		}
	}
	if stale == 0 {
		t.Fatal("no render read a damaged page")
	}
}

// readAll reads every page of m.
func readAll(m *Model) error {
	for _, p := range m.pages {
		if err := m.read(p); err != nil {
			return err
		}
	}
	for _, p := range m.lpages {
		if err := m.readLeases(p); err != nil {
			return err
		}
	}
	return nil
}

// FuzzLoadModel: whatever root loads saves and loads to the same root.
func FuzzLoadModel(f *testing.F) {
	_, m := RenderModel(mixedBoard())
	root, _, err := m.Save(pageMap{}.put)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(root)
	f.Add([]byte("LXBM\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := LoadModel(data, pageMap{})
		if err != nil {
			return
		}
		again, _, err := m.Save(pageMap{}.put)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}

func BenchmarkModel(b *testing.B) {
	for _, n := range []int{100, 10000} {
		bd := Board{Goal: goal("Big")}
		for i := range n {
			bd.Todos = append(bd.Todos, todo(fmt.Sprintf("todo_r%05d", i), lease.Priorities[i%5], "ready work"))
		}
		recs := memRecords{todos: map[string]*lease.Todo{}, leases: map[string]*lease.Lease{}}
		for _, td := range bd.Todos {
			recs.todos[td.ID] = td
		}
		_, m := RenderModel(bd)
		store := pageMap{}
		root, _, err := m.Save(store.put)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("full-render/todos=%d", n), func(b *testing.B) {
			for range b.N {
				Render(bd)
			}
		})
		b.Run(fmt.Sprintf("load-put-render-save/todos=%d", n), func(b *testing.B) {
			for i := range b.N {
				m, err := LoadModel(root, store)
				if err != nil {
					b.Fatal(err)
				}
				td := todo(fmt.Sprintf("todo_b%06d", i), "P2", "bench")
				recs.todos[td.ID] = td
				if err := m.PutTodo(td); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Render(recs, time.Time{}); err != nil {
					b.Fatal(err)
				}
				if _, _, err := m.Save(func(string, []byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
				delete(recs.todos, td.ID)
			}
		})
	}
}

// pageMap is a PageSource in memory.
type pageMap map[string][]byte

func (s pageMap) Page(name string) ([]byte, error) { return s[name], nil }

func (s pageMap) put(name string, data []byte) error {
	s[name] = data
	return nil
}

// roundTrip saves m into store and loads it back.
func roundTrip(t testing.TB, m *Model, store pageMap) *Model {
	t.Helper()
	root, _, err := m.Save(store.put)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadModel(root, store)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
