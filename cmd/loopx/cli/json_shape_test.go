package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// nullable are the fields that may be null: objects and times that are
// absent (a todo with no lease, a lease never renewed or released, the todo
// of a ready --claim that found none). Every other null is a list that
// should have been [] (contract: arrays are [], never null), or a new field
// that must be added here on purpose.
var nullable = map[string]bool{"lease": true, "renewed_at": true, "released_at": true, "todo": true}

// findNulls returns the paths of the null values in v that are not nullable.
func findNulls(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil && !nullable[k] {
				out = append(out, path+"."+k)
			}
			out = append(out, findNulls(e, path+"."+k)...)
		}
	case []any:
		for i, e := range x {
			if e == nil {
				out = append(out, fmt.Sprintf("%s[%d]", path, i))
			}
			out = append(out, findNulls(e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// TestResultsHaveNoNullArrays runs every command of the work loop, and the
// refusals that carry lists, and fails on any null list in their JSON.
func TestResultsHaveNoNullArrays(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LOOPX_NOW", "2026-01-01T00:00:00Z")
	t.Setenv("LOOPX_FORMAT", "json")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	steps := []string{
		"init",
		"goal create --goal-id g",
		"goal create --goal-id h --handoff-mode hard_lease",
		"goal show --goal-id g",
		"goal list",
		"agent register --goal-id g --agent-id agent-a",
		"agent register --goal-id g --agent-id agent-b",
		"agent register --goal-id g --agent-id lead --role orchestrator --lifecycle-authority complete,reassign",
		"agent list --goal-id g",
		"todo add --goal-id g --todo-id todo_one --text one",
		"todo add --goal-id g --todo-id todo_two --text two --depends-on todo_one --required-write-scope src/** --excluded-agent agent-b --priority P3",
		"todo add --goal-id g --todo-id todo_three --text three --priority P4",
		"todo add --goal-id g --text generated --priority P4",
		"todo show --goal-id g --todo-id todo_one",
		"todo show --goal-id g --todo-id todo_two",
		"todo list --goal-id g",
		"todo list --goal-id g --status done",
		"todo ready --goal-id g --agent-id agent-a",
		"todo ready --goal-id g --agent-id agent-a --claim",
		"todo update --goal-id g --todo-id todo_one --agent-id agent-a --note hello",
		"todo update --goal-id g --todo-id todo_three --agent-id agent-b --priority P1",
		"task-lease inspect --goal-id g --todo-id todo_one",
		"task-lease acquire --goal-id g --todo-id todo_one --owner agent-a --idempotency-key k1 --ttl-seconds 600 --write-scope src/**",
		"task-lease acquire --goal-id g --todo-id todo_one --owner agent-a --idempotency-key k1 --ttl-seconds 600 --write-scope src/**",
		"task-lease acquire --goal-id g --todo-id todo_three --owner agent-b --idempotency-key k9 --ttl-seconds 600 --write-scope src/a.go",
		"task-lease inspect --goal-id g --todo-id todo_one",
		"task-lease renew --goal-id g --todo-id todo_one --owner agent-a --idempotency-key k1 --expected-version 1 --ttl-seconds 600",
		"task-lease renew --goal-id g --todo-id todo_one --owner agent-a --idempotency-key k1 --expected-version 1 --ttl-seconds 600",
		"todo complete --goal-id g --todo-id todo_two --agent-id agent-a",
		"guard check --agent-id agent-b src/a.go",
		"guard check --agent-id agent-a src/a.go",
		"task-lease release --goal-id g --todo-id todo_one --owner agent-a --idempotency-key k1 --expected-version 2",
		"task-lease release --goal-id g --todo-id todo_one --owner agent-a --idempotency-key k1 --expected-version 2",
		"todo claim --goal-id g --todo-id todo_three --agent-id agent-b --task-lease-idempotency-key k3 --ttl-seconds 600",
		"todo claim --goal-id g --todo-id todo_three --agent-id agent-a",
		"todo complete --goal-id g --todo-id todo_one --agent-id agent-a --evidence merged",
		"todo complete --goal-id g --todo-id todo_one --agent-id agent-a --evidence merged",
		"todo supersede --goal-id g --todo-id todo_two --agent-id agent-a --reason dropped",
		"todo show --goal-id g --todo-id todo_one",
		"todo show --goal-id g --todo-id todo_three",
		"todo project-markdown --goal-id g",
		"agent register --goal-id h --agent-id agent-a",
		"agent register --goal-id h --agent-id agent-b",
		"todo ready --goal-id h --agent-id agent-a --claim",
		"todo add --goal-id h --todo-id todo_hhh --text h",
		"todo ready --goal-id h --agent-id agent-a --claim --task-lease-idempotency-key kh --ttl-seconds 600",
		"task-lease transfer --goal-id h --todo-id todo_hhh --owner agent-a --idempotency-key kh --expected-version 1 --new-owner agent-b --new-idempotency-key kh2 --ttl-seconds 600 --transfer-claim",
		"task-lease transfer --goal-id h --todo-id todo_hhh --owner agent-a --idempotency-key kh --expected-version 1 --new-owner agent-b --new-idempotency-key kh2 --ttl-seconds 600 --transfer-claim",
		"agent unregister --goal-id g --agent-id agent-b",
		"log",
		"log --todo-id todo_one --goal-id g",
		"verify",
		"gc",
		"version",
		"goal archive --goal-id h",
	}
	for _, step := range steps {
		args := append([]string{"--repo", dir}, strings.Fields(step)...)
		if step == "version" {
			args = args[2:]
		}
		var out bytes.Buffer
		code := Run(args, &out, io.Discard)
		var v any
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Errorf("loopx %s: exit %d, output is not one JSON object: %q", step, code, out.String())
			continue
		}
		if code != 0 && code != 1 {
			t.Errorf("loopx %s: exit %d: %s", step, code, out.String())
		}
		for _, p := range findNulls(v, "") {
			t.Errorf("loopx %s: %s is null:\n%s", step, p, out.String())
		}
	}
}
