package derived_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/lease"
)

// listingFile is goal g's listing.
const listingFile = "loopx-cache/list-67"

// TestListingMatchesScan: along random histories of todo and lease
// operations (adds of every priority, claims that expire, notes, priority
// changes, closes, leases acquired, transferred and released, and hand
// edits: a record that does not decode, a lease at another epoch, a record
// at the wrong path, a deleted record), with the listing kept in memory,
// saved, loaded by another process, damaged or truncated, todo list (every
// status and agent filter) and todo ready answer exactly as the scan of
// every record does, errors included.
func TestListingMatchesScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		repo := gitstore.NewMemRepo(gitstore.DefaultRetry)
		opts := loopx.Options{Now: func() time.Time { return clock }}
		s := loopx.OpenRepo(repo, opts)
		c := derived.New(repo, derived.Config{LeaseIndexSaveAfter: rapid.IntRange(1, 4).Draw(rt, "saveAfter")})
		must := func(_ any, err error) {
			if err != nil {
				rt.Fatal(err)
			}
		}
		must(s.Apply(lease.CallOf(lease.InitRequest{FormatVersion: lease.FormatVersion})))
		must(s.CreateGoal(lease.GoalCreateRequest{Goal: "g"}))
		agents := []string{"agent-a", "agent-b"}
		for _, a := range agents {
			must(s.RegisterAgent(lease.RegisterRequest{Goal: "g", Agent: a}))
		}
		todos := []string{"todo_aaa", "todo_bbb", "todo_ccc", "todo_ddd", "todo_eee", "todo_fff"}
		hand := func(path string, data []byte) {
			_, err := repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
				return &gitstore.Proposal{Changes: []gitstore.Change{{Path: path, Data: data, Delete: data == nil}},
					Info: gitstore.CommitInfo{Message: "hand edit", When: clock}}, nil
			})
			if err != nil {
				rt.Fatal(err)
			}
		}
		n := 0
		// Hand edits break the goal for the rest of the story (every list
		// is then refused alike): in a third of the stories only.
		ops := 10
		if rapid.IntRange(0, 2).Draw(rt, "handEdits") == 0 {
			ops = 15
		}
		steps := rapid.IntRange(5, 40).Draw(rt, "steps")
		for range steps {
			clock = clock.Add(time.Duration(rapid.IntRange(0, 300).Draw(rt, "dt")) * time.Second)
			todo := rapid.SampledFrom(todos).Draw(rt, "todo")
			agent := rapid.SampledFrom(agents).Draw(rt, "agent")
			var owner, key string
			var v int64
			if res, err := s.Inspect("g", todo); err == nil && res.Data.Lease != nil {
				owner, key, v = res.Data.Lease.Owner, res.Data.Lease.IdempotencyKey, res.Data.Lease.Version
			}
			n++
			var req any
			switch rapid.IntRange(0, ops-1).Draw(rt, "op") {
			case 0, 1, 2:
				req = lease.AddRequest{Goal: "g", Todo: todo, Text: fmt.Sprintf("work %d", n), Actor: agent,
					Priority: rapid.SampledFrom(lease.Priorities).Draw(rt, "priority")}
			case 3:
				req = lease.ClaimRequest{Goal: "g", Todo: todo, Actor: agent, ClaimTTLMinutes: int64(rapid.IntRange(0, 20).Draw(rt, "claimTTL"))}
			case 4:
				req = lease.UpdateRequest{Goal: "g", Todo: todo, Actor: agent, Note: fmt.Sprintf("note %d", n)}
			case 5:
				p := rapid.SampledFrom(lease.Priorities).Draw(rt, "newPriority")
				req = lease.UpdateRequest{Goal: "g", Todo: todo, Actor: agent, Priority: p}
			case 6:
				req = lease.AcquireRequest{Goal: "g", Todo: todo, Owner: agent, IdempotencyKey: fmt.Sprintf("k%d", n), TTLSeconds: 1800}
			case 7:
				req = lease.TransferRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: &v,
					NewOwner: agent, NewIdempotencyKey: fmt.Sprintf("k%d", n), TTLSeconds: 300}
			case 8:
				req = lease.ReleaseRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: &v}
			case 9:
				req = lease.CompleteRequest{Goal: "g", Todo: todo, Actor: agent, Evidence: []string{"done"}}
			case 10:
				hand(lease.TodoPath("g", todo), []byte("id: [\n")) // does not decode
			case 11:
				if res, err := s.Inspect("g", todo); err == nil && res.Data.Lease != nil {
					l := &lease.Lease{TodoID: todo, Owner: owner, IdempotencyKey: key, Version: v + 1, Epoch: res.Data.Lease.Epoch + 7,
						Status: lease.LeaseReleased, AcquiredAt: clock, ExpiresAt: clock, ReleasedAt: &clock}
					hand(lease.LeasePath("g", todo), lease.Encode(l)) // at another epoch than its todo's
				}
			case 12:
				hand("goals/g/todos/00/"+todo+".yaml", []byte("id: "+todo+"\n")) // at the wrong path
			case 13:
				hand(lease.TodoPath("g", todo), nil) // deleted by hand
			default:
				hand(lease.LeasePath("g", todo), nil)
			}
			if req != nil {
				_, _ = s.Apply(lease.CallOf(req)) // refusals are part of the story
			}
			switch rapid.IntRange(0, 5).Draw(rt, "cache") {
			case 0: // a new process, with the saved listing
				s = loopx.OpenRepo(repo, opts)
				c = derived.New(repo, derived.Config{})
			case 1: // a damaged side file
				data, _ := repo.ReadSideFile(listingFile)
				if len(data) > 0 {
					data[rapid.IntRange(0, len(data)-1).Draw(rt, "at")] ^= 0x20
					repo.WriteSideFile(listingFile, data, false)
				}
				c = derived.New(repo, derived.Config{})
			case 2: // a truncated one
				data, _ := repo.ReadSideFile(listingFile)
				repo.WriteSideFile(listingFile, data[:len(data)/2], false)
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
			now := lease.Now(clock, sn.Time())
			for _, status := range []string{"", lease.TodoOpen, lease.TodoDone} {
				for _, who := range []string{"", "agent-a"} {
					if a, b := listJSON(c.View(sn), status, who, now), listJSON(c.RecordView(sn), status, who, now); a != b {
						rt.Fatalf("list %q %q with the listing: %s\nscan: %s", status, who, a, b)
					}
				}
			}
			for _, pg := range [][2]int{{0, 0}, {0, 3}, {2, 0}, {5, 5}} {
				if a, b := pageJSON(c.View(sn), pg, now), pageJSON(c.RecordView(sn), pg, now); a != b {
					rt.Fatalf("page %v with the listing: %s\nscan: %s", pg, a, b)
				}
			}
			for _, who := range []string{"", "agent-a", "agent-b"} {
				if a, b := readyJSON(c.View(sn), who, now), readyJSON(c.RecordView(sn), who, now); a != b {
					rt.Fatalf("ready %q with the listing: %s\nscan: %s", who, a, b)
				}
			}
		}
	})
}

func listJSON(v *lease.View, status, agent string, now time.Time) string {
	todos, err := lease.ListTodos(v, "g", status, agent, now)
	if err != nil {
		return decideJSON(nil, err)
	}
	return decideJSON(lease.ViewTodos(v, "g", todos, now))
}

// pageJSON is a page (offset, limit) of the goal's list, with the count
// of every todo.
func pageJSON(v *lease.View, pg [2]int, now time.Time) string {
	views, total, err := lease.ListTodoViews(v, "g", "", "", now, pg[0], pg[1])
	return decideJSON([]any{views, total}, err)
}

func readyJSON(v *lease.View, agent string, now time.Time) string {
	todos, why, more, err := lease.ReadyExplained(v, "g", agent, now)
	if err != nil {
		return decideJSON(nil, err)
	}
	views, err := lease.ViewTodos(v, "g", todos, now)
	return decideJSON([]any{views, why, more}, err)
}

// TestListingUsed: a list of a goal whose listing is saved reads no record
// at all when nothing changed, and only the changed ones after a mutation.
func TestListingUsed(t *testing.T) {
	repo, s, clock := bigGoal(t, 2000)
	list := func() {
		t.Helper()
		if _, err := s.ListTodos(loopx.TodoFilter{Goal: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	list() // builds and saves it
	data, _ := repo.ReadSideFile(listingFile)
	if len(data) == 0 {
		t.Fatal("no listing saved")
	}
	head, _ := repo.Head(context.Background())
	sn, _ := repo.Snapshot(head)
	c := derived.New(repo, derived.Config{})
	if lst := c.Listing(sn, "g"); lst == nil || lst.Len() != 2000 {
		t.Fatal("no listing at the head")
	}
	if c.Records().Len() != 0 {
		t.Fatalf("the listing at the head decoded %d records", c.Records().Len())
	}
	*clock = clock.Add(time.Second)
	if _, err := s.Apply(lease.CallOf(lease.ClaimRequest{Goal: "g", Todo: "todo_b00042", Actor: "agent-a"})); err != nil {
		t.Fatal(err)
	}
	head, _ = repo.Head(context.Background())
	sn, _ = repo.Snapshot(head)
	c = derived.New(repo, derived.Config{})
	lst := c.Listing(sn, "g")
	if lst == nil || c.Records().Len() != 0 {
		t.Fatal("a listing one claim behind was not caught up from the claimed todo alone")
	}
	todos, err := lst.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range todos {
		if td.ID == "todo_b00042" && td.ClaimedBy != "agent-a" {
			t.Fatalf("the listing shows %+v", td)
		}
	}
}
