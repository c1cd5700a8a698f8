package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
)

func guardCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "guard",
		Short: "Enforce write scopes at commit and push time (pre-commit and pre-push hooks)",
		Long: `guard refuses a commit whose staged paths fall inside the write scope of
another agent's effective task lease. ` + "`loopx guard install`" + ` adds the check to the
repository's pre-commit hook; ` + "`loopx guard check`" + ` runs it by hand.

` + "`loopx guard install --pre-push`" + ` and ` + "`loopx guard check --range A..B`" + ` check what is
pushed instead: every commit of the range, each against the leases in force
when it was made (its committer time), as the agent that made it. Amended,
rebased and --no-verify commits are covered, since the check is on the commits
themselves, not on what was staged.

The acting agent is --agent-id, else $LOOPX_AGENT_ID, else ` + "`git config loopx.agent`" + `
(for a pushed commit, its Loopx-Agent trailer comes first, and the author
e-mail's local part last, when it is a registered agent). An agent whose own
effective lease covers a path may commit it. Every goal of the store is
checked. A repository without a loopx store always passes.`,
		Example: "  loopx guard install\n  loopx guard install --pre-push\n  loopx guard check --agent-id agent-b --staged\n  loopx guard check --range origin/main..HEAD",
	}
	var prePushHook bool
	install := &cobra.Command{
		Use:   "install [--pre-push]",
		Short: "Install the pre-commit (or pre-push) hook, chained after any existing hook",
		Long: `install writes loopx's block into the pre-commit hook of the repository
(core.hooksPath respected), or with --pre-push into the pre-push hook, which
checks every commit being pushed (` + "`loopx guard check --pre-push`" + `). An existing
hook is never overwritten: it is kept as <hook>.loopx-chained and runs first
(a pre-push hook gets the same stdin); when it fails, git stops there. Running
install again changes nothing. The hook calls this loopx executable by its
absolute path while it exists, else ` + "`loopx`" + ` on PATH.`,
		Example: "  loopx guard install\n  loopx guard install --pre-push\n  git config loopx.agent agent-a   # who commits in this clone",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			exe := hookExecutable()
			hook := audit.GuardHookPreCommit
			if prePushHook {
				hook = audit.GuardHookPrePush
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).GuardInstallHook(hook, exe) })
		},
	}
	install.Flags().BoolVar(&prePushHook, "pre-push", false, "install the pre-push hook (checks every pushed commit) instead of the pre-commit hook")
	var agent, rangeArg string
	var staged, prePush bool
	check := &cobra.Command{
		Use:   "check [--agent-id A] (--staged | PATH... | --range A..B | --pre-push)",
		Short: "Refuse paths (or commits) inside another agent's leased write scope",
		Long: `check exits 1 with write_scope_conflict when a path falls inside a write
scope of another agent's effective task lease, naming the todo, the owner and
the expiry. PATHs are relative to the top of the working tree; --staged checks
the paths staged for the next commit (what the pre-commit hook runs).

--range A..B checks every commit reachable from B and not from A (git's
meaning of A..B), each against the leases in force at its committer time (the
state ref's history then) and as the agent that made it: its Loopx-Agent
trailer, else --agent-id / $LOOPX_AGENT_ID / git config loopx.agent, else its
author e-mail's local part when that is a registered agent. A refusal names
the commit, the path, the lease's owner and scope. --pre-push reads the lines
git hands a pre-push hook on stdin and checks the commits each ref would send
(for a new branch: those on no remote-tracking branch); this is what the
hook installed by ` + "`loopx guard install --pre-push`" + ` runs.`,
		Example: "  loopx guard check --staged\n" +
			"  loopx guard check --agent-id agent-b src/a.go docs/guide.md\n" +
			"  LOOPX_AGENT_ID=agent-b loopx guard check --staged --format json\n" +
			"  loopx guard check --range origin/main..HEAD\n" +
			"  loopx guard check --range \"$BASE_SHA..$HEAD_SHA\"   # in CI, on a pull request",
		RunE: func(c *cobra.Command, args []string) error {
			modes := 0
			for _, on := range []bool{staged, len(args) > 0, rangeArg != "", prePush} {
				if on {
					modes++
				}
			}
			if modes != 1 {
				return usageError("give one of --staged, the paths to check, --range A..B or --pre-push (see `%s --help`)", c.CommandPath())
			}
			if c.Flags().Changed("range") && rangeArg == "" {
				return usageError("--range needs A..B")
			}
			if agent == "" {
				agent = os.Getenv("LOOPX_AGENT_ID")
			}
			if rangeArg != "" || prePush {
				req := audit.GuardRangeRequest{Agent: agent, Range: rangeArg, PrePush: prePush}
				if prePush {
					if isTerminal(os.Stdin) {
						return usageError("--pre-push reads the lines git hands a pre-push hook on stdin; for a range by hand use --range A..B")
					}
					ups, err := audit.ParsePushUpdates(os.Stdin)
					if err != nil {
						return err
					}
					req.Updates = ups
				}
				return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).GuardRange(req) })
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).GuardCheck(agent, staged, args) })
		},
	}
	check.Flags().StringVar(&agent, "agent-id", "", "the committing agent (default $LOOPX_AGENT_ID, else git config loopx.agent)")
	check.Flags().BoolVar(&staged, "staged", false, "check the paths staged for the next commit")
	check.Flags().StringVar(&rangeArg, "range", "", "check every commit of A..B (reachable from B, not from A)")
	check.Flags().BoolVar(&prePush, "pre-push", false, "check the commits of a push, read as the pre-push hook's stdin lines")
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
