package lease

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestNoteStale(t *testing.T) {
	lease := func(owner string, epoch int64, status string, exp time.Time) *Lease {
		l := &Lease{TodoID: "todo_one", Owner: owner, IdempotencyKey: "k", Version: epoch, Epoch: epoch, Status: status, ExpiresAt: exp}
		if status == LeaseReleased {
			l.ReleasedAt = timePtr(tcT0)
		}
		return l
	}
	claimed := func(by string, exp *time.Time) *Todo {
		return &Todo{ID: "todo_one", ClaimedBy: by, ClaimExpiresAt: exp}
	}
	note := func(by, owner string, epoch int64) Note {
		return Note{Text: "n", Facts: NoteFacts{ClaimedBy: by, LeaseOwner: owner, LeaseEpoch: epoch}}
	}
	cases := []struct {
		name  string
		todo  *Todo
		lease *Lease
		note  Note
		stale bool
	}{
		{name: "nothing changed, unclaimed", todo: claimed("", nil), note: note("", "", 0)},
		{name: "nothing changed, claimed and leased", todo: claimed("a", nil), lease: lease("a", 2, LeaseActive, tcMin(5)), note: note("a", "a", 2)},
		{name: "claim moved", todo: claimed("b", nil), note: note("a", "", 0), stale: true},
		{name: "claim cleared", todo: claimed("", nil), note: note("a", "", 0), stale: true},
		{name: "claim taken", todo: claimed("a", nil), note: note("", "", 0), stale: true},
		{name: "claim expired", todo: claimed("a", timePtr(tcMin(-1))), note: note("a", "", 0), stale: true},
		{name: "lease transferred", todo: claimed("", nil), lease: lease("b", 3, LeaseActive, tcMin(5)), note: note("", "a", 2), stale: true},
		{name: "same owner, new execution", todo: claimed("", nil), lease: lease("a", 3, LeaseActive, tcMin(5)), note: note("", "a", 2), stale: true},
		{name: "lease released", todo: claimed("", nil), lease: lease("a", 2, LeaseReleased, tcMin(5)), note: note("", "a", 2), stale: true},
		{name: "lease expired", todo: claimed("", nil), lease: lease("a", 2, LeaseActive, tcMin(-1)), note: note("", "a", 2), stale: true},
		{name: "lease started after the note", todo: claimed("", nil), lease: lease("a", 1, LeaseActive, tcMin(5)), note: note("", "", 0), stale: true},
		{name: "released lease, note without lease", todo: claimed("", nil), lease: lease("a", 1, LeaseReleased, tcMin(5)), note: note("", "", 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NoteStale(c.todo, c.lease, c.note, tcT0); got != c.stale {
				t.Fatalf("stale = %v, want %v", got, c.stale)
			}
		})
	}
}

func TestNotesGoStaleWithTheirFacts(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one")
	f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a"}))
	f.must(f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "a", Note: "context for whoever continues"}))
	stale := func(now time.Time) bool {
		v := f.view(now)
		tv, err := ViewTodo(v, tcGoal, f.todo("todo_one"), now, true)
		if err != nil {
			t.Fatal(err)
		}
		return tv.Notes[0].Stale
	}
	if stale(tcMin(2)) {
		t.Fatal("fresh note is stale")
	}
	if n := f.todo("todo_one").Notes[0]; n.Facts != (NoteFacts{ClaimedBy: "a"}) || n.Author != "a" || !n.At.Equal(tcMin(1)) {
		t.Fatalf("note %+v", n)
	}
	// The claim is cleared: the note is stale, its bytes unchanged.
	f.must(f.update(tcMin(3), UpdateRequest{Todo: "todo_one", Actor: "a", ClearClaim: true}))
	if !stale(tcMin(3)) {
		t.Fatal("note not stale after the claim changed")
	}
	if f.todo("todo_one").Notes[0].Text != "context for whoever continues" {
		t.Fatal("note bytes changed")
	}
}

func TestViewTodoJSON(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one", "todo_two", "todo_three", "todo_four")
	f.editTodo("todo_two", func(t *Todo) { t.DependsOn = []string{"todo_one", "todo_three"} })
	f.editTodo("todo_four", func(t *Todo) { t.DependsOn = []string{"todo_two"} })
	f.editTodo("todo_three", func(t *Todo) { t.Status = TodoDone })
	f.claimTodo("todo_two", "a", func(t *Todo) {
		t.ClaimTTLMinutes, t.ClaimExpiresAt = 10, timePtr(tcMin(10))
		t.Notes = []Note{{Text: "old", Author: "a", At: tcT0, Facts: NoteFacts{ClaimedBy: "b"}}}
	})
	f.putLease("todo_two", "a", "ka", 1, 1, tcMin(5), "src/**")

	render := func(now time.Time, relations bool) map[string]any {
		v := f.view(now)
		tv, err := ViewTodo(v, tcGoal, f.todo("todo_two"), now, relations)
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(tv)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := render(tcMin(1), true)
	if m["todo_id"] != "todo_two" || m["status"] != "open" || m["claimed_by"] != "a" || m["claim_expired"] != false {
		t.Fatalf("fields: %v", m)
	}
	if fmt.Sprint(m["depends_on"]) != "[todo_one todo_three]" || fmt.Sprint(m["open_dependencies"]) != "[todo_one]" || fmt.Sprint(m["unblocks"]) != "[todo_four]" {
		t.Fatalf("relations: %v %v %v", m["depends_on"], m["open_dependencies"], m["unblocks"])
	}
	notes := m["notes"].([]any)
	if len(notes) != 1 || notes[0].(map[string]any)["stale"] != true || notes[0].(map[string]any)["text"] != "old" {
		t.Fatalf("notes: %v", notes)
	}
	l := m["lease"].(map[string]any)
	if l["owner"] != "a" || l["effective"] != true || l["version"] != float64(1) {
		t.Fatalf("lease: %v", l)
	}
	for _, k := range []string{"evidence", "excluded_agents", "required_write_scopes"} {
		if _, ok := m[k].([]any); !ok {
			t.Fatalf("%s is %v, want a list", k, m[k])
		}
	}
	// Without relations there are no relation fields.
	m = render(tcMin(1), false)
	for _, k := range []string{"open_dependencies", "unblocks", "lease"} {
		if _, ok := m[k]; ok {
			t.Fatalf("%s present without relations", k)
		}
	}
	// After the claim expires claimed_by disappears.
	m = render(tcMin(10), true)
	if _, ok := m["claimed_by"]; ok || m["claim_expired"] != true || m["claim_expires_at"] != nil || m["claim_ttl_minutes"] != nil {
		t.Fatalf("expired: %v", m)
	}
	// A todo that never had a lease shows lease null.
	v := f.view(tcT0)
	tv, err := ViewTodo(v, tcGoal, f.todo("todo_one"), tcT0, true)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(tv)
	var m1 map[string]any
	_ = json.Unmarshal(js, &m1)
	if v, ok := m1["lease"]; !ok || v != nil {
		t.Fatalf("lease of a todo without one: %s", js)
	}
}

func TestOpenDependencies(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_main", "todo_done", "todo_open", "todo_sup1", "todo_sup2", "todo_cyc1", "todo_cyc2")
	f.editTodo("todo_done", func(t *Todo) { t.Status = TodoDone })
	f.editTodo("todo_sup1", func(t *Todo) { t.Status, t.Reason, t.SupersededBy = TodoSuperseded, "r", "todo_done" })
	f.editTodo("todo_sup2", func(t *Todo) { t.Status, t.Reason, t.SupersededBy = TodoSuperseded, "r", "todo_open" })
	f.editTodo("todo_cyc1", func(t *Todo) { t.Status, t.Reason, t.SupersededBy = TodoSuperseded, "r", "todo_cyc2" })
	f.editTodo("todo_cyc2", func(t *Todo) { t.Status, t.Reason, t.SupersededBy = TodoSuperseded, "r", "todo_cyc1" })
	f.editTodo("todo_main", func(t *Todo) {
		t.DependsOn = []string{"todo_done", "todo_open", "todo_sup1", "todo_sup2", "todo_cyc1", "todo_gone"}
	})
	got, err := OpenDependencies(f.view(tcT0), tcGoal, f.todo("todo_main"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[todo_open todo_sup2 todo_cyc1 todo_gone]" {
		t.Fatalf("open dependencies %v", got)
	}
}
