package loopx_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
)

// BenchmarkGuardRange measures `guard check --range` (in process: Open,
// GuardRange, Close) — the code fence the pre-push hook, CI and the server
// hook share — on a store of 10,000 todos with 1,000 effective leases, for
// a range of 50 work commits, each changing 3 paths (one inside
// seed-agent's own lease, named by its Loopx-Agent trailer): the cost per
// judged commit (contract section 9; the target is under 20 ms per
// pushed commit at this size). The clock is an hour after the seed time, so
// the leases are in force (at today's date they would all have expired, and
// no path would be checked against them).
func BenchmarkGuardRange(b *testing.B) {
	dir := newStore(b, "g", "seed-agent")
	seedTodos(b, dir, 10000, 1000)
	git(b, dir, "config", "gc.auto", "0")
	git(b, dir, "commit", "-q", "--allow-empty", "-m", "base")
	git(b, dir, "tag", "base")
	for i := 0; i < 50; i++ {
		for _, p := range []string{"src/a.go", "docs/x.md", fmt.Sprintf("seed/%d/x.go", i)} {
			writeBench(b, filepath.Join(dir, p), fmt.Sprintf("commit %d\n", i))
		}
		git(b, dir, "add", "-A", "src", "docs", "seed")
		cmd := exec.Command("git", "commit", "-q", "-m", fmt.Sprintf("work %d\n\nLoopx-Agent: seed-agent", i))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git commit: %v\n%s", err, out)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := lx.Open(lx.Options{Dir: dir, Now: func() time.Time { return fenceBenchNow }})
		if err != nil {
			b.Fatal(err)
		}
		res, err := audit.New(s).GuardRange(audit.GuardRangeRequest{Range: "base..HEAD"})
		s.Close()
		if err != nil {
			b.Fatal(err)
		}
		d := res.Data
		if !d.Allowed || len(d.Commits) != 50 {
			b.Fatalf("unexpected result: allowed %v, %d commits", d.Allowed, len(d.Commits))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/50, "µs/commit")
}
