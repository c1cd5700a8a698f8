package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
	"github.com/loopx-dev/loopx/loopxtest"
)

// The test binary is also loopx: with execAsLoopx set it runs the command
// line, so the tests start `loopx mcp` (and the twin's commands) as real
// processes without a build step.
const execAsLoopx = "LOOPX_MCP_TEST_EXEC_AS_LOOPX"

func TestMain(m *testing.M) {
	if os.Getenv(execAsLoopx) == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// loopxCmd is the loopx command line run in dir, with the test kit's
// environment (a fixed LOOPX_NOW, JSON output) and nothing of the
// caller's LOOPX_ or GIT_ settings.
func loopxCmd(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOOPX_") && !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range loopxtest.Env(time.Time{}) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, execAsLoopx+"=1", "HOME="+t.TempDir())
	return cmd
}

// cliRun runs one command and returns its stdout and exit code.
func cliRun(t *testing.T, dir, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := loopxCmd(t, dir, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), ee.ExitCode()
	}
	t.Fatalf("loopx %v: %v\n%s", args, err, stderr.String())
	return "", 0
}

func mustCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, code := cliRun(t, dir, "", args...)
	if code != 0 {
		t.Fatalf("loopx %v: exit %d: %s", args, code, out)
	}
	return out
}

// seedStore makes the same store in dir every time: two goals (so the
// server's --goal-id matters), three agents, three todos.
func seedStore(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init"},
		{"goal", "create", "--goal-id", "other"},
		{"goal", "create", "--goal-id", "g", "--handoff-mode", "hard_lease"},
		{"agent", "register", "--goal-id", "g", "--agent-id", "agent-a"},
		{"agent", "register", "--goal-id", "g", "--agent-id", "agent-b"},
		{"todo", "add", "--goal-id", "g", "--todo-id", "todo_one", "--text", "First", "--priority", "P1", "--required-write-scope", "src/**"},
		{"todo", "add", "--goal-id", "g", "--todo-id", "todo_two", "--text", "Second", "--depends-on", "todo_one"},
		{"todo", "add", "--goal-id", "g", "--todo-id", "todo_three", "--text", "Third", "--required-write-scope", "docs/**"},
	} {
		mustCLI(t, dir, args...)
	}
}

// connectProcess starts `loopx mcp ARGS...` in dir and connects the SDK's
// client to it over its stdin and stdout.
func connectProcess(t *testing.T, dir string, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := loopxCmd(t, dir, append([]string{"mcp"}, args...)...)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	client := sdk.NewClient(&sdk.Implementation{Name: "loopx-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to loopx mcp: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("loopx mcp did not exit 0 when its stdin closed: %v", cmd.ProcessState)
		}
	})
	return cs
}

// text is the one text content of a tool result.
func text(t *testing.T, r *sdk.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("want one content, got %d", len(r.Content))
	}
	tc, ok := r.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", r.Content[0])
	}
	return tc.Text
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return r
}

// errorCode is the contract code of a refusal's JSON.
func errorCode(t *testing.T, data string) string {
	t.Helper()
	var e struct {
		OK    bool `json:"ok"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &e); err != nil || e.OK {
		t.Fatalf("not a refusal: %s", data)
	}
	return e.Error.Code
}

// TestStdioSameAsCLI drives a real `loopx mcp` process through the SDK's
// client over stdio and runs the same steps through the command line on a
// twin store: every result and refusal is the same JSON, byte for byte
// (revisions included, so the commits are the same), and a refusal is a
// tool error carrying its contract code.
func TestStdioSameAsCLI(t *testing.T) {
	mcpDir, cliDir := t.TempDir(), t.TempDir()
	seedStore(t, mcpDir)
	seedStore(t, cliDir)
	cs := connectProcess(t, mcpDir, "--goal-id", "g")

	steps := []struct {
		tool  string
		args  map[string]any
		cli   []string // run with --goal-id g (but apply)
		stdin string   // for `loopx apply`
		code  string   // the refusal's contract code
	}{
		{tool: "ready", args: map[string]any{"agent_id": "agent-a"},
			cli: []string{"todo", "ready", "--agent-id", "agent-a"}},
		{tool: "claim", args: map[string]any{"todo_id": "todo_one", "agent_id": "agent-a", "claim_ttl_minutes": 30},
			cli: []string{"todo", "claim", "--todo-id", "todo_one", "--agent-id", "agent-a", "--claim-ttl-minutes", "30"}},
		{tool: "acquire", args: map[string]any{"todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a", "expected_version": 0, "ttl_seconds": 600},
			cli: []string{"task-lease", "acquire", "--todo-id", "todo_one", "--owner", "agent-a", "--idempotency-key", "exec-a", "--expected-version", "0", "--ttl-seconds", "600"}},
		// The same acquire again is a replay.
		{tool: "acquire", args: map[string]any{"todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a", "expected_version": 0, "ttl_seconds": 600},
			cli: []string{"task-lease", "acquire", "--todo-id", "todo_one", "--owner", "agent-a", "--idempotency-key", "exec-a", "--expected-version", "0", "--ttl-seconds", "600"}},
		// Another agent is refused while agent-a holds the claim.
		{tool: "acquire", args: map[string]any{"todo_id": "todo_one", "owner": "agent-b", "idempotency_key": "exec-x", "ttl_seconds": 60},
			cli:  []string{"task-lease", "acquire", "--todo-id", "todo_one", "--owner", "agent-b", "--idempotency-key", "exec-x", "--ttl-seconds", "60"},
			code: "claim_conflict"},
		{tool: "renew", args: map[string]any{"todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a", "expected_version": 1, "ttl_seconds": 900},
			cli: []string{"task-lease", "renew", "--todo-id", "todo_one", "--owner", "agent-a", "--idempotency-key", "exec-a", "--expected-version", "1", "--ttl-seconds", "900"}},
		{tool: "renew", args: map[string]any{"todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a", "expected_version": 7, "ttl_seconds": 60},
			cli:  []string{"task-lease", "renew", "--todo-id", "todo_one", "--owner", "agent-a", "--idempotency-key", "exec-a", "--expected-version", "7", "--ttl-seconds", "60"},
			code: "version_mismatch"},
		{tool: "update", args: map[string]any{"todo_id": "todo_one", "agent_id": "agent-a", "note": "Halfway <there> & on", "priority": "P0",
			"task_lease": map[string]any{"idempotency_key": "exec-a", "expected_version": 2}},
			cli: []string{"todo", "update", "--todo-id", "todo_one", "--agent-id", "agent-a", "--note", "Halfway <there> & on", "--priority", "P0",
				"--task-lease-idempotency-key", "exec-a", "--task-lease-expected-version", "2"}},
		{tool: "show", args: map[string]any{"todo_id": "todo_one"},
			cli: []string{"todo", "show", "--todo-id", "todo_one"}},
		{tool: "inspect", args: map[string]any{"todo_id": "todo_one"},
			cli: []string{"task-lease", "inspect", "--todo-id", "todo_one"}},
		{tool: "transfer", args: map[string]any{"todo_id": "todo_one", "owner": "agent-a", "idempotency_key": "exec-a", "expected_version": 2,
			"new_owner": "agent-b", "new_idempotency_key": "exec-b", "ttl_seconds": 600, "transfer_claim": true},
			cli: []string{"task-lease", "transfer", "--todo-id", "todo_one", "--owner", "agent-a", "--idempotency-key", "exec-a", "--expected-version", "2",
				"--new-owner", "agent-b", "--new-idempotency-key", "exec-b", "--ttl-seconds", "600", "--transfer-claim"}},
		{tool: "release", args: map[string]any{"todo_id": "todo_one", "owner": "agent-b", "idempotency_key": "exec-b", "expected_version": 3},
			cli: []string{"task-lease", "release", "--todo-id", "todo_one", "--owner", "agent-b", "--idempotency-key", "exec-b", "--expected-version", "3"}},
		{tool: "ready", args: map[string]any{"agent_id": "agent-a", "claim": true, "task_lease_idempotency_key": "exec-r", "ttl_seconds": 300},
			cli: []string{"todo", "ready", "--agent-id", "agent-a", "--claim", "--task-lease-idempotency-key", "exec-r", "--ttl-seconds", "300"}},
		{tool: "status", args: map[string]any{"agent_id": "agent-b"},
			cli: []string{"status", "--agent-id", "agent-b"}},
		{tool: "complete", args: map[string]any{"todo_id": "todo_three", "agent_id": "agent-a", "evidence": []string{"PR #1", "CI green"}, "note": "Done",
			"task_lease": map[string]any{"idempotency_key": "exec-r", "expected_version": 1}},
			cli: []string{"todo", "complete", "--todo-id", "todo_three", "--agent-id", "agent-a", "--evidence", "PR #1", "--evidence", "CI green", "--note", "Done",
				"--task-lease-idempotency-key", "exec-r", "--task-lease-expected-version", "1"}},
		{tool: "complete", args: map[string]any{"todo_id": "todo_zzz", "agent_id": "agent-a"},
			cli:  []string{"todo", "complete", "--todo-id", "todo_zzz", "--agent-id", "agent-a"},
			code: "todo_not_found"},
		// A field no request has: the strict decoder of `loopx apply` names it.
		{tool: "claim", args: map[string]any{"todo_id": "todo_two", "agent_id": "agent-b", "claim_ttl": 5},
			cli:   []string{"apply"},
			stdin: `{"schema":"loopx.todo.claim/v1","goal_id":"g","todo_id":"todo_two","agent_id":"agent-b","claim_ttl":5}`,
			code:  "invalid_request"},
		{tool: "log", args: map[string]any{},
			cli: []string{"log"}},
		{tool: "log", args: map[string]any{"todo_id": "todo_one", "operation": "task-lease", "limit": 2},
			cli: []string{"log", "--todo-id", "todo_one", "--operation", "task-lease", "--limit", "2"}},
	}
	for i, st := range steps {
		r := callTool(t, cs, st.tool, st.args)
		got := text(t, r)
		args := st.cli
		if args[0] != "apply" { // apply takes the goal from the request
			args = append(args, "--goal-id", "g")
		}
		want, code := cliRun(t, cliDir, st.stdin, args...)
		if got+"\n" != want {
			t.Errorf("step %d (%s): the tool and the command differ\ntool: %s\ncli:  %s", i, st.tool, got, want)
		}
		if r.IsError != (code != 0) {
			t.Errorf("step %d (%s): isError %v, but the command exited %d", i, st.tool, r.IsError, code)
		}
		if st.code == "" {
			if r.IsError {
				t.Errorf("step %d (%s): refused: %s", i, st.tool, got)
			}
			continue
		}
		if code != 1 {
			t.Errorf("step %d (%s): the command exited %d, want 1", i, st.tool, code)
		}
		if c := errorCode(t, got); c != st.code {
			t.Errorf("step %d (%s): code %s, want %s", i, st.tool, c, st.code)
		}
		var structured map[string]any
		raw, _ := json.Marshal(r.StructuredContent)
		if err := json.Unmarshal(raw, &structured); err != nil || structured["ok"] != false {
			t.Errorf("step %d (%s): structured content is not the refusal: %s", i, st.tool, raw)
		}
	}
	// The two histories are the same commits.
	mcpHead := mustCLI(t, mcpDir, "log", "--limit", "1000")
	cliHead := mustCLI(t, cliDir, "log", "--limit", "1000")
	if mcpHead != cliHead {
		t.Errorf("the histories differ:\nmcp: %s\ncli: %s", mcpHead, cliHead)
	}
}

// TestStdioTools lists the tools of a real `loopx mcp` process: exactly
// the operations of the agent's loop, each described, with a closed input
// schema whose every property is described.
func TestStdioTools(t *testing.T) {
	cs := connectProcess(t, t.TempDir())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 60 {
			t.Errorf("%s: description too thin: %q", tool.Name, tool.Description)
		}
		schema, ok := tool.InputSchema.(map[string]any)
		if !ok {
			t.Fatalf("%s: input schema is %T", tool.Name, tool.InputSchema)
		}
		checkClosed(t, tool.Name, schema)
		props, _ := schema["properties"].(map[string]any)
		if _, ok := props["schema"]; ok {
			t.Errorf("%s: the tool names its schema; it is no argument", tool.Name)
		}
		if _, ok := props["goal_id"]; !ok {
			t.Errorf("%s: no goal_id argument", tool.Name)
		}
	}
	want := []string{"acquire", "claim", "complete", "inspect", "log", "ready", "release", "renew", "show", "status", "transfer", "update"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "loopx" || init.ServerInfo.Version != cli.Version || !strings.Contains(init.Instructions, "transient") {
		t.Errorf("server info %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
}

// checkClosed: an object schema allows no other properties, and every
// property (nested ones too) is typed and described.
func checkClosed(t *testing.T, where string, s map[string]any) {
	t.Helper()
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Errorf("%s: not a closed object schema: type %v, additionalProperties %v", where, s["type"], s["additionalProperties"])
	}
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		t.Errorf("%s: no properties", where)
	}
	for name, p := range props {
		p := p.(map[string]any)
		if d, _ := p["description"].(string); d == "" {
			t.Errorf("%s.%s: no description", where, name)
		}
		if p["type"] == nil {
			t.Errorf("%s.%s: no type", where, name)
		}
		if p["type"] == "object" {
			checkClosed(t, where+"."+name, p)
		}
	}
	req, _ := s["required"].([]any)
	for _, r := range req {
		if _, ok := props[r.(string)]; !ok {
			t.Errorf("%s: required %v is no property", where, r)
		}
	}
}
