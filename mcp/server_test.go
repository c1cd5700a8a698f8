package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/mcp"
)

var fixedNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// apiStore makes a store in a new folder through the Go API: goal g
// (hard_lease) with todo_one claimed by agent-a, goal s (soft_claim) with
// todo_free; agents agent-a and agent-b in both.
func apiStore(t testing.TB) loopx.Options {
	t.Helper()
	o := loopx.Options{Dir: t.TempDir(), Now: func() time.Time { return fixedNow }}
	if _, err := loopx.Init(o, loopx.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, o)
	defer s.Close()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateGoal(lease.GoalCreateRequest{Goal: "g", HandoffMode: lease.HandoffHardLease}))
	must(s.CreateGoal(lease.GoalCreateRequest{Goal: "s"}))
	for _, g := range []string{"g", "s"} {
		for _, a := range []string{"agent-a", "agent-b"} {
			must(s.RegisterAgent(lease.RegisterRequest{Goal: g, Agent: a}))
		}
	}
	must(s.AddTodo(lease.AddRequest{Goal: "g", Todo: "todo_one", Text: "One"}))
	must(s.Claim(lease.ClaimRequest{Goal: "g", Todo: "todo_one", Actor: "agent-a", LeaseKey: "exec-a", LeaseTTLSeconds: 600}))
	must(s.AddTodo(lease.AddRequest{Goal: "s", Todo: "todo_free", Text: "Free", RequiredWriteScopes: []string{"src/**"}}))
	return o
}

func openStore(t testing.TB, o loopx.Options) *loopx.Store {
	t.Helper()
	s, err := loopx.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connect runs the server in this process over an in-memory pipe.
func connect(t testing.TB, o mcp.Options) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "loopx-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func serverOn(o loopx.Options, goal string) mcp.Options {
	return mcp.Options{Open: func() (*loopx.Store, error) { return loopx.Open(o) }, Goal: goal}
}

// envelope parses a tool result's text.
func envelope(t *testing.T, r *sdk.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text(t, r)), &m); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	return m
}

// TestArgumentRefusals: arguments that are not the tool's are refused as
// tool errors with invalid_request naming the field, before anything is
// decided.
func TestArgumentRefusals(t *testing.T) {
	o := apiStore(t)
	cs := connect(t, serverOn(o, "s"))
	for _, c := range []struct {
		name, tool string
		args       any
		field      string
		needs      string
	}{
		{"unknown field", "acquire", map[string]any{"todo_id": "todo_free", "owner": "agent-b", "idempotency_key": "k", "ttl_seconds": 60, "ttl": 5}, "ttl", ""},
		{"the schema is the tool's", "acquire", map[string]any{"schema": "loopx.task-lease.acquire/v1", "todo_id": "todo_free"}, "schema", ""},
		{"wrong type in a request", "renew", map[string]any{"todo_id": "todo_free", "expected_version": "1"}, "expected_version", ""},
		{"unknown nested field", "complete", map[string]any{"todo_id": "todo_free", "task_lease": map[string]any{"idempotency_key": "k", "expected_version": 1, "epoch": 1}}, "task_lease.epoch", ""},
		{"unknown field of a read", "show", map[string]any{"todo_id": "todo_free", "verbose": true}, "verbose", ""},
		{"claim arguments without claim", "ready", map[string]any{"agent_id": "agent-b", "ttl_seconds": 60}, "ttl_seconds", "claim"},
		{"wait without claim", "ready", map[string]any{"agent_id": "agent-b", "wait_seconds": 5}, "wait_seconds", "claim"},
		{"claim is a boolean", "ready", map[string]any{"claim": "yes"}, "claim", ""},
		{"transfer_claim is a boolean", "transfer", map[string]any{"todo_id": "todo_free", "transfer_claim": 1}, "transfer_claim", ""},
		{"negative wait", "acquire", map[string]any{"todo_id": "todo_free", "wait_seconds": -1}, "wait_seconds", ""},
		{"since is a time", "log", map[string]any{"since": "yesterday"}, "since", ""},
		{"limit is positive", "log", map[string]any{"limit": -1}, "limit", ""},
		{"arguments are an object", "status", []int{1}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := callTool(t, cs, c.tool, c.args)
			if !r.IsError {
				t.Fatalf("not refused: %s", text(t, r))
			}
			m := envelope(t, r)
			e, _ := m["error"].(map[string]any)
			if e["code"] != "invalid_request" || (c.field != "" && e["field"] != c.field) {
				t.Errorf("got %s, want invalid_request naming %q", text(t, r), c.field)
			}
			if c.needs != "" && e["needs"] != c.needs {
				t.Errorf("got %s, want needs %q", text(t, r), c.needs)
			}
		})
	}
	// Nothing was decided: todo_free still has no lease.
	r := callTool(t, cs, "inspect", map[string]any{"todo_id": "todo_free"})
	if m := envelope(t, r); m["lease"] != nil {
		t.Errorf("a refused call wrote a lease: %s", text(t, r))
	}
}

// TestGoalDefault: calls without goal_id are in the server's goal; an
// explicit goal_id wins.
func TestGoalDefault(t *testing.T) {
	o := apiStore(t)
	cs := connect(t, serverOn(o, "s"))
	if m := envelope(t, callTool(t, cs, "status", nil)); m["goal_id"] != "s" {
		t.Errorf("status without goal_id: goal %v, want s", m["goal_id"])
	}
	if m := envelope(t, callTool(t, cs, "status", map[string]any{"goal_id": "g"})); m["goal_id"] != "g" {
		t.Errorf("status with goal_id g: goal %v", m["goal_id"])
	}
	// Without a server goal, two goals leave the call's goal unresolved,
	// as on the command line.
	r := callTool(t, connect(t, serverOn(o, "")), "status", nil)
	if !r.IsError {
		t.Errorf("status without any goal: %s", text(t, r))
	}
}

// TestTransferClaim: transfer_claim selects the joint schema, so the claim
// moves in the same commit; without it only the lease moves.
func TestTransferClaim(t *testing.T) {
	o := apiStore(t)
	cs := connect(t, serverOn(o, "g"))
	args := map[string]any{"todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a", "expected_version": 1,
		"new_owner": "agent-b", "new_idempotency_key": "exec-b", "ttl_seconds": 600, "transfer_claim": true}
	r := callTool(t, cs, "transfer", args)
	m := envelope(t, r)
	if r.IsError || m["transfer_claim"] != true || m["claimed_by"] != "agent-b" {
		t.Fatalf("joint transfer: %s", text(t, r))
	}
	// In a soft_claim goal the joint transfer is refused, the lease-only
	// one applies.
	if r := callTool(t, cs, "acquire", map[string]any{"goal_id": "s", "todo_id": "todo_free", "owner": "agent-a", "idempotency_key": "exec-f", "ttl_seconds": 600}); r.IsError {
		t.Fatal(text(t, r))
	}
	args = map[string]any{"goal_id": "s", "todo_id": "todo_free", "owner": "agent-a", "idempotency_key": "exec-f", "expected_version": 1,
		"new_owner": "agent-b", "new_idempotency_key": "exec-g", "ttl_seconds": 600, "transfer_claim": true}
	if r := callTool(t, cs, "transfer", args); !r.IsError {
		t.Fatalf("joint transfer in a soft_claim goal: %s", text(t, r))
	}
	args["transfer_claim"] = false
	r = callTool(t, cs, "transfer", args)
	m = envelope(t, r)
	lv, _ := m["lease"].(map[string]any)
	if r.IsError || m["transfer_claim"] != nil || lv["owner"] != "agent-b" {
		t.Fatalf("lease-only transfer: %s", text(t, r))
	}
}

// TestStoreOpenedPerCall: a server started where there is no store yet
// answers store_not_initialized as a tool error and keeps serving; once
// the store exists, the next call uses it.
func TestStoreOpenedPerCall(t *testing.T) {
	o := loopx.Options{Dir: t.TempDir(), Now: func() time.Time { return fixedNow }}
	cs := connect(t, serverOn(o, ""))
	r := callTool(t, cs, "log", nil)
	if !r.IsError || errorCode(t, text(t, r)) != "store_not_initialized" {
		t.Fatalf("log without a store: %s", text(t, r))
	}
	if _, err := loopx.Init(o, loopx.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	r = callTool(t, cs, "log", nil)
	if r.IsError || envelope(t, r)["ok"] != true {
		t.Fatalf("log after init: %s", text(t, r))
	}
}

// TestAcquireWaits: wait_seconds waits out another execution's lease and
// takes the todo once it is released; at the deadline it gives the
// refusal.
func TestAcquireWaits(t *testing.T) {
	o := apiStore(t)
	s := openStore(t, o)
	defer s.Close()
	if _, err := s.Acquire(lease.AcquireRequest{Goal: "s", Todo: "todo_free", Owner: "agent-a", IdempotencyKey: "exec-a", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, serverOn(o, "s"))
	start := time.Now()
	r := callTool(t, cs, "acquire", map[string]any{"todo_id": "todo_free", "owner": "agent-b", "idempotency_key": "exec-b", "ttl_seconds": 60, "wait_seconds": 1})
	if !r.IsError || errorCode(t, text(t, r)) != "todo_lease_conflict" || time.Since(start) < time.Second {
		t.Fatalf("after waiting %v: %s", time.Since(start), text(t, r))
	}

	done := make(chan *sdk.CallToolResult)
	go func() {
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "acquire",
			Arguments: map[string]any{"todo_id": "todo_free", "owner": "agent-b", "idempotency_key": "exec-b", "ttl_seconds": 60, "wait_seconds": 60}})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("the acquire did not wait: %s", text(t, r))
	case <-time.After(300 * time.Millisecond):
	}
	one := int64(1)
	if _, err := s.Release(lease.ReleaseRequest{Goal: "s", Todo: "todo_free", Owner: "agent-a", IdempotencyKey: "exec-a", ExpectedVersion: &one}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		m := envelope(t, r)
		lv, _ := m["lease"].(map[string]any)
		if r.IsError || lv["owner"] != "agent-b" || lv["epoch"] != 2.0 {
			t.Fatalf("after the release: %s", text(t, r))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting acquire did not take the released lease")
	}
}

// TestReadyClaim: ready lists without claiming; claim: true claims (with
// wait_seconds 0 it decides once), and says so when nothing is ready.
func TestReadyClaim(t *testing.T) {
	o := apiStore(t)
	cs := connect(t, serverOn(o, "s"))
	m := envelope(t, callTool(t, cs, "ready", map[string]any{"agent_id": "agent-b"}))
	if m["count"] != 1.0 || m["operation"] != "todo.ready" {
		t.Fatalf("ready: %v", m)
	}
	r := callTool(t, cs, "ready", map[string]any{"agent_id": "agent-b", "claim": true, "wait_seconds": 0})
	m = envelope(t, r)
	if r.IsError || m["claimed"] != true || m["claimed_by"] != "agent-b" || m["status"] != "applied" {
		t.Fatalf("ready claim: %s", text(t, r))
	}
	r = callTool(t, cs, "ready", map[string]any{"agent_id": "agent-a", "claim": true})
	m = envelope(t, r)
	if r.IsError || m["claimed"] != false || !strings.Contains(text(t, r), `"status":"no_change"`) {
		t.Fatalf("ready claim with nothing ready: %s", text(t, r))
	}
}
