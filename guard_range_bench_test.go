package loopx_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/gitstore"
)

// BenchmarkGuardRange measures `guard check --range` (in process: Open,
// GuardRange, Close) on a store of 10,000 todos with 1,000 effective leases
// and a state history of 500 commits (one a minute after the seed), for a
// range of 50 work commits made ten minutes apart, each changing 3 paths
// (one inside seed-agent's own lease), checked as seed-agent: every commit
// is judged against a different state, found by one walk of the history.
func BenchmarkGuardRange(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := newStore(b, "g", "seed-agent")
	seedTodos(b, dir, 10000, 1000)
	gs, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	head, err := gs.Head()
	if err != nil {
		b.Fatal(err)
	}
	unlock, err := gs.Lock(b.Context(), true)
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= 500; i++ {
		head, err = gs.Commit(head, []gitstore.Change{{Path: "bench/tick", Data: []byte(fmt.Sprint(i))}},
			gitstore.CommitInfo{Message: "tick\n\nLoopx-Operation: bench\n", When: t0.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
	}
	unlock()
	gs.Close()
	git(b, dir, "config", "gc.auto", "0")
	git(b, dir, "commit", "-q", "--allow-empty", "-m", "base")
	git(b, dir, "tag", "base")
	for i := 0; i < 50; i++ {
		for _, p := range []string{"src/a.go", "docs/x.md", fmt.Sprintf("seed/%d/x.go", i)} {
			writeBench(b, filepath.Join(dir, p), fmt.Sprintf("commit %d\n", i))
		}
		git(b, dir, "add", "-A", "src", "docs", "seed")
		cmd := exec.Command("git", "commit", "-q", "-m", fmt.Sprintf("work %d", i))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE="+t0.Add(time.Duration(10*i+5)*time.Minute).Format(time.RFC3339))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git commit: %v\n%s", err, out)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := lx.Open(lx.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		res, err := audit.New(s).GuardRange(audit.GuardRangeRequest{Agent: "seed-agent", Range: "base..HEAD"})
		s.Close()
		if err != nil {
			b.Fatal(err)
		}
		d := res.Data
		if !d.Allowed || len(d.Commits) != 50 || d.Commits[0].StateRevision == d.Commits[49].StateRevision {
			b.Fatalf("unexpected result: allowed %v, %d commits", d.Allowed, len(d.Commits))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/50, "µs/commit")
}
