package loopx_test

import (
	"fmt"
	"testing"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// BenchmarkRemoteAcquire measures one task-lease acquire through the Go API
// (no process start-up): on a local store, and on a store whose authority is
// a bare repository on 127.0.0.1 reached by path (file transport: a
// git-receive-pack process per push), by `git daemon` (git://) and by
// `git http-backend` behind net/http/cgi (smart HTTP). A remote acquire is
// fetch (one ref advertisement; no pack when the machine is up to date) +
// commit + push with the server's compare-and-swap, then the board commit
// (pushed on the head just pushed, without a fetch). The release between
// two acquires is not timed.
func BenchmarkRemoteAcquire(b *testing.B) {
	for _, kind := range []string{"local", "file", "daemon", "http"} {
		b.Run(kind, func(b *testing.B) {
			var dir string
			if kind == "local" {
				dir = newStore(b, "g", "agent")
			} else {
				srv := serverOf(b, kind)
				bareRepo(b, srv.base, "state")
				dir = machine(b, srv.url("state"))
				must(b, dir, "goal", "create", "--goal-id", "g")
				must(b, dir, "agent", "register", "--goal-id", "g", "--agent-id", "agent")
			}
			must(b, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_bench", "--text", "bench")
			s, err := lx.Open(lx.Options{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if (s.Remote() != "") != (kind != "local") {
				b.Fatalf("remote %q for %s", s.Remote(), kind)
			}
			version := int64(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				key := fmt.Sprintf("k%d", i)
				res, err := s.Acquire(lease.AcquireRequest{Goal: "g", Todo: "todo_bench", Owner: "agent",
					IdempotencyKey: key, TTLSeconds: 600, WriteScopes: []string{"src/**"}})
				if err != nil {
					b.Fatal(err)
				}
				if res.Status != lease.StatusApplied {
					b.Fatalf("acquire: %s", res.Status)
				}
				version++
				b.StopTimer()
				v := version
				if _, err := s.Release(lease.ReleaseRequest{Goal: "g", Todo: "todo_bench", Owner: "agent",
					IdempotencyKey: key, ExpectedVersion: &v}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
