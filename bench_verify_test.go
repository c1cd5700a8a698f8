package loopx_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// BenchmarkRecordRequest measures what recording the canonical request adds
// to a mutation (target: under 5%): todo adds (state and board commits)
// and renews (one commit), with and without the Loopx-Request trailer,
// side by side.
func BenchmarkRecordRequest(b *testing.B) {
	for _, op := range []string{"todo-add", "renew"} {
		for _, recorded := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/recorded=%v", op, recorded), func(b *testing.B) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				s := fixture.BenchStore(b, fixture.BenchDir(b), &clock)
				s.SetUnrecorded(!recorded)
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
