package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestApplyPrintsTheCommandsText runs the same requests as commands in one
// store and as `loopx apply` in another with the same history and clock:
// each prints the same text, refusals included (contract: apply "prints
// exactly what the equivalent command prints").
func TestApplyPrintsTheCommandsText(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("LOOPX_FORMAT", "text")
	t.Setenv("LOOPX_NOW", "2026-01-01T00:00:00Z")
	for _, k := range []string{"LOOPX_GOAL", "LOOPX_REGISTRY", "LOOPX_AGENT_ID", "LOOPX_SIGNING_KEY", "SSH_AUTH_SOCK", "LOOPX_REMOTE", "LOOPX_OFFLINE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	cmdRepo, applyRepo := t.TempDir(), t.TempDir()
	run := func(repo, stdin string, args ...string) string {
		t.Helper()
		f, err := os.CreateTemp(t.TempDir(), "stdin")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(stdin)
		f.Seek(0, 0)
		old := os.Stdin
		os.Stdin = f
		defer func() { os.Stdin = old; f.Close() }()
		var out, errOut bytes.Buffer
		code := Run(append([]string{"--repo", repo}, args...), &out, &errOut)
		return strings.ReplaceAll(fmt.Sprintf("%s--- stderr\n%s--- exit %d", out.String(), errOut.String(), code), repo, "$REPO")
	}
	for _, repo := range []string{cmdRepo, applyRepo} {
		for _, step := range [][]string{
			{"init"},
			{"goal", "create", "--goal-id", "g"},
			{"agent", "register", "--goal-id", "g", "--agent-id", "agent-a"},
			{"agent", "register", "--goal-id", "g", "--agent-id", "agent-b"},
		} {
			run(repo, "", step...)
		}
	}
	for _, c := range []struct {
		args    []string
		request string
	}{
		{[]string{"todo", "add", "--goal-id", "g", "--todo-id", "todo_lexer", "--text", "Write the lexer", "--required-write-scope", "src/**", "--agent-id", "agent-a"},
			`{"schema":"loopx.todo.add/v1","goal_id":"g","todo_id":"todo_lexer","text":"Write the lexer","required_write_scopes":["src/**"],"agent_id":"agent-a"}`},
		{[]string{"todo", "claim", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a", "--claim-ttl-minutes", "30"},
			`{"schema":"loopx.todo.claim/v1","goal_id":"g","todo_id":"todo_lexer","agent_id":"agent-a","claim_ttl_minutes":30}`},
		{[]string{"todo", "claim", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-b"},
			`{"schema":"loopx.todo.claim/v1","goal_id":"g","todo_id":"todo_lexer","agent_id":"agent-b"}`},
		{[]string{"task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "exec-1", "--expected-version", "0", "--ttl-seconds", "600", "--write-scope", "src/**"},
			`{"schema":"loopx.task-lease.acquire/v1","goal_id":"g","todo_id":"todo_lexer","owner":"agent-a","idempotency_key":"exec-1","expected_version":0,"ttl_seconds":600,"write_scopes":["src/**"]}`},
		{[]string{"task-lease", "renew", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "exec-1", "--expected-version", "1", "--ttl-seconds", "600"},
			`{"schema":"loopx.task-lease.renew/v1","goal_id":"g","todo_id":"todo_lexer","owner":"agent-a","idempotency_key":"exec-1","expected_version":1,"ttl_seconds":600}`},
		{[]string{"task-lease", "release", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "exec-1", "--expected-version", "5"},
			`{"schema":"loopx.task-lease.release/v1","goal_id":"g","todo_id":"todo_lexer","owner":"agent-a","idempotency_key":"exec-1","expected_version":5}`},
		{[]string{"task-lease", "release", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "exec-1", "--expected-version", "2"},
			`{"schema":"loopx.task-lease.release/v1","goal_id":"g","todo_id":"todo_lexer","owner":"agent-a","idempotency_key":"exec-1","expected_version":2}`},
		{[]string{"todo", "complete", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a", "--evidence", "tests pass"},
			`{"schema":"loopx.todo.complete/v1","goal_id":"g","todo_id":"todo_lexer","agent_id":"agent-a","evidence":["tests pass"]}`},
	} {
		byCommand := run(cmdRepo, "", c.args...)
		byApply := run(applyRepo, c.request, "apply")
		if byCommand != byApply {
			t.Errorf("loopx %s prints\n%s\nloopx apply of %s prints\n%s", strings.Join(c.args, " "), byCommand, c.request, byApply)
		}
		if strings.HasPrefix(byCommand, "--- stderr\n--- exit") {
			t.Errorf("loopx %s printed nothing", strings.Join(c.args, " "))
		}
	}
}
