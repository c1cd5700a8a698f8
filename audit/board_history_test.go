package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// TestHistoryChecksBoardsAtTheirTime: verify --history re-renders a board
// commit at its own author time, with the renderer that drew it: a board
// drawn by a loopx from before boards had a render time (which shows an
// expired claim and no TTL) verifies, and so does one of this loopx after
// it; a board drawn at another time than its commit's fails when that
// changes its bytes.
func TestHistoryChecksBoardsAtTheirTime(t *testing.T) {
	clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	repo := gitstore.NewMemRepo(gitstore.DefaultRetry)
	s := loopx.OpenRepo(repo, loopx.Options{Now: func() time.Time { return clock }})
	a := New(s)
	for _, req := range []any{
		lease.InitRequest{FormatVersion: lease.FormatVersion},
		lease.GoalCreateRequest{Goal: "g"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-a"},
		lease.AddRequest{Goal: "g", Todo: "todo_aaa", Text: "claimed for five minutes"},
		lease.AddRequest{Goal: "g", Todo: "todo_bbb", Text: "leased"},
		lease.ClaimRequest{Goal: "g", Todo: "todo_aaa", Actor: "agent-a", ClaimTTLMinutes: 5},
		lease.AcquireRequest{Goal: "g", Todo: "todo_bbb", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 3600},
	} {
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			t.Fatal(err)
		}
	}
	drawnAt := clock
	clock = clock.Add(10 * time.Minute) // the claim has expired
	base, err := repo.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// boardCommit commits on the head the board of renderer r drawn at
	// drawn, dated clock, as loopx would make it.
	boardCommit := func(r int, drawn time.Time) []byte {
		var board []byte
		_, err := repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
			var err error
			if board, _, err = derived.RenderFull(s.Derived().View(sn), "g", drawn, r); err != nil {
				return nil, err
			}
			return &gitstore.Proposal{Changes: []gitstore.Change{{Path: lease.BoardPath("g"), Data: board}},
				Info: records.Commit("", lease.ProjectionMessage("g", sn.Revision().String()), clock)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return board
	}
	verify := func() *HistoryData {
		head, _ := repo.Head(context.Background())
		d, err := a.verifyHistory(head, "", false)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	untimed := boardCommit(markdown.RendererUntimed, clock)
	if !strings.Contains(string(untimed), "claimed by `agent-a`") || strings.Contains(string(untimed), "TTL") {
		t.Fatalf("the untimed board should show the expired claim and no TTL:\n%s", untimed)
	}
	if d := verify(); !d.Valid {
		t.Fatalf("a board of the untimed renderer does not verify: %+v", d.FirstInvalid)
	}
	timed := boardCommit(markdown.RendererTimed, clock)
	if bytes.Equal(timed, untimed) || strings.Contains(string(timed), "claimed by") {
		t.Fatalf("the timed board should differ and drop the expired claim:\n%s", timed)
	}
	if d := verify(); !d.Valid || d.BoardCommits < 2 {
		t.Fatalf("a timed board after an untimed one does not verify: %+v", d.FirstInvalid)
	}

	// Drawn before the claim expired but dated after: neither renderer
	// gives these bytes at the commit's time.
	repo.Reset(base)
	boardCommit(markdown.RendererTimed, drawnAt)
	d := verify()
	if d.Valid || d.FirstInvalid.Reason != lease.ProblemBoardMismatch {
		t.Fatalf("a board drawn at another time verified: %+v", d)
	}
	// Drawn a minute earlier than dated, with no expiry in between: the
	// same bytes, so it verifies.
	repo.Reset(base)
	boardCommit(markdown.RendererTimed, clock.Add(-time.Minute))
	if d := verify(); !d.Valid {
		t.Fatalf("a board with the bytes of its time does not verify: %+v", d.FirstInvalid)
	}
}
