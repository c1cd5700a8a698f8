package lease

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// listingFixture is a goal of todos of mixed priorities and ages, one with
// a claim in force, one with an expired claim, one with a note and one
// with a lease, stored as records; and its listing, encoded and decoded
// as a process reads it from its side file.
func listingFixture(t *testing.T) (*MemFiles, *Listing, time.Time) {
	t.Helper()
	files := MemFiles{}
	now := tlT0.Add(time.Hour)
	v := NewView(files, "r1", tlT0)
	later, expired := now.Add(time.Hour), now.Add(-time.Minute)
	v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: tlT0})
	v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: tlT0, UpdatedAt: tlT0})
	for i, p := range []string{"P2", "P0", "P3", "P2", "P1", "P2", "P0"} {
		td := &Todo{ID: fmt.Sprintf("todo_l%02d", i), Text: "t", Status: TodoOpen, Priority: p,
			CreatedAt: tlT0.Add(time.Duration(i%3) * time.Second), UpdatedAt: tlT0}
		switch i {
		case 1:
			td.ClaimedBy, td.ClaimExpiresAt = "agent-a", &later
		case 2:
			td.ClaimedBy, td.ClaimExpiresAt = "agent-b", &expired
		case 3:
			td.Notes = []Note{{Text: "n", Author: "agent-a", At: tlT0, Facts: NoteFacts{ClaimedBy: "agent-a"}}}
		case 4:
			td.LeaseEpoch = 1
			x := activeLease(td.ID, "src/**")
			x.ExpiresAt = later
			v.PutLease("g", x)
		}
		v.PutTodo("g", td)
	}
	files.Apply(v.Changes())
	built, err := BuildListing(NewView(files, "r1", tlT0), "g")
	if err != nil {
		t.Fatal(err)
	}
	l, err := DecodeListing(built.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return &files, l, now
}

// listed is ListTodoViews of the goal on a view of files with listing l
// (nil: none, the records are read), as JSON, and the ids shown.
func listed(t *testing.T, files *MemFiles, l *Listing, now time.Time, offset, limit int) (string, []string) {
	t.Helper()
	v := NewView(*files, "r1", tlT0)
	if l != nil {
		v.UseListing(func(string) (*Listing, bool) { return l, true })
	}
	views, total, err := ListTodoViews(v, "g", "", "", now, offset, limit)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tv := range views {
		ids = append(ids, tv.ID)
	}
	b, _ := json.Marshal(views)
	return fmt.Sprintf("%d %s", total, b), ids
}

// TestListTodoViewsPages: a page of a goal's list, from its listing
// (decoding only the page's records), is the page the records give, and
// the one asked for.
func TestListTodoViewsPages(t *testing.T) {
	files, l, now := listingFixture(t)
	// P0 (the older first), P1, P2 (the older first, then by id), P3.
	order := []string{"todo_l06", "todo_l01", "todo_l04", "todo_l00", "todo_l03", "todo_l05", "todo_l02"}
	for _, c := range []struct {
		offset, limit int
		want          []string
	}{
		{0, 0, order},
		{0, 3, order[:3]},
		{2, 3, order[2:5]},
		{5, 3, order[5:]},
		{6, 0, order[6:]},
		{7, 1, nil},
		{100, 0, nil},
		{0, 100, order},
	} {
		got, ids := listed(t, files, l, now, c.offset, c.limit)
		want, _ := listed(t, files, nil, now, c.offset, c.limit)
		if got != want {
			t.Errorf("offset %d limit %d from the listing:\n%s\nfrom the records:\n%s", c.offset, c.limit, got, want)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("offset %d limit %d: %v, want %v", c.offset, c.limit, ids, c.want)
		}
	}
}

// TestListingBadRecords: a listing whose records passed its checksum but
// do not decode, or are out of order, is not used: the list, a page of it
// and ready read the records instead.
func TestListingBadRecords(t *testing.T) {
	files, good, now := listingFixture(t)
	for _, c := range []struct {
		name  string
		spoil func(l *Listing)
	}{
		{"a record cut short", func(l *Listing) { l.recs[3] = l.recs[3][:len(l.recs[3])/2] }},
		{"a record with bytes after it", func(l *Listing) { l.recs[0] += "\x00" }},
		{"two records swapped", func(l *Listing) { l.recs[1], l.recs[2] = l.recs[2], l.recs[1] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := DecodeListing(good.Encode())
			if err != nil {
				t.Fatal(err)
			}
			c.spoil(l)
			if _, err := l.All(); err == nil {
				t.Fatal("All decoded a spoiled listing")
			}
			for _, pg := range [][2]int{{0, 0}, {0, 4}, {1, 2}} {
				got, _ := listed(t, files, l, now, pg[0], pg[1])
				want, _ := listed(t, files, nil, now, pg[0], pg[1])
				if got != want {
					t.Errorf("page %v with the spoiled listing:\n%s\nfrom the records:\n%s", pg, got, want)
				}
			}
			v := NewView(*files, "r1", tlT0)
			v.UseListing(func(string) (*Listing, bool) { return l, true })
			ready, err := Ready(v, "g", "", now)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Ready(NewView(*files, "r1", tlT0), "g", "", now)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := decided(ready), decided(want); a != b {
				t.Errorf("ready with the spoiled listing: %s\nfrom the records: %s", a, b)
			}
		})
	}
}

// TestListingEncoding: a decoded listing encodes to the same bytes as the
// listing it was decoded from, whether its todos were decoded or not, and
// a damaged encoding does not decode.
func TestListingEncoding(t *testing.T) {
	_, l, _ := listingFixture(t)
	data := l.Encode()
	again, err := DecodeListing(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Encode(); string(got) != string(data) {
		t.Fatal("a listing decoded and encoded again changed")
	}
	todos, err := again.All()
	if err != nil || len(todos) != again.Len() {
		t.Fatalf("All: %d todos, %v", len(todos), err)
	}
	if got := NewListing(todos, again.Leases).Encode(); string(got) != string(data) {
		t.Fatal("the listing of the decoded todos encodes differently")
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"another version", append([]byte("LXLS\x01"), data[5:]...)},
		{"truncated", data[:len(data)-3]},
		{"a byte more", append(slices.Clone(data), 0)},
		{"a count beyond the bytes", append([]byte("LXLS\x02\xff\xff\x03"), data[7:]...)},
	} {
		if _, err := DecodeListing(c.data); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
}

func decided(todos []*Todo) string {
	b, _ := json.Marshal(todos)
	return string(b)
}
