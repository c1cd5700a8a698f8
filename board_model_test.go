package loopx_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// TestBoardModelMatchesFullRender drives a store with random mutations
// through the API, interleaved with what can put the saved board model
// out of step: foreign commits of arbitrary records (another process, the
// model lags), a deleted or damaged model file, and the ref moved back to
// an older commit (the model is ahead). The clock moves on across claim and
// lease expiries, so the board's render time matters. After every applied
// mutation that can change the board, the committed board must be exactly
// a full render of the head's records at the head's time (the decision
// time it was rendered at), and verify must report no pending board.
func TestBoardModelMatchesFullRender(t *testing.T) {
	t.Parallel()
	dir := newStore(t, "g", "agent-a", "agent-b")
	clock := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	s, err := lx.Open(lx.Options{Dir: dir, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	common := strings.TrimSpace(git(t, dir, "rev-parse", "--git-common-dir"))
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	model := filepath.Join(common, "loopx-cache", "board-"+fmt.Sprintf("%x", "g"))

	rng := rand.New(rand.NewPCG(4, 2))
	var ids []string
	pick := func() string {
		if len(ids) == 0 || rng.IntN(10) == 0 {
			return fmt.Sprintf("todo_r%03d", rng.IntN(60))
		}
		return ids[rng.IntN(len(ids))]
	}
	agents := []string{"agent-a", "agent-b"}
	var history []string // state revisions seen, for rewinds
	type held struct {
		owner, key string
		version    int64
		ttl        int64
	}
	leases := map[string]held{} // executions acquired here, for renewals
	checked, expiredShown := 0, 0
	for step := range 300 {
		clock = clock.Add(time.Duration(1+rng.IntN(20)) * time.Minute)
		var (
			res lx.Reply
			err error
			op  string
		)
		switch k := rng.IntN(100); {
		case k < 30:
			op = "add"
			id := fmt.Sprintf("todo_r%03d", rng.IntN(60))
			req := lease.AddRequest{Goal: "g", Todo: id, Text: "work " + id, Priority: lease.Priorities[rng.IntN(5)], Actor: "agent-a"}
			if len(ids) > 0 && rng.IntN(3) == 0 {
				req.DependsOn = []string{pick()}
			}
			if res, err = s.AddTodo(req); err == nil {
				ids = append(ids, id)
			}
		case k < 40:
			op = "claim"
			res, err = s.Claim(lease.ClaimRequest{Goal: "g", Todo: pick(), Actor: agents[rng.IntN(2)], ClaimTTLMinutes: int64(rng.IntN(3)) * 15})
		case k < 48:
			op = "update"
			req := lease.UpdateRequest{Goal: "g", Todo: pick(), Actor: agents[rng.IntN(2)]}
			switch rng.IntN(3) {
			case 0:
				req.Priority = lease.Priorities[rng.IntN(5)]
			case 1:
				req.Note = "progress"
			default:
				req.ClearClaim = true
			}
			res, err = s.Update(req)
		case k < 56:
			op = "complete"
			res, err = s.Complete(lease.CompleteRequest{Goal: "g", Todo: pick(), Actor: agents[rng.IntN(2)], Evidence: []string{"done"}})
		case k < 60:
			op = "supersede"
			res, err = s.Supersede(lease.SupersedeRequest{Goal: "g", Todo: pick(), Actor: agents[rng.IntN(2)], Reason: "replaced"})
		case k < 65:
			op = "acquire"
			owner := agents[rng.IntN(2)]
			id, ttl := pick(), []int64{600, 3600}[rng.IntN(2)]
			key := fmt.Sprintf("%s-%d", owner, step)
			var r *lx.Result[lease.LeaseResult]
			if r, err = s.Acquire(lease.AcquireRequest{Goal: "g", Todo: id, Owner: owner, IdempotencyKey: key, TTLSeconds: ttl}); err == nil {
				res = r
				leases[id] = held{owner, key, r.Data.Lease.Version, ttl}
			}
		case k < 70:
			op = "renew"
			for id, h := range leases {
				ttl := []int64{h.ttl, h.ttl, 1200}[rng.IntN(3)]
				v := h.version
				var r *lx.Result[lease.LeaseResult]
				if r, err = s.Renew(lease.RenewRequest{Goal: "g", Todo: id, Owner: h.owner, IdempotencyKey: h.key, ExpectedVersion: &v, TTLSeconds: ttl}); err == nil {
					res = r
					if ttl == h.ttl {
						op = "renew, same TTL"
					}
					leases[id] = held{h.owner, h.key, r.Data.Lease.Version, ttl}
				} else {
					delete(leases, id)
				}
				break
			}
		case k < 85:
			op = "foreign commit"
			foreignCommit(t, dir, rng, clock)
		case k < 90:
			op = "delete model"
			os.Remove(model)
		case k < 92:
			op = "damage model"
			if b, err := os.ReadFile(model); err == nil && len(b) > 60 {
				b[41+rng.IntN(len(b)-41)] ^= 0x20
				os.WriteFile(model, b, 0o644)
			}
		case k < 94:
			// The model's root stands, one of its pages is gone or damaged.
			op = "damage a page"
			if pages, _ := filepath.Glob(model + ".pages/*"); len(pages) > 0 {
				p := pages[rng.IntN(len(pages))]
				if b, err := os.ReadFile(p); err == nil && rng.IntN(2) == 0 {
					b[rng.IntN(len(b))] ^= 0x20
					os.WriteFile(p, b, 0o644)
				} else {
					os.Remove(p)
				}
			}
		default:
			op = "rewind"
			if len(history) > 0 {
				git(t, dir, "update-ref", "refs/loopx/state", history[rng.IntN(len(history))])
			}
		}
		if head := strings.TrimSpace(git(t, dir, "rev-parse", "refs/loopx/state")); head != "" {
			history = append(history, head)
		}
		if err != nil || res == nil || res.Env().Status != lease.StatusApplied {
			continue
		}
		if env := res.Env(); env.Projection == lx.ProjectionPending {
			t.Fatalf("step %d (%s): board pending: %s", step, op, env.ProjectionError)
		}
		v, err := s.Verify()
		if err != nil {
			t.Fatalf("step %d (%s): verify: %v", step, op, err)
		}
		if d := v.Data; len(d.PendingBoards) > 0 {
			t.Fatalf("step %d (%s): the delivered board differs from a full render of the head", step, op)
		}
		// A renewal for the same TTL cannot change the board and delivers
		// none: the board may show a claim that expired since it was drawn.
		if op != "renew, same TTL" {
			committed, full, expired := headBoards(t, dir)
			if committed != full {
				t.Fatalf("step %d (%s): the committed board is not the full render at the head's time:\n%s\n---\n%s", step, op, committed, full)
			}
			expiredShown += expired
		}
		checkUnblocks(t, s, pick())
		checked++
	}
	if checked < 60 {
		t.Fatalf("only %d mutations were checked", checked)
	}
	t.Logf("checked %d, expired claims on boards %d", checked, expiredShown)
	// Time must have crossed claim expiries on boards that were checked.
	if expiredShown < 10 {
		t.Fatalf("only %d expired claims were on checked boards", expiredShown)
	}
}

// headBoards returns the board committed on the head of dir's store and a
// full render of the head's records at the head's time, and counts the
// recorded claims that had expired by then.
func headBoards(t *testing.T, dir string) (committed, full string, expired int) {
	t.Helper()
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: "refs/loopx/state"})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	head, err := gs.Head()
	if err != nil {
		t.Fatal(err)
	}
	sn, err := gs.Snapshot(head)
	if err != nil {
		t.Fatal(err)
	}
	var g lease.Goal
	data, ok, err := sn.Read(lease.GoalPath("g"))
	if err != nil || !ok || lease.DecodeAt(lease.GoalPath("g"), data, &g) != nil {
		t.Fatalf("goal record: %v", err)
	}
	b := markdown.Board{Goal: &g, Now: sn.Time()}
	if err := sn.Walk(lease.TodosDir("g"), func(p string, data []byte) error {
		var td lease.Todo
		if err := lease.DecodeAt(p, data, &td); err != nil {
			return err
		}
		if td.ClaimedBy != "" && !lease.ClaimEffective(&td, b.Now) {
			expired++
		}
		b.Todos = append(b.Todos, &td)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := sn.Walk(lease.LeasesDir("g"), func(p string, data []byte) error {
		var l lease.Lease
		if err := lease.DecodeAt(p, data, &l); err != nil {
			return err
		}
		b.Leases = append(b.Leases, &l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	board, _, err := sn.Read(lease.BoardPath("g"))
	if err != nil {
		t.Fatal(err)
	}
	return string(board), string(markdown.Render(b)), expired
}

// checkUnblocks: todo show's unblocks (answered from the board model) are
// the todos whose depends_on names the todo, as the full list shows them.
func checkUnblocks(t *testing.T, s *lx.Store, id string) {
	t.Helper()
	show, err := s.ShowTodo("g", id)
	if err != nil {
		return // not there (deleted by a foreign commit)
	}
	got := show.Data.Todo.Unblocks
	list, err := s.ListTodos(lx.TodoFilter{Goal: "g"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for _, tv := range list.Data.Todos {
		if slices.Contains(tv.DependsOn, id) {
			want = append(want, tv.ID)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("unblocks of %s: %v, want %v", id, got, want)
	}
}

// foreignCommit writes a few arbitrary (valid) todo and lease records of
// goal g straight to the ref, as another process would, without a board.
func foreignCommit(t *testing.T, dir string, rng *rand.Rand, now time.Time) {
	t.Helper()
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: "refs/loopx/state"})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	_, err = gs.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		p := &gitstore.Proposal{Info: gitstore.CommitInfo{Message: "foreign\n", When: now}}
		// Records stay consistent with each other as loopx keeps them: a
		// todo records its lease's epoch (the fencing token's high-water
		// mark), and a deleted todo takes its lease along.
		epochOf := func(id string) int64 {
			data, ok, _ := sn.Read(lease.LeasePath("g", id))
			var l lease.Lease
			if !ok || lease.DecodeAt(lease.LeasePath("g", id), data, &l) != nil {
				return 0
			}
			return l.Epoch
		}
		todoOf := func(id string) *lease.Todo {
			data, ok, _ := sn.Read(lease.TodoPath("g", id))
			var td lease.Todo
			if !ok || lease.DecodeAt(lease.TodoPath("g", id), data, &td) != nil {
				return nil
			}
			return &td
		}
		touched := map[string]bool{}
		for range 1 + rng.IntN(4) {
			id := fmt.Sprintf("todo_r%03d", rng.IntN(60))
			if touched[id] {
				continue
			}
			touched[id] = true
			switch rng.IntN(4) {
			case 0:
				p.Changes = append(p.Changes, gitstore.Change{Path: lease.TodoPath("g", id), Delete: true},
					gitstore.Change{Path: lease.LeasePath("g", id), Delete: true})
			case 1:
				td := todoOf(id)
				if td == nil {
					continue
				}
				l := &lease.Lease{TodoID: id, Owner: "agent-b", IdempotencyKey: "f", Version: 1, Epoch: 1,
					Status: []string{lease.LeaseActive, lease.LeaseReleased}[rng.IntN(2)], AcquiredAt: now, ExpiresAt: now.Add(time.Hour),
					OwnerRegistration: 1, Holders: []lease.Holder{{Epoch: 1, Owner: "agent-b", IdempotencyKey: "f", StartedAt: now}}}
				if l.Status == lease.LeaseReleased {
					l.ReleasedAt = &now
				}
				td.LeaseEpoch = 1
				p.Changes = append(p.Changes, gitstore.Change{Path: lease.LeasePath("g", id), Data: lease.Encode(l)},
					gitstore.Change{Path: lease.TodoPath("g", id), Data: lease.Encode(td)})
			default:
				td := &lease.Todo{ID: id, Text: "foreign " + id, Status: lease.TodoOpen, Priority: lease.Priorities[rng.IntN(5)],
					CreatedAt: now, UpdatedAt: now, LeaseEpoch: epochOf(id)}
				if rng.IntN(3) == 0 {
					td.Status, td.ClosedBy, td.ClosedAt = lease.TodoDone, "agent-a", &now
				}
				p.Changes = append(p.Changes, gitstore.Change{Path: lease.TodoPath("g", id), Data: lease.Encode(td)})
			}
		}
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
