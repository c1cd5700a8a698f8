package loopx_test

import (
	"fmt"
	"testing"
)

// BenchmarkCLILeaseCycle measures one task-lease cycle through the command
// line: acquire → renew → release, three loopx processes per op, on a fresh
// todo each op (scope work/<i>/**), with 10 and 1,000 other effective leases
// in the goal (held by seed-agent, scopes seed/<i>/**) that every acquire
// scans for scope conflicts. Board projections are included (acquire and
// release change the board; renew does not). ms/op is the wall time of one
// cycle.
func BenchmarkCLILeaseCycle(b *testing.B) {
	for _, nLeases := range []int{10, 1000} {
		b.Run(fmt.Sprintf("leases=%d", nLeases), func(b *testing.B) {
			// The seeded leases run from 2026-01-01 for 24 hours: fix the
			// clock there (before the first commit, since loopx never decides
			// earlier than the head's commit time) so they are effective.
			b.Setenv("LOOPX_NOW", "2026-01-01T00:00:00Z")
			dir := newStore(b, "g", "seed-agent", "bench-agent")
			seedTodos(b, dir, nLeases+b.N, nLeases)
			must(b, dir, "todo", "project-markdown", "--goal-id", "g")
			// The seeded leases block: an overlapping scope is refused.
			if r := loopx(b, dir, nil, "task-lease", "acquire", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_seed_%06d", nLeases),
				"--owner", "bench-agent", "--idempotency-key", "probe", "--ttl-seconds", "600",
				"--write-scope", fmt.Sprintf("seed/%d/x.go", nLeases-1)); r.errCode() != "write_scope_conflict" {
				b.Fatalf("seeded leases are not effective: exit %d %s", r.code, r.raw)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				todo := fmt.Sprintf("todo_seed_%06d", nLeases+i)
				key := fmt.Sprintf("bench-%d", i)
				must(b, dir, "task-lease", "acquire", "--goal-id", "g", "--todo-id", todo, "--owner", "bench-agent",
					"--idempotency-key", key, "--expected-version", "0", "--ttl-seconds", "600",
					"--write-scope", fmt.Sprintf("work/%d/**", i))
				must(b, dir, "task-lease", "renew", "--goal-id", "g", "--todo-id", todo, "--owner", "bench-agent",
					"--idempotency-key", key, "--expected-version", "1", "--ttl-seconds", "600")
				must(b, dir, "task-lease", "release", "--goal-id", "g", "--todo-id", todo, "--owner", "bench-agent",
					"--idempotency-key", key, "--expected-version", "2")
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/op")
		})
	}
}
