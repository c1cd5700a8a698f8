package loopx_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/soak"
)

// TestIdenticalRequestsRace: never two `applied` for one application. Two
// machines (clones of one bare server, or one repository in local mode) send
// the very same request at the same time with the same clock, so when both
// decide on the same head they build byte-identical commits; exactly one of
// them may be told `applied`, the other `replayed`. 8 rounds (20 in a soak
// run), alternating a
// todo add (no receipt: the replay is found by its content) and a lease
// acquire (a receipt).
func TestIdenticalRequestsRace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real processes and a server")
	}
	for _, kind := range []string{"local", "file", "daemon"} {
		t.Run(kind, func(t *testing.T) {
			var dirs [2]string
			if kind == "local" {
				dir := newStore(t, "g", "agent-a")
				dirs = [2]string{dir, dir}
			} else {
				srv := serverOf(t, kind)
				bareRepo(t, srv.base, "state")
				dirs[0] = machine(t, srv.url("state"))
				must(t, dirs[0], "goal", "create", "--goal-id", "g")
				must(t, dirs[0], "agent", "register", "--goal-id", "g", "--agent-id", "agent-a")
				dirs[1] = machine(t, srv.url("state"))
			}
			// The same clock for both machines in a round, a second later
			// each round (ahead of the setup's real-time commits, within
			// the skew bound).
			base := time.Now().UTC().Truncate(time.Second).Add(time.Second)
			for round := range soak.Pick(8, 20) {
				todo := fmt.Sprintf("todo_round%02d", round/2)
				args := []string{"todo", "add", "--goal-id", "g", "--todo-id", todo, "--text", "the same", "--agent-id", "agent-a"}
				if round%2 == 1 {
					args = []string{"task-lease", "acquire", "--goal-id", "g", "--todo-id", todo, "--owner", "agent-a",
						"--idempotency-key", "exec-" + todo, "--ttl-seconds", "600"}
				}
				now := "LOOPX_NOW=" + base.Add(time.Duration(round)*time.Second).Format(time.RFC3339)
				var wg sync.WaitGroup
				var res [2]result
				start := make(chan struct{})
				for i := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for try := 0; try < 40; try++ {
							res[i] = loopx(t, dirs[i], []string{now}, args...)
							if res[i].code != 3 {
								return
							}
						}
					}()
				}
				close(start)
				wg.Wait()
				applied := 0
				for i, r := range res {
					if r.code != 0 {
						t.Fatalf("round %d, machine %d: exit %d: %s", round, i, r.code, r.raw)
					}
					switch r.out["status"] {
					case "applied":
						applied++
					case "replayed":
					default:
						t.Fatalf("round %d, machine %d: status %v: %s", round, i, r.out["status"], r.raw)
					}
				}
				if applied != 1 {
					t.Fatalf("round %d (%s): %d callers told applied for one application:\n%s\n%s", round, args[1], applied, res[0].raw, res[1].raw)
				}
				if res[0].out["revision"] != res[1].out["revision"] {
					t.Fatalf("round %d: the replay names another revision than the application:\n%s\n%s", round, res[0].raw, res[1].raw)
				}
			}
		})
	}
}
