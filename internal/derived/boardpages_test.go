package derived_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// pageRepo is an in-memory repository that counts the board pages read and
// written, and whose side files can be removed and listed (as a
// repository's can).
type pageRepo struct {
	*gitstore.MemRepo
	reads, writes int
	names         map[string]bool // side files written and not removed
}

func (r *pageRepo) ReadSideFile(name string) ([]byte, error) {
	if strings.Contains(name, ".pages/") {
		r.reads++
	}
	return r.MemRepo.ReadSideFile(name)
}

func (r *pageRepo) WriteSideFile(name string, data []byte, durable bool) error {
	if strings.Contains(name, ".pages/") {
		r.writes++
	}
	r.names[name] = true
	return r.MemRepo.WriteSideFile(name, data, durable)
}

func (r *pageRepo) RemoveSideFile(name string) error {
	delete(r.names, name)
	return r.MemRepo.WriteSideFile(name, nil, false)
}

func (r *pageRepo) SideFiles(dir string, olderThan time.Duration) ([]string, error) {
	var out []string
	for n := range r.names {
		if rest, ok := strings.CutPrefix(n, dir+"/"); ok {
			out = append(out, rest)
		}
	}
	return out, nil
}

// pages lists the board pages present.
func (r *pageRepo) pages() []string {
	var out []string
	for n := range r.names {
		if strings.Contains(n, ".pages/") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// bigGoal is a store with goal g of n open todos (of every priority),
// written in one commit, and its board delivered.
func bigGoal(t *testing.T, n int) (*pageRepo, *loopx.Store, *time.Time) {
	repo := &pageRepo{MemRepo: gitstore.NewMemRepo(gitstore.DefaultRetry), names: map[string]bool{}}
	clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	opts := loopx.Options{Now: func() time.Time { return clock }}
	s := loopx.OpenRepo(repo, opts)
	for _, req := range []any{lease.InitRequest{FormatVersion: lease.FormatVersion}, lease.GoalCreateRequest{Goal: "g"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-a"}} {
		clock = clock.Add(time.Second)
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		p := &gitstore.Proposal{Info: gitstore.CommitInfo{Message: "bulk\n", AuthorName: "t", AuthorEmail: "t@x", When: clock}}
		for i := range n {
			id := fmt.Sprintf("todo_b%05d", i)
			td := &lease.Todo{ID: id, Text: "bulk " + id, Status: lease.TodoOpen, Priority: lease.Priorities[i%len(lease.Priorities)],
				CreatedBy: "agent-a", CreatedAt: clock, UpdatedBy: "agent-a", UpdatedAt: clock}
			p.Changes = append(p.Changes, gitstore.Change{Path: lease.TodoPath("g", id), Data: lease.Encode(td)})
		}
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ProjectMarkdown("g"); err != nil {
		t.Fatal(err)
	}
	return repo, s, &clock
}

// TestBoardStepReadsWhatChanged: a mutation on a goal of thousands of
// todos reads and writes a few of the board model's pages, not all of
// them, and its board is still the full render's.
func TestBoardStepReadsWhatChanged(t *testing.T) {
	repo, _, clock := bigGoal(t, 3000)
	total := len(repo.pages())
	if total < 40 {
		t.Fatalf("only %d pages", total)
	}
	for i, req := range []any{
		lease.AddRequest{Goal: "g", Todo: "todo_a0000", Text: "new", Priority: "P0", Actor: "agent-a"},
		lease.ClaimRequest{Goal: "g", Todo: "todo_b00042", Actor: "agent-a"},
		lease.AcquireRequest{Goal: "g", Todo: "todo_b02999", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 600},
	} {
		*clock = clock.Add(time.Second)
		repo.reads, repo.writes = 0, 0
		s := loopx.OpenRepo(repo, loopx.Options{Now: func() time.Time { return *clock }}) // a new process
		res, err := s.Apply(lease.CallOf(req))
		if err != nil {
			t.Fatal(err)
		}
		if res.Projection != loopx.ProjectionDelivered {
			t.Fatalf("%T: board %s", req, res.Projection)
		}
		// The changed todo's page (and, in its band's search, at most one
		// per priority), the lease page, the pages holding what the board
		// shows first: a handful of the pages.
		t.Logf("step %d (%T): read %d and wrote %d of %d pages", i, req, repo.reads, repo.writes, total)
		if repo.reads > 8 || repo.writes > 3 {
			t.Errorf("step %d (%T): read %d and wrote %d of %d pages", i, req, repo.reads, repo.writes, total)
		}
		checkBoard(t, repo, "g")
	}
}

// checkBoard: the head's board is the full render of its records.
func checkBoard(t *testing.T, repo gitstore.Repo, goal string) {
	t.Helper()
	head, err := repo.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sn, err := repo.Snapshot(head)
	if err != nil {
		t.Fatal(err)
	}
	v := derived.New(repo, derived.Config{}).RecordView(sn)
	want, _, err := derived.RenderFull(v, goal, sn.Time(), markdown.RendererTimed)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := v.ReadFile(lease.BoardPath(goal))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the board is not the full render of the head (%v):\n%s", err, got)
	}
}

// TestBoardPagesRetired: a page the new root no longer names is kept
// through one more save (a process that loaded the previous root still
// reads it), then removed; a sweep removes pages no root names.
func TestBoardPagesRetired(t *testing.T) {
	repo, s, clock := bigGoal(t, 500)
	do := func(req any) {
		t.Helper()
		*clock = clock.Add(time.Second)
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			t.Fatal(err)
		}
	}
	before := repo.pages()
	do(lease.ClaimRequest{Goal: "g", Todo: "todo_b00007", Actor: "agent-a"})
	after1 := repo.pages()
	var replaced []string
	for _, p := range before {
		if !slices.Contains(after1, p) {
			t.Fatalf("page %s removed by the save that replaced it", p)
		}
	}
	added := 0
	for _, p := range after1 {
		if !slices.Contains(before, p) {
			added++
		}
	}
	if added == 0 {
		t.Fatal("the claim wrote no page")
	}
	do(lease.ClaimRequest{Goal: "g", Todo: "todo_b00300", Actor: "agent-a"})
	after2 := repo.pages()
	for _, p := range before {
		if !slices.Contains(after2, p) {
			replaced = append(replaced, p)
		}
	}
	if len(replaced) == 0 {
		t.Fatalf("no page retired by the first claim was removed by the second save (%d pages before, %d after)", len(before), len(after2))
	}
	if len(after2) > len(before)+4 {
		t.Fatalf("pages grow: %d, then %d", len(before), len(after2))
	}
	checkBoard(t, repo, "g")

	// A page nobody names (a save that raced) is swept.
	stray := "loopx-cache/board-" + fmt.Sprintf("%x", "g") + ".pages/" + strings.Repeat("ab", 16)
	repo.WriteSideFile(stray, []byte("stray"), false)
	for i := 0; i < 400 && repo.names[stray]; i++ {
		do(lease.ClaimRequest{Goal: "g", Todo: fmt.Sprintf("todo_b%05d", 10+i), Actor: "agent-a"})
	}
	if repo.names[stray] {
		t.Fatal("a page no root names was never swept")
	}
	checkBoard(t, repo, "g")
}
