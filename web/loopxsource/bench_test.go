package loopxsource_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/web"
	"github.com/loopx-dev/loopx/web/loopxsource"
)

// seedStore makes a store with goal g, agents seed-agent and bench-agent,
// n open todos and, on the first leases of them, an active lease of
// seed-agent (scope seed/<i>/**, 24 h from now), written as one commit, as
// bench/scaleseed does; then the board.
func seedStore(tb testing.TB, n, leases int) string {
	tb.Helper()
	dir := tb.TempDir()
	start := time.Now().UTC().Truncate(time.Second)
	opts := lx.Options{Dir: dir}
	if _, err := lx.Init(opts, lx.InitOptions{}); err != nil {
		tb.Fatal(err)
	}
	s, err := lx.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	for _, req := range []any{lease.GoalCreateRequest{Goal: "g"}, lease.RegisterRequest{Goal: "g", Agent: "seed-agent"}, lease.RegisterRequest{Goal: "g", Agent: "bench-agent"}} {
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			tb.Fatal(err)
		}
	}
	s.Close()
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: lx.DefaultRef})
	if err != nil {
		tb.Fatal(err)
	}
	_, err = gs.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		p := &gitstore.Proposal{Info: gitstore.CommitInfo{Message: "seed\n\nLoopx-Operation: seed\n", AuthorName: "seed", AuthorEmail: "seed@loopx.invalid", When: start}}
		for i := range n {
			id := fmt.Sprintf("todo_seed_%06d", i)
			td := &lease.Todo{ID: id, Text: "seeded " + id, Status: lease.TodoOpen, Priority: "P3", CreatedAt: start, UpdatedAt: start}
			if i < leases {
				td.LeaseEpoch = 1
				td.RequiredWriteScopes = []string{fmt.Sprintf("seed/%d/**", i)}
				l := &lease.Lease{TodoID: id, Owner: "seed-agent", IdempotencyKey: "seed-" + id, Version: 1, Epoch: 1,
					Status: lease.LeaseActive, WriteScopes: td.RequiredWriteScopes, AcquiredAt: start, ExpiresAt: start.Add(24 * time.Hour),
					OwnerRegistration: 1,
					Holders:           []lease.Holder{{Epoch: 1, Owner: "seed-agent", IdempotencyKey: "seed-" + id, StartedAt: start}}}
				p.Changes = append(p.Changes, gitstore.Change{Path: lease.LeasePath("g", id), Data: lease.Encode(l)})
			}
			p.Changes = append(p.Changes, gitstore.Change{Path: lease.TodoPath("g", id), Data: lease.Encode(td)})
		}
		return p, nil
	})
	gs.Close()
	if err != nil {
		tb.Fatal(err)
	}
	if s, err = lx.Open(opts); err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.ProjectMarkdown("g"); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// serveBoard opens the store as `loopx web` does and returns its server.
func serveBoard(tb testing.TB, dir string) (*web.Server, func()) {
	st, err := lx.Open(lx.Options{Dir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: st.Ref()})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := web.New(loopxsource.New(st, gs, ""), web.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return srv, func() { srv.Close(); gs.Close(); st.Close() }
}

func boardOnce(tb testing.TB, srv http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "http://127.0.0.1/goals/g", nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 {
		tb.Fatalf("board: %d %s", rec.Code, rec.Body.String())
	}
	return rec
}

// BenchmarkBoardFirstResponse10k is the board's first response at 10,000
// todos (1,000 of them leased): the store opened as `loopx web` opens it,
// then one GET of the board, the whole response rendered (the budget of a
// first paint is 300 ms). BenchmarkBoardWarm10k is the same request on a
// server that has answered before (a live update's refetch).
func BenchmarkBoardFirstResponse10k(b *testing.B) {
	dir := seedStore(b, 10000, 1000)
	srv, done := serveBoard(b, dir)
	boardOnce(b, srv) // the on-disk record cache, as after any earlier command
	done()
	b.ResetTimer()
	for range b.N {
		srv, done := serveBoard(b, dir)
		rec := boardOnce(b, srv)
		done()
		b.SetBytes(int64(rec.Body.Len()))
	}
}

func BenchmarkBoardWarm10k(b *testing.B) {
	dir := seedStore(b, 10000, 1000)
	srv, done := serveBoard(b, dir)
	defer done()
	boardOnce(b, srv)
	b.ResetTimer()
	for range b.N {
		boardOnce(b, srv)
	}
}

// TestBoardAt10kIsPaged: the board of a 10,000-todo goal shows a page of
// each section, not the whole goal, and says how many there are.
func TestBoardAt10kIsPaged(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 10,000 todos")
	}
	dir := seedStore(t, 10000, 1000)
	srv, done := serveBoard(t, dir)
	defer done()
	body := boardOnce(t, srv).Body.String()
	cards := strings.Count(body, `<li class="card"`)
	if cards != 2*web.PageSize {
		t.Errorf("%d cards on the first page, want %d (held and ready)", cards, 2*web.PageSize)
	}
	for _, want := range []string{`In progress <span class="count">1000</span>`, `Ready <span class="count">9000</span>`, "n_held=200", "n_ready=200"} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q", want)
		}
	}
	if os.Getenv("LOOPX_WEB_BOARD_HTML") != "" {
		_ = os.WriteFile(os.Getenv("LOOPX_WEB_BOARD_HTML"), []byte(body), 0o644)
	}
}
