package mcp_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolShow is one read tool call through the server in this
// process: decode, open the store, read, close, render.
func BenchmarkToolShow(b *testing.B) {
	cs := connect(b, serverOn(apiStore(b), ""))
	args := map[string]any{"goal_id": "g", "todo_id": "todo_one"}
	for b.Loop() {
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "show", Arguments: args})
		if err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}

// BenchmarkToolRenew is one mutation tool call (a lease renewal: one
// commit) through the server in this process.
func BenchmarkToolRenew(b *testing.B) {
	cs := connect(b, serverOn(apiStore(b), ""))
	version := int64(1)
	for b.Loop() {
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "renew", Arguments: map[string]any{
			"goal_id": "g", "todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a",
			"expected_version": version, "ttl_seconds": 600}})
		if err != nil || r.IsError {
			b.Fatal(err, r.Content[0].(*sdk.TextContent).Text)
		}
		version++
	}
}
