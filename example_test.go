package loopx_test

// The examples name the package lx: this test package already has a
// function named loopx (process_test.go).

import (
	"fmt"
	"log"
	"os"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// Seed 004's Registry flow, in Go: get a todo, claim it with a TTL (the
// record is never written back whole: each change is one operation, one
// compare-and-swap commit), check the claim before working, and clear it
// once it has expired.
func Example() {
	dir, err := os.MkdirTemp("", "loopx-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// A fixed clock, as LOOPX_NOW gives the command line; the example moves it.
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := lx.Options{Dir: dir, Now: func() time.Time { return clock }}
	if _, err := lx.Init(opts, lx.InitOptions{}); err != nil { // git init, state ref, registry
		log.Fatal(err)
	}
	st, err := lx.Open(opts)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	const goal = "example-goal"
	for _, err := range []error{
		second(st.CreateGoal(lease.GoalCreateRequest{Goal: goal})),
		second(st.RegisterAgent(lease.RegisterRequest{Goal: goal, Agent: "codex-agent"})),
		second(st.AddTodo(lease.AddRequest{Goal: goal, Todo: "todo_001", Text: "Clean up the data pipeline"})),
	} {
		if err != nil {
			log.Fatal(err)
		}
	}

	// registry.get_todo
	todo, err := st.Todo(goal, "todo_001")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s is %s, claimed by %q\n", todo.ID, todo.Status, todo.ClaimedBy)

	// todo["claimed_by"], todo["claim_ttl_minutes"], registry.save_todo
	res, err := st.Claim(lease.ClaimRequest{Goal: goal, Todo: "todo_001", ClaimedBy: "codex-agent", ClaimTTLMinutes: 15})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "claim by", res.Data.Todo.ClaimedBy, "until", res.Data.Todo.ClaimExpiresAt.Format(time.RFC3339))

	// registry.is_claim_valid, now and later
	for _, later := range []time.Duration{0, 10 * time.Minute, 15 * time.Minute} {
		valid, err := st.IsClaimValid(goal, "todo_001", "codex-agent", clock.Add(later))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("claim valid in %v: %v\n", later, valid)
	}

	// Twenty minutes later the claim has expired: it no longer holds the
	// todo, and clearing it is an update.
	clock = clock.Add(20 * time.Minute)
	todo, err = st.Todo(goal, "todo_001")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("claimed by %q, claim expired: %v\n", todo.ClaimedBy, todo.ClaimExpired)
	if res, err = st.Update(lease.UpdateRequest{Goal: goal, Todo: "todo_001", ClearClaim: true}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, "clear claim; applied:", res.Applied())
	// Output:
	// todo_001 is open, claimed by ""
	// applied claim by codex-agent until 2026-01-01T00:15:00Z
	// claim valid in 0s: true
	// claim valid in 10m0s: true
	// claim valid in 15m0s: false
	// claimed by "", claim expired: true
	// applied clear claim; applied: true
}

// A task lease from Go: acquire, renew while working, check it is in force,
// and complete the todo with the lease's proof. Refusals are *lease.Error
// values with the contract's code.
func ExampleStore_Lease() {
	st, clock, done := scratch("parser", "agent-a", "agent-b")
	defer done()
	if _, err := st.AddTodo(lease.AddRequest{Todo: "todo_lexer", Text: "Write the lexer", RequiredWriteScopes: []string{"src/lexer/**"}}); err != nil {
		log.Fatal(err)
	}

	l, err := st.Lease("parser", "todo_lexer")
	fmt.Println("before:", l, err)

	res, err := st.Acquire(lease.AcquireRequest{Todo: "todo_lexer", Owner: "agent-a", IdempotencyKey: "exec-1",
		ExpectedVersion: new(int64(0)), TTLSeconds: 600})
	if err != nil {
		log.Fatal(err)
	}
	l = res.Data.Lease
	fmt.Println(res.Status, l.Owner, "version", l.Version, "epoch", l.Epoch, l.WriteScopes, "effective", l.Effective)

	*clock = clock.Add(5 * time.Minute)
	if _, err := st.Renew(lease.RenewRequest{Todo: "todo_lexer", Owner: "agent-a", IdempotencyKey: "exec-1",
		ExpectedVersion: new(l.Version), TTLSeconds: 600}); err != nil {
		log.Fatal(err)
	}
	if l, err = st.Lease("parser", "todo_lexer"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("renewed: version", l.Version, "epoch", l.Epoch, "expires", l.ExpiresAt.Format(time.RFC3339))
	for _, later := range []time.Duration{9 * time.Minute, 10 * time.Minute} {
		ok, err := st.IsLeaseEffective("parser", "todo_lexer", clock.Add(later))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("in force in %v: %v\n", later, ok)
	}

	_, err = st.Acquire(lease.AcquireRequest{Todo: "todo_lexer", Owner: "agent-b", IdempotencyKey: "exec-2", TTLSeconds: 600})
	if le, ok := lease.AsError(err); ok {
		fmt.Println("agent-b refused:", le.Code)
	}

	finished, err := st.Complete(lease.CompleteRequest{Todo: "todo_lexer", Actor: "agent-a", Evidence: []string{"go test ./lexer"},
		Proof: &lease.Proof{IdempotencyKey: "exec-1", ExpectedVersion: l.Version}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(finished.Status, "todo", finished.Data.Todo.Status, "lease", finished.Data.Lease.Status)
	// Output:
	// before: <nil> <nil>
	// applied agent-a version 1 epoch 1 [src/lexer/**] effective true
	// renewed: version 2 epoch 1 expires 2026-01-01T00:15:00Z
	// in force in 9m0s: true
	// in force in 10m0s: false
	// agent-b refused: todo_lease_conflict
	// applied todo done lease released
}

// Listing todos typed: a goal's todos with a filter, and the ones an agent
// may take now.
func ExampleStore_Todos() {
	st, _, done := scratch("parser", "agent-a", "agent-b")
	defer done()
	for _, req := range []lease.AddRequest{
		{Todo: "todo_lexer", Text: "Write the lexer", Priority: "P1"},
		{Todo: "todo_parser", Text: "Write the parser", DependsOn: []string{"todo_lexer"}},
		{Todo: "todo_docs", Text: "Document the grammar", Priority: "P3"},
	} {
		if _, err := st.AddTodo(req); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := st.Claim(lease.ClaimRequest{Todo: "todo_lexer", ClaimedBy: "agent-a"}); err != nil {
		log.Fatal(err)
	}

	all, err := st.Todos(lx.TodoFilter{})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range all {
		fmt.Printf("%s %s %s claimed by %q\n", t.Priority, t.ID, t.Status, t.ClaimedBy)
	}
	mine, err := st.Todos(lx.TodoFilter{Agent: "agent-a"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("agent-a's:", len(mine), mine[0].ID)
	ready, err := st.ReadyTodos("", "agent-b")
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range ready {
		fmt.Println("ready for agent-b:", t.ID)
	}
	// Output:
	// P1 todo_lexer open claimed by "agent-a"
	// P2 todo_parser open claimed by ""
	// P3 todo_docs open claimed by ""
	// agent-a's: 1 todo_lexer
	// ready for agent-b: todo_docs
}

// The claim check at a given time: held by one agent, or by anyone (agent
// ""); the zero time asks at the store's clock.
func ExampleStore_IsClaimValid() {
	st, clock, done := scratch("parser", "agent-a", "agent-b")
	defer done()
	if _, err := st.AddTodo(lease.AddRequest{Todo: "todo_lexer", Text: "Write the lexer"}); err != nil {
		log.Fatal(err)
	}
	*clock = clock.Add(time.Hour)
	if _, err := st.Claim(lease.ClaimRequest{Todo: "todo_lexer", ClaimedBy: "agent-a", ClaimTTLMinutes: 30}); err != nil {
		log.Fatal(err)
	}
	for _, q := range []struct {
		agent string
		at    time.Time
	}{
		{"agent-a", clock.Add(29 * time.Minute)},
		{"agent-b", clock.Add(29 * time.Minute)},
		{"", clock.Add(29 * time.Minute)},
		{"", clock.Add(30 * time.Minute)},
		{"agent-a", time.Time{}}, // the store's clock
	} {
		ok, err := st.IsClaimValid("parser", "todo_lexer", q.agent, q.at)
		if err != nil {
			log.Fatal(err)
		}
		when := "the store's clock"
		if !q.at.IsZero() {
			when = q.at.Format("15:04")
		}
		fmt.Printf("%q at %s: %v\n", q.agent, when, ok)
	}
	_, err := st.IsClaimValid("parser", "todo_nope", "", time.Time{})
	fmt.Println(err)
	// Output:
	// "agent-a" at 01:29: true
	// "agent-b" at 01:29: false
	// "" at 01:29: true
	// "" at 01:30: false
	// "agent-a" at the store's clock: true
	// todo_not_found: todo todo_nope not found in goal parser
}

// scratch opens a store on a new repository in a temporary folder, with a
// goal (the default of every request) and registered agents; the clock
// starts at 2026-01-01T00:00:00Z and the example moves it through the
// returned pointer. done closes the store and removes the folder.
func scratch(goal string, agents ...string) (st *lx.Store, clock *time.Time, done func()) {
	dir, err := os.MkdirTemp("", "loopx-example-")
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock = &now
	opts := lx.Options{Dir: dir, DefaultGoal: goal, Now: func() time.Time { return *clock }}
	if _, err := lx.Init(opts, lx.InitOptions{}); err != nil {
		log.Fatal(err)
	}
	if st, err = lx.Open(opts); err != nil {
		log.Fatal(err)
	}
	if _, err := st.CreateGoal(lease.GoalCreateRequest{Goal: goal}); err != nil {
		log.Fatal(err)
	}
	for _, a := range agents {
		if _, err := st.RegisterAgent(lease.RegisterRequest{Agent: a}); err != nil {
			log.Fatal(err)
		}
	}
	return st, clock, func() { st.Close(); os.RemoveAll(dir) }
}

func second(_ lx.Reply, err error) error { return err }
