package derived_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// leaseIndexFile is goal g's active-lease index.
const leaseIndexFile = "loopx-cache/leases-67"

// TestActiveLeaseIndexMatchesScan: along random histories of lease and
// todo operations (scoped acquires, transfers, releases, closes,
// unregistrations, hand-edited records), the active-lease index a Store
// gives a view (kept in memory, saved, loaded by another Store, damaged)
// equals the one built from every lease record, and an acquire decided on
// a view with the index decides exactly as on one without.
func TestActiveLeaseIndexMatchesScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		repo := gitstore.NewMemRepo(gitstore.DefaultRetry)
		opts := loopx.Options{Now: func() time.Time { return clock }}
		s := loopx.OpenRepo(repo, opts)
		c := derived.New(repo, derived.Config{})
		must := func(_ any, err error) {
			if err != nil {
				rt.Fatal(err)
			}
		}
		must(s.Apply(lease.CallOf(lease.InitRequest{FormatVersion: lease.FormatVersion})))
		must(s.CreateGoal(lease.GoalCreateRequest{Goal: "g", HandoffMode: lease.HandoffSoftClaim}))
		agents := []string{"agent-a", "agent-b"}
		for _, a := range agents {
			must(s.RegisterAgent(lease.RegisterRequest{Goal: "g", Agent: a}))
		}
		todos := []string{"todo_aaa", "todo_bbb", "todo_ccc", "todo_ddd"}
		scopes := []string{"src/**", "src/a/**", "docs/**", "docs/x.md", "lib/*.go", "{src,lib}/b/**"}
		for _, td := range todos {
			must(s.AddTodo(lease.AddRequest{Goal: "g", Todo: td, Text: td}))
		}
		n := 0
		current := func(todo string) (owner, key string, version int64) {
			res, err := s.Inspect("g", todo)
			if err != nil {
				return "", "", 0
			}
			if lr := res.Data; lr.Lease != nil {
				return lr.Lease.Owner, lr.Lease.IdempotencyKey, lr.Lease.Version
			}
			return "", "", 0
		}
		steps := rapid.IntRange(5, 40).Draw(rt, "steps")
		for range steps {
			clock = clock.Add(time.Duration(rapid.IntRange(0, 300).Draw(rt, "dt")) * time.Second)
			todo := rapid.SampledFrom(todos).Draw(rt, "todo")
			agent := rapid.SampledFrom(agents).Draw(rt, "agent")
			owner, key, v := current(todo)
			n++
			var req any
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2:
				req = lease.AcquireRequest{Goal: "g", Todo: todo, Owner: agent, IdempotencyKey: fmt.Sprintf("k%d", n),
					TTLSeconds:  int64(rapid.IntRange(60, 900).Draw(rt, "ttl")),
					WriteScopes: rapid.SliceOfNDistinct(rapid.SampledFrom(scopes), 0, 2, rapid.ID[string]).Draw(rt, "scopes")}
			case 3:
				req = lease.TransferRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: &v,
					NewOwner: agent, NewIdempotencyKey: fmt.Sprintf("k%d", n), TTLSeconds: 300}
			case 4:
				req = lease.RenewRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: &v, TTLSeconds: 600}
			case 5:
				req = lease.ReleaseRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: &v}
			case 6:
				req = lease.CompleteRequest{Goal: "g", Todo: todo, Actor: agent, Evidence: []string{"done"}}
			case 7:
				req = lease.UnregisterRequest{Goal: "g", Agent: agent}
			case 8:
				req = lease.RegisterRequest{Goal: "g", Agent: agent}
			default:
				req = lease.ClaimRequest{Goal: "g", Todo: todo, Actor: agent}
			}
			_, _ = s.Apply(lease.CallOf(req)) // refusals are part of the story
			switch rapid.IntRange(0, 5).Draw(rt, "cache") {
			case 0: // a new process, with the saved index
				s = loopx.OpenRepo(repo, opts)
				c = derived.New(repo, derived.Config{})
			case 1: // a damaged side file
				data, _ := repo.ReadSideFile(leaseIndexFile)
				if len(data) > 0 {
					data[rapid.IntRange(0, len(data)-1).Draw(rt, "at")] ^= 0x20
					repo.WriteSideFile(leaseIndexFile, data, false)
				}
				s = loopx.OpenRepo(repo, opts)
				c = derived.New(repo, derived.Config{})
			case 2: // a truncated one
				data, _ := repo.ReadSideFile(leaseIndexFile)
				repo.WriteSideFile(leaseIndexFile, data[:len(data)/2], false)
				s = loopx.OpenRepo(repo, opts)
				c = derived.New(repo, derived.Config{})
			}
			head, err := repo.Head(context.Background())
			if err != nil {
				rt.Fatal(err)
			}
			sn, err := repo.Snapshot(head)
			if err != nil {
				rt.Fatal(err)
			}
			want := derived.BuildLeaseIndex(c.RecordView(sn), "g")
			got := c.ActiveLeases(sn, "g")
			if want == nil || got == nil || !reflect.DeepEqual(got.List(), want.List()) {
				rt.Fatalf("index %+v, scan %+v", got, want)
			}
			// A probe acquire decides the same with and without it.
			probe := lease.AcquireRequest{Goal: "g", Todo: rapid.SampledFrom(todos).Draw(rt, "ptodo"), Owner: rapid.SampledFrom(agents).Draw(rt, "powner"),
				IdempotencyKey: "probe", TTLSeconds: 60, WriteScopes: []string{rapid.SampledFrom(scopes).Draw(rt, "pscope")}}
			now := lease.Now(clock, sn.Time())
			with, without := c.View(sn), c.RecordView(sn)
			if a, b := decideJSON(lease.Acquire(with, probe, now)), decideJSON(lease.Acquire(without, probe, now)); a != b {
				rt.Fatalf("acquire with the index: %s\nwithout: %s", a, b)
			}
			if a, b := decideJSON(lease.Ready(c.View(sn), "g", probe.Owner, now)), decideJSON(lease.Ready(c.RecordView(sn), "g", probe.Owner, now)); a != b {
				rt.Fatalf("ready with the index: %s\nwithout: %s", a, b)
			}
		}
	})
}

func decideJSON(o any, err error) string {
	if err != nil {
		b, _ := json.Marshal(err)
		e, _ := lease.AsError(err)
		return fmt.Sprintf("error %v %s", e, b)
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// A lease record that does not decode (a hand edit) gets no index: the
// scan reports it, as it did before there was an index.
func TestActiveLeaseIndexDamagedRecord(t *testing.T) {
	clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	repo := gitstore.NewMemRepo(gitstore.DefaultRetry)
	s := loopx.OpenRepo(repo, loopx.Options{Now: func() time.Time { return clock }})
	c := derived.New(repo, derived.Config{})
	for _, req := range []any{
		lease.InitRequest{FormatVersion: lease.FormatVersion},
		lease.GoalCreateRequest{Goal: "g"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-a"},
		lease.AddRequest{Goal: "g", Todo: "todo_aaa", Text: "a"},
		lease.AddRequest{Goal: "g", Todo: "todo_bbb", Text: "b"},
		lease.AcquireRequest{Goal: "g", Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", TTLSeconds: 600, WriteScopes: []string{"src/**"}},
	} {
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := repo.Head(context.Background())
	sn, _ := repo.Snapshot(head)
	if ix := c.ActiveLeases(sn, "g"); ix == nil || ix.Len() != 1 {
		t.Fatalf("index %+v", ix)
	}
	// A hand edit breaks the lease record.
	res, err := repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: []gitstore.Change{{Path: lease.LeasePath("g", "todo_aaa"), Data: []byte("todo_id: [\n")}},
			Info: gitstore.CommitInfo{Message: "hand edit", When: clock}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sn, _ = repo.Snapshot(res.Head)
	if ix := c.ActiveLeases(sn, "g"); ix != nil {
		t.Fatalf("an index over a damaged record: %+v", ix.List())
	}
	_, err = lease.Acquire(c.View(sn), lease.AcquireRequest{Goal: "g", Todo: "todo_bbb", Owner: "agent-a", IdempotencyKey: "k2",
		TTLSeconds: 60, WriteScopes: []string{"docs/**"}}, clock)
	if e, ok := lease.AsError(err); !ok || e.Code != lease.CodeCorruptRecord {
		t.Fatalf("acquire over a damaged lease record: %v", err)
	}
}

// The index file is rewritten by the process that caught it up by enough
// changed records: a small index after every change (the next process
// then catches up one record), a large one after
// min(LeaseIndexSaveAfter, 1 + active/50) (leaseSaveAfter).
func TestActiveLeaseIndexSavedEveryFewChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing int // active leases before the counted acquires
		after    int // the changes a process catches up before it saves
	}{
		{"small", 0, 1},
		{"large", 150, 3}, // min(3, 1+150/50)
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := derived.Config{LeaseIndexSaveAfter: 3}
			f := fixture.NewMem(t, loopx.Options{Derived: cfg}, "agent-a")
			s, repo := f.S, f.Repo
			for i := range tc.existing + 8 {
				f.Do(s, lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Text: "t"})
			}
			v0 := int64(0)
			for i := range tc.existing {
				f.Do(s, lease.AcquireRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Owner: "agent-a",
					IdempotencyKey: fmt.Sprintf("k%d", i), ExpectedVersion: &v0, TTLSeconds: 600, WriteScopes: []string{fmt.Sprintf("e/%d/**", i)}})
			}
			saved := func() gitstore.Hash { return derived.SavedLeases(repo, "g") }
			// Each acquire in a process of its own (a new Store): its
			// scope check reads the index, from the file.
			acquire := func(i int) gitstore.Hash {
				t.Helper()
				head, _ := repo.Head(context.Background())
				v := int64(0)
				f.Do(f.Open(), lease.AcquireRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", tc.existing+i), Owner: "agent-a",
					IdempotencyKey: fmt.Sprintf("n%d", i), ExpectedVersion: &v, TTLSeconds: 600, WriteScopes: []string{fmt.Sprintf("w/%d/**", i)}})
				return head // the revision its decision read
			}
			last := acquire(0) // the file is at this revision (rebuilt or caught up far enough)
			if saved() != last {
				t.Fatalf("after the first acquire the file is at %s, want %s", saved(), last)
			}
			for i := 1; i <= 2*tc.after; i++ {
				read := acquire(i)
				if i%tc.after == 0 {
					if saved() != read {
						t.Fatalf("acquire %d: %d changes caught up, the file is at %s, want %s", i, tc.after, saved(), read)
					}
					last = read
				} else if saved() != last {
					t.Fatalf("acquire %d: the file was rewritten after fewer than %d changes", i, tc.after)
				}
			}
			// What the file and a catch-up give still equals the records' index.
			head, _ := repo.Head(context.Background())
			sn, err := repo.Snapshot(head)
			if err != nil {
				t.Fatal(err)
			}
			c := derived.New(repo, cfg)
			got := c.ActiveLeases(sn, "g")
			want := derived.BuildLeaseIndex(c.RecordView(sn), "g")
			if got == nil || !reflect.DeepEqual(got.List(), want.List()) || len(want.List()) != tc.existing+2*tc.after+1 {
				t.Fatalf("index of %d, want %d entries", len(got.List()), len(want.List()))
			}
		})
	}
}
