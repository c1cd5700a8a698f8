package loopx

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// benchDir is a scratch repository for benchmarks, on tmpfs when the
// machine has one (the benchmarks measure loopx, not the disk's fsync).
func benchDir(b *testing.B) string {
	b.Helper()
	parent := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		parent = "/dev/shm"
	}
	dir, err := os.MkdirTemp(parent, "loopx-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	return dir
}

// benchStore opens a store with one goal, two agents and one todo whose
// lease agent-a holds, at a clock the caller moves.
func benchStore(b *testing.B, dir string, clock *time.Time) *Store {
	b.Helper()
	opts := Options{Dir: dir, Now: func() time.Time { return *clock }}
	if _, err := Init(opts, InitOptions{}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, req := range []any{
		lease.GoalCreateRequest{Goal: "g"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-a"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-b"},
		lease.AddRequest{Goal: "g", Todo: "todo_bench", Text: "bench", RequiredWriteScopes: []string{"src/**"}},
		lease.AcquireRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 3600},
	} {
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkRecordRequest measures what recording the canonical request adds
// to a mutation (target: under 5%): todo adds (state and board commits)
// and renews (one commit), with and without the Loopx-Request trailer,
// side by side.
func BenchmarkRecordRequest(b *testing.B) {
	for _, op := range []string{"todo-add", "renew"} {
		for _, recorded := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/recorded=%v", op, recorded), func(b *testing.B) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				s := benchStore(b, benchDir(b), &clock)
				s.unrecorded = !recorded
				version := int64(1)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					clock = clock.Add(time.Second)
					var req any = lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_add_%07d", i), Text: "added"}
					if op == "renew" {
						v := version
						req = lease.RenewRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &v, TTLSeconds: 3600}
					}
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
					version++
				}
			})
		}
	}
}

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
			s := benchStore(b, benchDir(b), &clock)
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
			head, _ := s.git.Head()
			b.ResetTimer()
			var d *HistoryData
			for i := 0; i < b.N; i++ {
				var err error
				if d, err = s.verifyHistory(head, "", false); err != nil || !d.Valid {
					b.Fatalf("verify: %+v %v", d, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(d.Commits), "ms/commit")
			b.ReportMetric(float64(d.Commits), "commits")
		})
	}
}
