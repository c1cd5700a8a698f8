package loopx_test

import (
	"encoding/json"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// TestDecideRequest: what the server's hook answers a pushed request, on a
// store of its own (the pusher's default goal standing in for the
// store's): committed with the heads a client needs to check it, unchanged
// for a replay, refused with the contract's code for a request that does
// not decode or that the rules refuse; nothing is committed but the
// committed ones.
func TestDecideRequest(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := lx.Options{Dir: dir, Now: func() time.Time { return now }}
	if _, err := lx.Init(opts, lx.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := lx.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, err := range []error{
		second(st.CreateGoal(lease.GoalCreateRequest{Goal: "g"})),
		second(st.CreateGoal(lease.GoalCreateRequest{Goal: "h"})), // no goal is the only one
		second(st.RegisterAgent(lease.RegisterRequest{Goal: "g", Agent: "agent-a"})),
		second(st.AddTodo(lease.AddRequest{Goal: "g", Todo: "todo_work", Text: "Work"})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	acquire := `{"schema":"loopx.task-lease.acquire/v1","goal_id":"g","todo_id":"todo_work","owner":"agent-a","idempotency_key":"k1","ttl_seconds":600}`
	noGoal := `{"schema":"loopx.task-lease.acquire/v1","todo_id":"todo_work","owner":"agent-a","idempotency_key":"k2","ttl_seconds":600}`
	cases := []struct {
		name, body string
		status     string
		code       lease.Code
	}{
		{"not JSON", `not json`, "refused", lease.CodeInvalidRequest},
		{"unknown envelope field", `{"request":` + acquire + `,"extra":1}`, "refused", lease.CodeInvalidRequest},
		{"unknown schema", `{"request":{"schema":"loopx.nothing/v9"}}`, "refused", lease.CodeInvalidRequest},
		{"refused by the rules", `{"request":{"schema":"loopx.task-lease.acquire/v1","goal_id":"g","todo_id":"todo_work","owner":"agent-x","idempotency_key":"k3","ttl_seconds":600}}`, "refused", lease.CodeAgentNotRegistered},
		{"committed", `{"request":` + acquire + `}`, "committed", ""},
		{"a replay", `{"request":` + acquire + `}`, "unchanged", ""},
		{"no goal, no default", `{"request":` + noGoal + `}`, "refused", lease.CodeInvalidGoalID},
		{"the pusher's default goal", `{"request":` + noGoal + `,"default_goal":"g"}`, "refused", lease.CodeTodoLeaseConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, err := st.Repo().Head(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Status, Base, State, Head, Code, Message string
			}
			line := st.DecideRequest([]byte(c.body))
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("reply %q: %v", line, err)
			}
			if r.Status != c.status || lease.Code(r.Code) != c.code {
				t.Fatalf("reply %s, want status %s code %q", line, c.status, c.code)
			}
			after, err := st.Repo().Head(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if c.status != "committed" {
				if after != before {
					t.Fatalf("the head moved from %s to %s without a commit", before, after)
				}
				return
			}
			// The state commit is the base's child, the head the board's
			// commit on it, and the base the head before.
			if r.Base != before.String() || r.Head != after.String() {
				t.Fatalf("reply %s: head before %s, after %s", line, before, after)
			}
			if child, err := st.Repo().ChildOf(after, before); err != nil || child != gitstore.ParseHash(r.State) {
				t.Fatalf("state %s is not the base's child on the head (%s, %v)", r.State, child, err)
			}
		})
	}
}
