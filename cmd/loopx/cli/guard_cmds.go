package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
)

func guardCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "guard",
		Short: "Enforce write scopes at commit time (a pre-commit hook)",
		Long: `guard refuses a commit whose staged paths fall inside the write scope of
another agent's effective task lease. ` + "`loopx guard install`" + ` adds the check to the
repository's pre-commit hook; ` + "`loopx guard check`" + ` runs it by hand.

The acting agent is --agent-id, else $LOOPX_AGENT_ID, else ` + "`git config loopx.agent`" + `.
An agent whose own effective lease covers a path may commit it. Every goal of
the store is checked. A repository without a loopx store always passes.`,
		Example: "  loopx guard install\n  loopx guard check --agent-id agent-b --staged",
	}
	install := &cobra.Command{
		Use:   "install",
		Short: "Install the pre-commit hook (chained after any existing hook)",
		Long: `install writes loopx's block into the pre-commit hook of the repository
(core.hooksPath respected). An existing hook is never overwritten: it is kept as
pre-commit.loopx-chained and runs first; when it fails, the commit stops there.
Running install again changes nothing. The hook calls this loopx executable by
its absolute path while it exists, else ` + "`loopx`" + ` on PATH.`,
		Example: "  loopx guard install\n  git config loopx.agent agent-a   # who commits in this clone",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			exe := hookExecutable()
			return e.run(func(s *loopx.Store) (*loopx.Result, error) { return s.GuardInstall(exe) })
		},
	}
	var agent string
	var staged bool
	check := &cobra.Command{
		Use:   "check [--agent-id A] (--staged | PATH...)",
		Short: "Refuse paths inside another agent's leased write scope",
		Long: `check exits 1 with write_scope_conflict when a path falls inside a write
scope of another agent's effective task lease, naming the todo, the owner and
the expiry. PATHs are relative to the top of the working tree; --staged checks
the paths staged for the next commit (what the pre-commit hook runs).`,
		Example: "  loopx guard check --staged\n" +
			"  loopx guard check --agent-id agent-b src/a.go docs/guide.md\n" +
			"  LOOPX_AGENT_ID=agent-b loopx guard check --staged --format json",
		RunE: func(c *cobra.Command, args []string) error {
			if staged == (len(args) > 0) {
				return usageError("give either --staged or the paths to check (see `%s --help`)", c.CommandPath())
			}
			if agent == "" {
				agent = os.Getenv("LOOPX_AGENT_ID")
			}
			return e.run(func(s *loopx.Store) (*loopx.Result, error) { return s.GuardCheck(agent, staged, args) })
		},
	}
	check.Flags().StringVar(&agent, "agent-id", "", "the committing agent (default $LOOPX_AGENT_ID, else git config loopx.agent)")
	check.Flags().BoolVar(&staged, "staged", false, "check the paths staged for the next commit")
	c.AddCommand(install, check)
	return c
}

// hookExecutable is the absolute path of this loopx executable for the hook
// to call, or "" when it does not look like a loopx binary (for example a
// test binary running the command line in-process): the hook then calls
// `loopx` on PATH.
func hookExecutable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if name := strings.TrimSuffix(filepath.Base(exe), ".exe"); name != "loopx" {
		return ""
	}
	if abs, err := filepath.Abs(exe); err == nil {
		return abs
	}
	return ""
}
