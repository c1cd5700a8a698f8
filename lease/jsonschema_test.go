package lease

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/request-schema.json")

// docs/request-schema.json is generated from the Go request types; a change
// to a request type without regenerating it fails here
// (go test ./lease -run TestSchemaDocument -update-schema).
func TestSchemaDocument(t *testing.T) {
	const path = "../docs/request-schema.json"
	doc := SchemaDocument()
	if *updateSchema {
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./lease -run TestSchemaDocument -update-schema)", err)
	}
	if !bytes.Equal(old, doc) {
		t.Fatalf("%s is not what the request types give: run go test ./lease -run TestSchemaDocument -update-schema", path)
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	defs := m["$defs"].(map[string]any)
	if len(defs) != len(operations) {
		t.Errorf("%d schemas for %d operations", len(defs), len(operations))
	}
	acq := defs["task-lease-acquire-v1"].(map[string]any)
	props := acq["properties"].(map[string]any)
	if props["ttl_seconds"].(map[string]any)["type"] != "integer" || props["write_scopes"].(map[string]any)["type"] != "array" ||
		acq["additionalProperties"] != false {
		t.Errorf("acquire schema: %v", acq)
	}
	req := map[string]bool{}
	for _, r := range acq["required"].([]any) {
		req[r.(string)] = true
	}
	if !req["schema"] || !req["todo_id"] || !req["idempotency_key"] || !req["ttl_seconds"] || req["goal_id"] {
		t.Errorf("acquire required = %v", acq["required"])
	}
	complete := defs["todo-complete-v1"].(map[string]any)["properties"].(map[string]any)
	if complete["task_lease"].(map[string]any)["type"] != "object" {
		t.Errorf("complete's proof: %v", complete["task_lease"])
	}
}
