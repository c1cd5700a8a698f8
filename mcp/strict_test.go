package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStrictArguments: the tools read their arguments as strictly as
// `loopx apply` reads a request: a key given twice (at any depth), invalid
// UTF-8 and arguments over 1 MiB are invalid_request, and a value of the
// wrong type in an identifier, TTL or scope field is that field's code.
// Nothing refused is decided.
func TestStrictArguments(t *testing.T) {
	o := apiStore(t)
	cs := connect(t, serverOn(o, "s"))
	big := `{"todo_id":"todo_free","owner":"agent-b","idempotency_key":"k","ttl_seconds":60,"write_scopes":["` +
		strings.Repeat("x", 1<<20) + `"]}`
	for _, c := range []struct {
		name, tool string
		args       string // raw JSON
		code       string
		field, msg string
	}{
		{"duplicate key", "acquire", `{"todo_id":"todo_free","owner":"agent-b","owner":"agent-a","idempotency_key":"k","ttl_seconds":60}`, "invalid_request", "", `the key \"owner\" appears twice`},
		{"duplicate key, escaped", "acquire", `{"todo_id":"todo_free","owner":"agent-b","\u006fwner":"agent-a","idempotency_key":"k","ttl_seconds":60}`, "invalid_request", "", `appears twice`},
		{"duplicate nested key", "complete", `{"todo_id":"todo_free","agent_id":"agent-b","task_lease":{"idempotency_key":"k","expected_version":1,"expected_version":2}}`, "invalid_request", "", `the key \"expected_version\" appears twice`},
		{"duplicate key of a read", "show", `{"todo_id":"todo_free","todo_id":"todo_one"}`, "invalid_request", "", `appears twice`},
		{"invalid UTF-8", "acquire", "{\"todo_id\":\"todo_free\",\"owner\":\"agent-b\",\"idempotency_key\":\"k\xe9\",\"ttl_seconds\":60}", "invalid_request", "", "UTF-8"},
		{"over 1 MiB", "acquire", big, "invalid_request", "", "1 MiB"},
		{"todo id type", "acquire", `{"todo_id":7,"owner":"agent-b","idempotency_key":"k","ttl_seconds":60}`, "invalid_todo_id", "todo_id", ""},
		{"goal id type", "renew", `{"goal_id":["s"],"todo_id":"todo_free"}`, "invalid_goal_id", "goal_id", ""},
		{"owner type", "release", `{"todo_id":"todo_free","owner":1}`, "invalid_agent_id", "owner", ""},
		{"key type", "acquire", `{"todo_id":"todo_free","owner":"agent-b","idempotency_key":1,"ttl_seconds":60}`, "invalid_idempotency_key", "idempotency_key", ""},
		{"ttl type", "acquire", `{"todo_id":"todo_free","owner":"agent-b","idempotency_key":"k","ttl_seconds":"60"}`, "invalid_ttl", "ttl_seconds", ""},
		{"scopes type", "acquire", `{"todo_id":"todo_free","owner":"agent-b","idempotency_key":"k","ttl_seconds":60,"write_scopes":"src/**"}`, "invalid_write_scope", "write_scopes", ""},
		{"todo id type of a read", "show", `{"todo_id":7}`, "invalid_todo_id", "todo_id", ""},
		{"agent id type of a read", "status", `{"agent_id":true}`, "invalid_agent_id", "agent_id", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := callTool(t, cs, c.tool, json.RawMessage(c.args))
			if !r.IsError {
				t.Fatalf("not refused: %.300s", text(t, r))
			}
			got := text(t, r)
			m := envelope(t, r)
			e, _ := m["error"].(map[string]any)
			if e["code"] != c.code || (c.field != "" && e["field"] != c.field) || !strings.Contains(got, c.msg) {
				t.Errorf("got %.300s, want %s (field %q, %q)", got, c.code, c.field, c.msg)
			}
		})
	}
	// Nothing was decided: todo_free still has no lease.
	r := callTool(t, cs, "inspect", map[string]any{"todo_id": "todo_free"})
	if m := envelope(t, r); m["lease"] != nil {
		t.Errorf("a refused call wrote a lease: %s", text(t, r))
	}
	// The same arguments without the duplicate are decided.
	r = callTool(t, cs, "acquire", json.RawMessage(`{"todo_id":"todo_free","owner":"agent-b","idempotency_key":"k","ttl_seconds":60}`))
	if r.IsError {
		t.Fatalf("refused: %s", text(t, r))
	}
}
