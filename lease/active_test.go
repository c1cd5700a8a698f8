package lease

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func activeLease(todo string, scopes ...string) *Lease {
	return &Lease{TodoID: todo, Owner: "agent-a", IdempotencyKey: "k-" + todo, Version: 1, Epoch: 1, Status: LeaseActive,
		WriteScopes: scopes, AcquiredAt: tlT0, ExpiresAt: tlT0.Add(time.Hour)}
}

func TestActiveLeasesSetAndList(t *testing.T) {
	a := NewActiveLeases()
	for _, id := range []string{"todo_gamma", "todo_alpha", "todo_beta"} {
		a.Set(LeasePath("g", id), activeLease(id, "src/"+id+"/**"))
	}
	released := activeLease("todo_delta")
	released.Status = LeaseReleased
	a.Set(LeasePath("g", "todo_delta"), released) // not active: not listed
	a.Set(LeasePath("g", "todo_beta"), nil)       // deleted
	list := a.List()
	var paths []string
	for _, e := range list {
		paths = append(paths, e.Path)
	}
	if !slices.IsSorted(paths) || len(paths) != 2 || a.Len() != 2 {
		t.Fatalf("List paths %v (want 2, sorted by path), Len %d", paths, a.Len())
	}
	for _, e := range list {
		if e.TodoID != RecordID(e.Path) || len(e.Scopes) != 1 || e.Scopes[0] != "src/"+e.TodoID+"/**" || !e.ExpiresAt.Equal(tlT0.Add(time.Hour)) {
			t.Fatalf("entry %+v", e)
		}
	}
	// A lease without scopes has none listed; the entry does not share
	// the record's slice.
	l := activeLease("todo_eps01", "x/**")
	a.Set(LeasePath("g", "todo_eps01"), l)
	l.WriteScopes[0] = "changed"
	for _, e := range a.List() {
		if e.TodoID == "todo_eps01" && e.Scopes[0] != "x/**" {
			t.Fatalf("the index shares the record's scopes: %+v", e)
		}
	}
	// Clone is independent, its list too (List's answer is kept until a
	// Set).
	before := a.List()
	c := a.Clone()
	c.Set(LeasePath("g", "todo_alpha"), nil)
	if a.Len() != 3 || c.Len() != 2 || len(a.List()) != 3 || len(c.List()) != 2 || len(before) != 3 {
		t.Fatalf("clone not independent: %d %d, lists %d %d", a.Len(), c.Len(), len(a.List()), len(c.List()))
	}
	// A Set after a List is listed.
	a.Set(LeasePath("g", "todo_aaa0"), activeLease("todo_aaa0"))
	if got := a.List(); len(got) != 4 || !slices.ContainsFunc(got, func(e ActiveLease) bool { return e.TodoID == "todo_aaa0" }) {
		t.Fatalf("list after a Set: %+v", got)
	}
	// A decoded index lists sorted, and follows its Sets.
	d, err := DecodeActiveLeases(a.Encode())
	if err != nil {
		t.Fatal(err)
	}
	d.Set(LeasePath("g", "todo_alpha"), nil)
	var ids, ps []string
	for _, e := range d.List() {
		ids, ps = append(ids, e.TodoID), append(ps, e.Path)
	}
	slices.Sort(ids)
	if !slices.IsSorted(ps) || !slices.Equal(ids, []string{"todo_aaa0", "todo_eps01", "todo_gamma"}) {
		t.Fatalf("decoded, then changed: %v", ps)
	}
}

func TestActiveLeasesEncoding(t *testing.T) {
	a := NewActiveLeases()
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("todo_num%03d", i)
		l := activeLease(id, fmt.Sprintf("w/%d/**", i), "shared/*.md")
		l.Owner, l.OwnerRegistration = fmt.Sprintf("agent-%d", i), int64(i)
		a.Set(LeasePath("g", id), l)
	}
	a.Set(LeasePath("g", "todo_plain1"), activeLease("todo_plain1"))
	data := a.Encode()
	back, err := DecodeActiveLeases(data)
	if err != nil || !slices.EqualFunc(back.List(), a.List(), func(x, y ActiveLease) bool {
		return x.Path == y.Path && x.TodoID == y.TodoID && x.ExpiresAt.Equal(y.ExpiresAt) && slices.Equal(x.Scopes, y.Scopes) &&
			x.Owner == y.Owner && x.OwnerRegistration == y.OwnerRegistration
	}) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, back, a.List())
	}
	// Every truncation, extension and flipped byte is refused whole.
	for n := 0; n < len(data); n++ {
		if _, err := DecodeActiveLeases(data[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	if _, err := DecodeActiveLeases(append(slices.Clone(data), 0)); err == nil {
		t.Fatal("a longer encoding was accepted")
	}
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 0x40
		if _, err := DecodeActiveLeases(bad); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
}

// activeLeases answers from the index with the view's own writes laid over
// it, and a write after an answer changes the next answer.
func TestActiveLeasesFollowTheViewsWrites(t *testing.T) {
	files := MemFiles{}
	seed := NewView(files, "r1", tlT0)
	seed.PutLease("g", activeLease("todo_alpha", "a/**"))
	seed.PutLease("g", activeLease("todo_beta", "b/**"))
	files.Apply(seed.Changes())
	for _, indexed := range []bool{false, true} {
		v := NewView(files, "r1", tlT0)
		if indexed {
			ix := NewActiveLeases()
			ix.Set(LeasePath("g", "todo_alpha"), activeLease("todo_alpha", "a/**"))
			ix.Set(LeasePath("g", "todo_beta"), activeLease("todo_beta", "b/**"))
			v.UseActiveLeases(func(goal string) (*ActiveLeases, bool) { return ix, goal == "g" })
		}
		ids := func() []string {
			t.Helper()
			list, err := v.activeLeases("g")
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range list {
				out = append(out, e.TodoID)
			}
			slices.Sort(out) // (listed by path: the fan-out decides the order)
			return out
		}
		if got := ids(); !slices.Equal(got, []string{"todo_alpha", "todo_beta"}) {
			t.Fatalf("indexed=%v: %v", indexed, got)
		}
		v.PutLease("g", activeLease("todo_gamma", "c/**"))
		rel := activeLease("todo_alpha", "a/**")
		rel.Status, rel.ReleasedAt = LeaseReleased, &tlT0
		v.PutLease("g", rel)
		if got := ids(); !slices.Equal(got, []string{"todo_beta", "todo_gamma"}) {
			t.Fatalf("indexed=%v: after writes %v, want [todo_beta todo_gamma]", indexed, got)
		}
	}
}
