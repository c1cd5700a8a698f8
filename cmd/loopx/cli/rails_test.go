package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// walk calls fn for c and every command under it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// TestRailTablesNameRealFlags: every row of the flag tables names a command
// of the tree and a flag that command has, so a renamed flag cannot leave a
// rail that silently never fires.
func TestRailTablesNameRealFlags(t *testing.T) {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
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
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
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
