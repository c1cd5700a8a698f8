package loopx_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/soak"
)

// claimRecord is one todo an agent got from `todo ready --claim`.
type claimRecord struct {
	agent, todo string
}

// TestProcessesReadyClaimRace runs 8 agents as real processes against one
// store of 60 todos (200 in a soak run), each looping `todo ready --claim` and completing what it got, until
// nothing is left. Every todo must be claimed exactly once (no double claim
// under the writer fence and CAS, no lost claim) and completed by the agent
// that claimed it, with a linear history.
func TestProcessesReadyClaimRace(t *testing.T) {
	t.Parallel()
	const agents = 8
	n := soak.Pick(60, 200)
	if testing.Short() {
		n = 40
	}
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("agent-%d", i)
	}
	dir := newStore(t, "g", names...)
	seedTodos(t, dir, n, 0)

	// run retries a transient failure (exit 3) with the same arguments, as
	// the contract tells callers to.
	run := func(args ...string) (result, bool) {
		for try := 0; ; try++ {
			r := loopx(t, dir, nil, args...)
			if r.code != 3 || try == 5 {
				return r, try > 0
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	start := time.Now()
	var (
		mu      sync.Mutex
		claims  []claimRecord
		errs    []string
		wg      sync.WaitGroup
		startCh = make(chan struct{})
	)
	fail := func(format string, a ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	for _, agent := range names {
		wg.Add(1)
		go func(agent string) {
			defer wg.Done()
			<-startCh
			for iter := 0; iter <= n; iter++ {
				r, retried := run("todo", "ready", "--goal-id", "g", "--agent-id", agent, "--claim")
				if r.code != 0 {
					fail("%s: ready --claim: exit %d: %s", agent, r.code, r.raw)
					return
				}
				if claimed, _ := r.out["claimed"].(bool); !claimed {
					if r.out["status"] != "no_change" || r.out["todo"] != nil {
						fail("%s: ready --claim without a claim: %s", agent, r.raw)
					}
					return
				}
				todo, _ := r.out["todo_id"].(string)
				if by, _ := r.out["claimed_by"].(string); by != agent || todo == "" {
					fail("%s: ready --claim claimed %q for %q: %s", agent, todo, by, r.raw)
					return
				}
				switch st := r.out["status"]; {
				case st == "applied":
				case st == "no_change" && retried:
					// A retry after an ambiguous outcome returns the claim
					// this agent already holds.
				default:
					fail("%s: ready --claim status %v (each agent completes before claiming again): %s", agent, st, r.raw)
					return
				}
				mu.Lock()
				claims = append(claims, claimRecord{agent, todo})
				mu.Unlock()
				c, _ := run("todo", "complete", "--goal-id", "g", "--agent-id", agent, "--todo-id", todo)
				if c.code != 0 || (c.out["status"] != "applied" && c.out["status"] != "replayed") {
					fail("%s: complete %s: exit %d: %s", agent, todo, c.code, c.raw)
					return
				}
			}
			fail("%s: still claiming after %d rounds", agent, n+1)
		}(agent)
	}
	close(startCh)
	wg.Wait()
	t.Logf("%d agents, %d todos: %v", agents, n, time.Since(start).Round(time.Millisecond))
	for _, e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every todo claimed exactly once, by one agent.
	claimedBy := map[string]string{}
	perAgent := map[string]int{}
	for _, c := range claims {
		if prev, dup := claimedBy[c.todo]; dup {
			t.Errorf("%s claimed twice: by %s and by %s", c.todo, prev, c.agent)
		}
		claimedBy[c.todo] = c.agent
		perAgent[c.agent]++
	}
	if len(claims) != n || len(claimedBy) != n {
		t.Errorf("%d successful claims of %d distinct todos, want %d", len(claims), len(claimedBy), n)
	}
	t.Logf("claims per agent: %v", perAgent)

	// The final state: all done, each closed by the agent that claimed it.
	list := must(t, dir, "todo", "list", "--goal-id", "g", "--status", "done")
	todos, _ := list.out["todos"].([]any)
	if len(todos) != n {
		t.Errorf("%d done todos, want %d", len(todos), n)
	}
	for _, x := range todos {
		td, _ := x.(map[string]any)
		id, _ := td["todo_id"].(string)
		if want := claimedBy[id]; td["closed_by"] != want || td["claimed_by"] != want {
			t.Errorf("%s: closed_by %v, claimed_by %v; the claim result said %q", id, td["closed_by"], td["claimed_by"], want)
		}
	}
	if open := must(t, dir, "todo", "list", "--goal-id", "g", "--status", "open"); open.out["count"] != float64(0) {
		t.Errorf("open todos left: %s", open.raw)
	}

	// The history: one todo.claim and one todo.complete commit per todo.
	perTodo := map[string][]string{}
	out := git(t, dir, "log", "--format=%(trailers:key=Loopx-Todo,valueonly,separator=)%x09%(trailers:key=Loopx-Operation,valueonly,separator=)", "refs/loopx/state")
	for _, line := range strings.Split(out, "\n") {
		todo, op, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || todo == "" {
			continue
		}
		perTodo[todo] = append(perTodo[todo], op)
	}
	for id := range claimedBy {
		ops := perTodo[id]
		sort.Strings(ops)
		if strings.Join(ops, ",") != "todo.claim,todo.complete" {
			t.Errorf("%s: commits %v, want one todo.claim and one todo.complete", id, ops)
		}
	}
	if got := countOps(t, dir, "todo.claim"); got != n {
		t.Errorf("%d todo.claim commits, want %d", got, n)
	}
	checkLinear(t, dir)
}
