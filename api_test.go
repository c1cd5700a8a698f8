package loopx_test

import (
	"encoding/json"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// typedStore opens a store on a new repository with goal g (the default
// goal), a fixed clock moved through the returned pointer, and agents.
func typedStore(t *testing.T, agents ...lease.RegisterRequest) (*lx.Store, *time.Time) {
	t.Helper()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := lx.Options{Dir: t.TempDir(), DefaultGoal: "g", Now: func() time.Time { return clock }}
	if _, err := lx.Init(opts, lx.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := lx.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mustOK(t)(st.CreateGoal(lease.GoalCreateRequest{Goal: "g"}))
	for _, a := range agents {
		mustOK(t)(st.RegisterAgent(a))
	}
	return st, &clock
}

func mustOK(t *testing.T) func(lx.Reply, error) lx.Reply {
	return func(res lx.Reply, err error) lx.Reply {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

func codeOf(err error) lease.Code {
	if le, ok := lease.AsError(err); ok {
		return le.Code
	}
	return ""
}

// jsonField is a field of a result's JSON, as the command line prints it.
func jsonField(t *testing.T, res lx.Reply, name string) string {
	t.Helper()
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var norm any
	if err := json.Unmarshal(m[name], &norm); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return jsonOf(t, norm)
}

// jsonOf is v's JSON with its objects' keys sorted (as a result prints
// them), so two values compare by content.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var norm any
	if err := json.Unmarshal(raw, &norm); err != nil {
		t.Fatal(err)
	}
	if raw, err = json.Marshal(norm); err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestTypedReadsAreTheCommandsResults: each typed read returns exactly what
// its command prints (the same JSON), on a store with claims, notes,
// dependencies and a lease.
func TestTypedReadsAreTheCommandsResults(t *testing.T) {
	t.Parallel()
	st, clock := typedStore(t, lease.RegisterRequest{Agent: "agent-a"}, lease.RegisterRequest{Agent: "agent-b"})
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_alpha", Text: "A", Priority: "P1", RequiredWriteScopes: []string{"src/a/**"}}))
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_beta", Text: "B", DependsOn: []string{"todo_alpha"}}))
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_gamma", Text: "C"}))
	mustOK(t)(st.Claim(lease.ClaimRequest{Todo: "todo_alpha", ClaimedBy: "agent-a", ClaimTTLMinutes: 30,
		LeaseKey: "exec-1", LeaseTTLSeconds: 600}))
	mustOK(t)(st.Claim(lease.ClaimRequest{Todo: "todo_gamma", ClaimedBy: "agent-b", ClaimTTLMinutes: 5}))
	mustOK(t)(st.Update(lease.UpdateRequest{Todo: "todo_alpha", Actor: "agent-a", Note: "lexer first",
		Proof: &lease.Proof{IdempotencyKey: "exec-1", ExpectedVersion: 1}}))
	*clock = clock.Add(6 * time.Minute) // todo_c's claim has expired, todo_a's lease has not

	for _, id := range []string{"todo_alpha", "todo_beta", "todo_gamma"} {
		tv, err := st.Todo("", id)
		if err != nil {
			t.Fatal(err)
		}
		show := mustOK(t)(st.ShowTodo("", id))
		if got, want := jsonOf(t, tv), jsonField(t, show, "todo"); got != want {
			t.Errorf("Todo(%s) = %s\nshow prints %s", id, got, want)
		}
		l, err := st.Lease("", id)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonOf(t, l), jsonField(t, mustOK(t)(st.Inspect("", id)), "lease"); got != want {
			t.Errorf("Lease(%s) = %s\ninspect prints %s", id, got, want)
		}
	}
	for _, f := range []lx.TodoFilter{{}, {Agent: "agent-a"}, {Status: lease.TodoDone}} {
		todos, err := st.Todos(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonOf(t, todos), jsonField(t, mustOK(t)(st.ListTodos(f)), "todos"); got != want {
			t.Errorf("Todos(%+v) = %s\nlist prints %s", f, got, want)
		}
	}
	ready, err := st.ReadyTodos("", "agent-b")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jsonOf(t, ready), jsonField(t, mustOK(t)(st.Ready("", "agent-b")), "todos"); got != want {
		t.Errorf("ReadyTodos = %s\nready prints %s", got, want)
	}

	// The fields a program reads, typed.
	a, _ := st.Todo("", "todo_alpha")
	if a.ClaimedBy != "agent-a" || a.TodoRelations == nil || a.TodoRelations.Lease == nil ||
		!a.TodoRelations.Lease.Effective || len(a.Notes) != 1 || a.Notes[0].Text != "lexer first" {
		t.Errorf("todo_a = %s", jsonOf(t, a))
	}
	b, _ := st.Todo("", "todo_beta")
	if len(b.OpenDependencies) != 1 || b.OpenDependencies[0] != "todo_alpha" || b.Lease != nil {
		t.Errorf("todo_b = %s", jsonOf(t, b))
	}
	c, _ := st.Todo("", "todo_gamma")
	if c.ClaimedBy != "" || !c.ClaimExpired || c.ClaimExpiresAt != nil {
		t.Errorf("todo_c = %s", jsonOf(t, c))
	}
	if len(ready) != 1 || ready[0].ID != "todo_gamma" {
		t.Errorf("ready for agent-b = %s, want todo_c (its own expired claim)", jsonOf(t, ready))
	}
}

// TestTypedReadRefusals: the typed reads refuse as their commands do, with
// the contract's codes.
func TestTypedReadRefusals(t *testing.T) {
	t.Parallel()
	st, _ := typedStore(t, lease.RegisterRequest{Agent: "agent-a"})
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_alpha", Text: "A"}))
	for _, c := range []struct {
		name string
		err  error
		want lease.Code
	}{
		{"Todo missing", second2(st.Todo("", "todo_nope")), lease.CodeTodoNotFound},
		{"Todo bad id", second2(st.Todo("", "no spaces")), lease.CodeInvalidTodoID},
		{"Todo unknown goal", second2(st.Todo("nope", "todo_alpha")), lease.CodeGoalNotFound},
		{"Lease missing", second2(st.Lease("", "todo_nope")), lease.CodeTodoNotFound},
		{"Todos bad status", second2(st.Todos(lx.TodoFilter{Status: "busy"})), lease.CodeInvalidRequest},
		{"ReadyTodos unknown agent", second2(st.ReadyTodos("", "agent-z")), lease.CodeAgentNotRegistered},
		{"IsClaimValid missing", second2(st.IsClaimValid("", "todo_nope", "", time.Time{})), lease.CodeTodoNotFound},
		{"IsClaimValid unknown goal", second2(st.IsClaimValid("nope", "todo_alpha", "", time.Time{})), lease.CodeGoalNotFound},
		{"IsLeaseEffective bad id", second2(st.IsLeaseEffective("", "", time.Time{})), lease.CodeInvalidTodoID},
	} {
		if got := codeOf(c.err); got != c.want {
			t.Errorf("%s: error %v, want code %s", c.name, c.err, c.want)
		}
	}
}

func second2[T any](_ T, err error) error { return err }

// TestIsClaimValidAt: the claim judged at a decision time, by holder.
func TestIsClaimValidAt(t *testing.T) {
	t.Parallel()
	st, clock := typedStore(t, lease.RegisterRequest{Agent: "lead", Role: "orchestrator"},
		lease.RegisterRequest{Agent: "worker"}, lease.RegisterRequest{Agent: "agent-c"})
	t0 := *clock
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_deleg", Text: "delegated"}))
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_forever", Text: "forever"}))
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_unreg", Text: "unclaimed"}))
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_expiring", Text: "expires"}))
	mustOK(t)(st.Claim(lease.ClaimRequest{Todo: "todo_deleg", Actor: "lead", ScopeAgent: "worker", ClaimTTLMinutes: 60}))
	mustOK(t)(st.Claim(lease.ClaimRequest{Todo: "todo_forever", ClaimedBy: "agent-c"}))
	mustOK(t)(st.Claim(lease.ClaimRequest{Todo: "todo_expiring", ClaimedBy: "agent-c", ClaimTTLMinutes: 10}))
	// A later commit dates the head at t0+30m: no decision is made before.
	*clock = t0.Add(30 * time.Minute)
	mustOK(t)(st.AddTodo(lease.AddRequest{Todo: "todo_later", Text: "dates the head"}))

	for _, c := range []struct {
		todo, agent string
		at          time.Time
		want        bool
	}{
		{"todo_deleg", "lead", t0.Add(59 * time.Minute), true},
		{"todo_deleg", "worker", t0.Add(59 * time.Minute), true}, // the delegated scope agent holds it too
		{"todo_deleg", "agent-c", t0.Add(59 * time.Minute), false},
		{"todo_deleg", "", t0.Add(59 * time.Minute), true},
		{"todo_deleg", "worker", t0.Add(60 * time.Minute), false}, // expiry is exclusive
		{"todo_deleg", "", t0.Add(60*time.Minute - time.Millisecond), true},
		{"todo_forever", "agent-c", t0.Add(100 * 365 * 24 * time.Hour), true}, // no TTL: never expires
		{"todo_unreg", "", t0, false},
		{"todo_unreg", "agent-c", t0, false},
		// todo_e's claim expired at t0+10m, before the head's time: asked
		// at t0+5m it is judged at t0+30m, as any decision now would.
		{"todo_expiring", "agent-c", t0.Add(5 * time.Minute), false},
		{"todo_expiring", "agent-c", time.Time{}, false}, // the store's clock, t0+30m
		{"todo_deleg", "worker", time.Time{}, true},
	} {
		got, err := st.IsClaimValid("", c.todo, c.agent, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("IsClaimValid(%s, %q, %v) = %v, want %v", c.todo, c.agent, c.at, got, c.want)
		}
	}
}

// TestIsLeaseEffectiveAt: the lease judged by the whole rule
// (lease.LeaseEffective), not its expiry alone.
func TestIsLeaseEffectiveAt(t *testing.T) {
	t.Parallel()
	st, clock := typedStore(t, lease.RegisterRequest{Agent: "agent-a"}, lease.RegisterRequest{Agent: "agent-b"})
	t0 := *clock
	for _, id := range []string{"todo_alpha", "todo_released", "todo_unreg", "todo_none"} {
		mustOK(t)(st.AddTodo(lease.AddRequest{Todo: id, Text: id}))
	}
	for _, id := range []string{"todo_alpha", "todo_released", "todo_unreg"} {
		mustOK(t)(st.Acquire(lease.AcquireRequest{Todo: id, Owner: "agent-a", IdempotencyKey: "k-" + id, TTLSeconds: 600}))
	}
	mustOK(t)(st.Release(lease.ReleaseRequest{Todo: "todo_released", Owner: "agent-a", IdempotencyKey: "k-todo_released", ExpectedVersion: new(int64(1))}))
	ok := func(todo string, at time.Time) bool {
		t.Helper()
		got, err := st.IsLeaseEffective("", todo, at)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if !ok("todo_alpha", t0.Add(599*time.Second)) || ok("todo_alpha", t0.Add(600*time.Second)) {
		t.Error("todo_a: want effective until its expiry, exclusive")
	}
	if ok("todo_released", t0) {
		t.Error("todo_r: a released lease is not effective")
	}
	if ok("todo_none", t0) {
		t.Error("todo_n: a todo without a lease has none in force")
	}
	if !ok("todo_unreg", t0.Add(time.Minute)) {
		t.Error("todo_u: want effective before its owner is unregistered")
	}
	mustOK(t)(st.UnregisterAgent(lease.UnregisterRequest{Agent: "agent-a"}))
	if ok("todo_unreg", t0.Add(time.Minute)) {
		t.Error("todo_u: the lease of an unregistered owner is not effective, however unexpired")
	}
	_ = clock
}

// TestTypedResults: every mutation's result carries its payload typed: the
// todo a todo mutation shows, the lease a task-lease operation (or a todo
// mutation that acquired, verified or released one) leaves, and whether it
// applied.
func TestTypedResults(t *testing.T) {
	t.Parallel()
	st, _ := typedStore(t, lease.RegisterRequest{Agent: "agent-a"}, lease.RegisterRequest{Agent: "agent-b"})
	type want struct {
		todo, leaseStatus string // "" for nil
		applied           bool
	}
	v := func(n int64) *int64 { return &n }
	todoOf := func(r *lx.Result[lease.TodoResult], err error) (want, error) {
		if err != nil {
			return want{}, err
		}
		w := want{applied: r.Applied()}
		if r.Data.Todo != nil {
			w.todo = r.Data.Todo.ID
		}
		if r.Data.Lease != nil {
			w.leaseStatus = r.Data.Lease.Status
		}
		return w, nil
	}
	leaseOf := func(r *lx.Result[lease.LeaseResult], err error) (want, error) {
		if err != nil {
			return want{}, err
		}
		w := want{applied: r.Applied()}
		if r.Data.Lease != nil {
			w.leaseStatus = r.Data.Lease.Status
		}
		return w, nil
	}
	added := func(r *lx.Result[lease.TodoAddData], err error) (want, error) {
		if err != nil {
			return want{}, err
		}
		return want{todo: r.Data.Todo.ID, applied: r.Applied()}, nil
	}
	shown := func(r *lx.Result[lx.TodoShow], err error) (want, error) {
		if err != nil {
			return want{}, err
		}
		w := want{todo: r.Data.Todo.ID, applied: r.Applied()}
		if r.Data.Todo.TodoRelations != nil && r.Data.Todo.Lease != nil {
			w.leaseStatus = r.Data.Todo.Lease.Status
		}
		return w, nil
	}
	goal := func(r *lx.Result[lease.GoalData], err error) (want, error) {
		if err != nil {
			return want{}, err
		}
		return want{applied: r.Applied()}, nil
	}
	steps := []struct {
		name string
		got  func() (want, error)
		want want
	}{
		{"goal create (no todo)", func() (want, error) { return goal(st.CreateGoal(lease.GoalCreateRequest{Goal: "other"})) }, want{"", "", true}},
		{"ready --claim, nothing ready", func() (want, error) { return todoOf(st.ReadyClaim(lease.ReadyClaimRequest{Actor: "agent-b"})) }, want{"", "", false}},
		{"add", func() (want, error) { return added(st.AddTodo(lease.AddRequest{Todo: "todo_alpha", Text: "A"})) }, want{"todo_alpha", "", true}},
		{"add b", func() (want, error) { return added(st.AddTodo(lease.AddRequest{Todo: "todo_beta", Text: "B"})) }, want{"todo_beta", "", true}},
		{"claim", func() (want, error) {
			return todoOf(st.Claim(lease.ClaimRequest{Todo: "todo_alpha", ClaimedBy: "agent-a"}))
		}, want{"todo_alpha", "", true}},
		{"claim again", func() (want, error) {
			return todoOf(st.Claim(lease.ClaimRequest{Todo: "todo_alpha", ClaimedBy: "agent-a"}))
		}, want{"todo_alpha", "", false}},
		{"claim with lease", func() (want, error) {
			return todoOf(st.Claim(lease.ClaimRequest{Todo: "todo_beta", ClaimedBy: "agent-b", LeaseKey: "kb", LeaseTTLSeconds: 600}))
		}, want{"todo_beta", lease.LeaseActive, true}},
		{"acquire", func() (want, error) {
			return leaseOf(st.Acquire(lease.AcquireRequest{Todo: "todo_alpha", Owner: "agent-a", IdempotencyKey: "ka", ExpectedVersion: v(0), TTLSeconds: 600}))
		}, want{"", lease.LeaseActive, true}},
		{"acquire replayed", func() (want, error) {
			return leaseOf(st.Acquire(lease.AcquireRequest{Todo: "todo_alpha", Owner: "agent-a", IdempotencyKey: "ka", ExpectedVersion: v(0), TTLSeconds: 600}))
		}, want{"", lease.LeaseActive, false}},
		{"renew", func() (want, error) {
			return leaseOf(st.Renew(lease.RenewRequest{Todo: "todo_alpha", Owner: "agent-a", IdempotencyKey: "ka", ExpectedVersion: v(1), TTLSeconds: 600}))
		}, want{"", lease.LeaseActive, true}},
		{"show", func() (want, error) { return shown(st.ShowTodo("", "todo_alpha")) }, want{"todo_alpha", lease.LeaseActive, false}},
		{"inspect", func() (want, error) { return leaseOf(st.Inspect("", "todo_alpha")) }, want{"", lease.LeaseActive, false}},
		{"update", func() (want, error) {
			return todoOf(st.Update(lease.UpdateRequest{Todo: "todo_alpha", Actor: "agent-a", Note: "n",
				Proof: &lease.Proof{IdempotencyKey: "ka", ExpectedVersion: 2}}))
		}, want{"todo_alpha", lease.LeaseActive, true}}, // the lease it verified
		{"add gamma", func() (want, error) { return added(st.AddTodo(lease.AddRequest{Todo: "todo_gamma", Text: "C"})) }, want{"todo_gamma", "", true}},
		{"acquire gamma", func() (want, error) {
			return leaseOf(st.Acquire(lease.AcquireRequest{Todo: "todo_gamma", Owner: "agent-b", IdempotencyKey: "kb", TTLSeconds: 600}))
		}, want{"", lease.LeaseActive, true}},
		{"transfer", func() (want, error) {
			return leaseOf(st.Transfer(lease.TransferRequest{Todo: "todo_gamma", Owner: "agent-b", IdempotencyKey: "kb",
				ExpectedVersion: v(1), NewOwner: "agent-a", NewIdempotencyKey: "kb2", TTLSeconds: 600}))
		}, want{"", lease.LeaseActive, true}},
		{"release", func() (want, error) {
			return leaseOf(st.Release(lease.ReleaseRequest{Todo: "todo_gamma", Owner: "agent-a", IdempotencyKey: "kb2", ExpectedVersion: v(2)}))
		}, want{"", lease.LeaseReleased, true}},
		{"complete", func() (want, error) {
			return todoOf(st.Complete(lease.CompleteRequest{Todo: "todo_alpha", Actor: "agent-a", Evidence: []string{"e"},
				Proof: &lease.Proof{IdempotencyKey: "ka", ExpectedVersion: 2}}))
		}, want{"todo_alpha", lease.LeaseReleased, true}},
		{"supersede", func() (want, error) {
			return todoOf(st.Supersede(lease.SupersedeRequest{Todo: "todo_beta", Actor: "agent-b", Reason: "r",
				Proof: &lease.Proof{IdempotencyKey: "kb", ExpectedVersion: 1}}))
		}, want{"todo_beta", lease.LeaseReleased, true}},
	}
	for _, s := range steps {
		got, err := s.got()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want {
			t.Errorf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
}
