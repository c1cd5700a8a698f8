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

// The saved index is rewritten by a process that rebuilt it, or that caught
// it up with LeaseIndexSaveAfter changed records or more; a process that
// caught up fewer leaves the file as it was (and the next one catches up
// from there).
func TestActiveLeaseIndexSavedEveryFewChanges(t *testing.T) {
	cfg := derived.Config{LeaseIndexSaveAfter: 3}
	f := fixture.NewMem(t, loopx.Options{Derived: cfg}, "agent-a")
	s, repo := f.S, f.Repo
	for i := range 8 {
		f.Do(s, lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Text: "t"})
	}
	saved := func() gitstore.Hash { return derived.SavedLeases(repo, "g") }
	// Each acquire in a process of its own (a new Store): its scope check
	// reads the index, from the file.
	acquire := func(i int) gitstore.Hash {
		t.Helper()
		head, _ := repo.Head(context.Background())
		v := int64(0)
		f.Do(f.Open(), lease.AcquireRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Owner: "agent-a",
			IdempotencyKey: fmt.Sprintf("k%d", i), ExpectedVersion: &v, TTLSeconds: 600, WriteScopes: []string{fmt.Sprintf("w/%d/**", i)}})
		return head // the revision its decision read
	}
	first := acquire(0) // no file yet: built from the records, saved
	if saved() != first {
		t.Fatalf("after the rebuild the file is at %s, want %s", saved(), first)
	}
	acquire(1) // 1 lease changed since the file
	acquire(2) // 2
	if saved() != first {
		t.Fatal("the file was rewritten after fewer than LeaseIndexSaveAfter changes")
	}
	third := acquire(3) // 3: saved at the revision it read
	if saved() != third {
		t.Fatalf("after 3 changes the file is at %s, want %s", saved(), third)
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
	if got == nil || !reflect.DeepEqual(got.List(), want.List()) || len(want.List()) != 4 {
		t.Fatalf("index %+v, want %+v", got, want)
	}
}
