package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// BenchmarkVerifyHistory measures verify --history per commit on histories
// of renews with a todo added (a board commit) every 50 operations:
// sizes from LOOPX_BENCH_HISTORY (default "1000,10000"; the closing note
// gives 10,000 and 100,000). Flat means the same ms per commit at each size.
func BenchmarkVerifyHistory(b *testing.B) {
	sizes := []int{1000, 10000}
	if env := os.Getenv("LOOPX_BENCH_HISTORY"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("commits=%d", n), func(b *testing.B) {
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := fixture.BenchStore(b, fixture.BenchDir(b), &clock)
			version := int64(1)
			for i := 0; i < n; i++ {
				clock = clock.Add(time.Second)
				var req any
				if i%50 == 49 {
					req = lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_more_%07d", i), Text: "more"}
				} else {
					v := version
					req = lease.RenewRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &v, TTLSeconds: 3600}
					version++
				}
				if _, err := s.Apply(lease.CallOf(req)); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.GC(); err != nil {
				b.Fatal(err)
			}
			head, _ := s.Git().Head()
			b.ResetTimer()
			var d *HistoryData
			a := New(s)
			for i := 0; i < b.N; i++ {
				var err error
				if d, err = a.verifyHistory(head, "", false); err != nil || !d.Valid {
					b.Fatalf("verify: %+v %v", d, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(d.Commits), "ms/commit")
			b.ReportMetric(float64(d.Commits), "commits")
		})
	}
}

// BenchmarkServerHook measures the server hook's cost per pushed commit
// (target: under 20 ms at 10,000 todos): a client in remote mode pushes
// each mutation to a bare server repository (no hook installed), and the
// check that the hook runs (ServerHookPreReceive on a freshly opened Store,
// as each hook process opens one) is timed on the update the push made.
// todo-add pushes a state and a board commit, renew a state commit; signed
// runs in a store that requires signatures.
func BenchmarkServerHook(b *testing.B) {
	todos := 10000
	if testing.Short() {
		todos = 1000
	}
	for _, signed := range []bool{false, true} {
		for _, op := range []string{"todo-add", "renew"} {
			b.Run(fmt.Sprintf("todos=%d/%s/signed=%v", todos, op, signed), func(b *testing.B) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				client := fixture.BenchDir(b)
				keyPath, pub := fixture.BenchKey(b, b.TempDir())
				opts := loopx.Options{Dir: client, Now: func() time.Time { return clock }, SigningKey: keyPath}
				if _, err := loopx.Init(opts, fixture.SignedInit(signed, "agent-a", pub)); err != nil {
					b.Fatal(err)
				}
				s, err := loopx.Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				for _, req := range []any{
					lease.GoalCreateRequest{Goal: "g"},
					lease.RegisterRequest{Goal: "g", Agent: "agent-a", SigningKey: pub},
				} {
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
				fixture.BulkTodos(b, client, todos, clock)
				server := filepath.Join(fixture.BenchDir(b), "server.git")
				fixture.GitOut(b, client, "init", "-q", "--bare", server)
				fixture.GitOut(b, client, "remote", "add", "origin", server)
				fixture.GitOut(b, client, "push", "-q", "origin", "refs/loopx/state")
				opts.Remote = "origin"
				if s, err = loopx.Open(opts); err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				apply := func(req any) {
					clock = clock.Add(time.Second)
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
				apply(lease.AcquireRequest{Goal: "g", Todo: "todo_bulk_000000", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 86400})
				version := int64(1)
				commits := 0
				hook := func() {
					sopts := loopx.Options{Dir: server, Now: func() time.Time { return clock }}
					old := gitstore.ParseHash(fixture.GitOut(b, server, "rev-parse", "refs/loopx/state"))
					b.StopTimer()
					if op == "renew" {
						v := version
						apply(lease.RenewRequest{Goal: "g", Todo: "todo_bulk_000000", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &v, TTLSeconds: 86400})
						version++
					} else {
						apply(lease.AddRequest{Goal: "g", Actor: "agent-a", Text: fmt.Sprintf("added %d", commits)})
					}
					newHead := gitstore.ParseHash(fixture.GitOut(b, server, "rev-parse", "refs/loopx/state"))
					b.StartTimer()
					srv, err := loopx.Open(sopts)
					if err != nil {
						b.Fatal(err)
					}
					res, err := New(srv).ServerHookPreReceive(ServerHookRequest{Updates: []ReceiveUpdate{{Old: old, New: newHead, Ref: loopx.DefaultRef}}})
					if err != nil {
						b.Fatalf("the hook refused an honest push: %v", err)
					}
					srv.Close()
					commits += res.Data.Checked
				}
				hook() // the server's first board render (its model cache is empty)
				commits = 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					hook()
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(commits), "ms/commit")
			})
		}
	}
}
