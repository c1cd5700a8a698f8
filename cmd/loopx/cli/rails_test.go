package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestRailTablesNameRealFlags: every row of the flag tables names a command
// of the tree and a flag that command has, so a renamed flag cannot leave a
// rail that silently never fires.
func TestRailTablesNameRealFlags(t *testing.T) {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard}, nil)
	cmds := map[string]*cobra.Command{}
	walk(root, func(c *cobra.Command) { cmds[cmdKey(c)] = c })
	for _, row := range tableFlags() {
		c, ok := cmds[row[0]]
		if !ok {
			t.Errorf("flag table names command %q, which does not exist", row[0])
			continue
		}
		c.InitDefaultHelpFlag() // merges the persistent flags
		if c.Flags().Lookup(row[1]) == nil {
			t.Errorf("flag table names --%s of %q, which has no such flag", row[1], row[0])
		}
	}
}

// TestEveryGroupRefusesUnknownSubcommands: the rail covers the whole tree,
// including groups added later: every command with subcommands answers an
// unknown one, and a missing one, with the usage error and exit 2.
func TestEveryGroupRefusesUnknownSubcommands(t *testing.T) {
	t.Setenv("LOOPX_FORMAT", "json")
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard}, nil)
	var groups [][]string
	walk(root, func(c *cobra.Command) {
		if c.HasSubCommands() {
			groups = append(groups, strings.Fields(cmdKey(c)))
		}
	})
	if len(groups) < 6 {
		t.Fatalf("found %d groups, want at least root, goal, agent, todo, task-lease, guard, completion", len(groups))
	}
	for _, g := range groups {
		for _, args := range [][]string{append(g[:len(g):len(g)], "frobnicate"), g} {
			var out bytes.Buffer
			code := Run(args, &out, io.Discard)
			var res struct {
				OK    bool `json:"ok"`
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Errorf("loopx %s: output is not JSON: %q", strings.Join(args, " "), out.String())
				continue
			}
			if code != 2 || res.OK || res.Error.Code != "usage" {
				t.Errorf("loopx %s: exit %d, %s; want exit 2 and code usage", strings.Join(args, " "), code, out.String())
			}
		}
	}
}

// sampleFlagValues are values for the flags of the requiredFlags table.
var sampleFlagValues = map[string]string{
	"goal-id": "g", "agent-id": "agent-a", "todo-id": "todo_work", "text": "work", "reason": "why",
	"signing-key": "key.pub", "idempotency-key": "exec-1", "ttl-seconds": "60", "expected-version": "1",
	"new-owner": "agent-b", "new-idempotency-key": "exec-2", "task-lease-idempotency-key": "exec-1",
	"task-lease-expected-version": "1", "admin-id": "lead", "by": "lead",
}

// TestEveryRequiredFlagIsUsage: each row of requiredFlags, on its own
// command with the flags before it given, is refused with exit 2 and the
// field's code, naming the flag; given, that flag is never the complaint.
func TestEveryRequiredFlagIsUsage(t *testing.T) {
	t.Setenv("LOOPX_FORMAT", "json")
	repo := t.TempDir() // no store: a rail fires before one is opened
	for i, r := range requiredFlags {
		args := append(strings.Fields(r.cmd), "--repo", repo)
		give := func(flag string) {
			v, ok := sampleFlagValues[flag]
			if !ok {
				t.Fatalf("no sample value for --%s", flag)
			}
			args = append(args, "--"+flag, v)
		}
		for _, before := range requiredFlags[:i] {
			if before.cmd == r.cmd && before.when == "" {
				give(before.flag)
			}
		}
		if r.when != "" {
			give(r.when)
		}
		if r.cmd == "todo ready" {
			args = append(args, "--claim")
		}
		run := func(args []string) (int, string, map[string]any) {
			var out bytes.Buffer
			code := Run(args, &out, io.Discard)
			var res struct {
				Error map[string]any `json:"error"`
			}
			_ = json.Unmarshal(out.Bytes(), &res)
			return code, out.String(), res.Error
		}
		line := "loopx " + strings.Join(args, " ")
		code, out, e := run(args)
		if code != 2 || e["code"] != string(r.code) || e["flag"] != r.flag ||
			!strings.HasPrefix(fmt.Sprint(e["message"]), "--"+r.flag+" ") || !strings.Contains(fmt.Sprint(e["message"]), " is required") {
			t.Errorf("%s: exit %d, %s; want exit 2, code %s, flag %s", line, code, strings.TrimSpace(out), r.code, r.flag)
		}
		given := [][]string{append(args[:len(args):len(args)], "--"+r.flag, sampleFlagValues[r.flag])}
		if r.or != "" {
			given = append(given, append(args[:len(args):len(args)], "--"+r.or, sampleFlagValues[r.or]))
		}
		for _, args := range given {
			if code, out, e := run(args); code == 2 && e["flag"] == r.flag {
				t.Errorf("%s: still refused for --%s: %s", strings.Join(args, " "), r.flag, strings.TrimSpace(out))
			}
		}
	}
}
