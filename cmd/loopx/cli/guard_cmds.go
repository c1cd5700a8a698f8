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

` + "`loopx guard install`" + ` also installs a commit-msg hook (` + "`loopx guard commit-msg`" + `) that
adds to each commit the Loopx-Agent trailer of its agent and one Loopx-Lease
GOAL/TODO@EPOCH trailer per effective lease of that agent covering a changed
path (inside ` + "`loopx run`" + `, the lease run holds): the code fence of the server
hook judges commits by them.

` + "`loopx guard install --pre-push`" + ` and ` + "`loopx guard check --range A..B`" + ` check what is
pushed instead, with the same judgement the server hook makes (the code
fence): every commit of the range, on the store's current state, as the agent
its Loopx-Agent trailer names: a path inside another agent's effective scope
is write_scope_conflict, a Loopx-Lease whose todo has since been held by
another agent is stale_epoch, and in a store that requires signatures an
unsigned commit into a leased scope is signature_required. Amended, rebased
and --no-verify commits are covered, since the check is on the commits
themselves.

At commit time (--staged, PATHs) the acting agent is --agent-id, else
$LOOPX_AGENT_ID, else ` + "`git config loopx.agent`" + `. An agent whose own effective lease
covers a path may commit it. Every goal of the store is checked. A repository
without a loopx store always passes. When the store's server cannot be
reached, the guard decides on the last state fetched from it and says so
(stale, with its age) instead of refusing every commit.`,
		Example: "  loopx guard install\n  loopx guard install --pre-push\n  loopx guard check --agent-id agent-b --staged\n  loopx guard check --range origin/main..HEAD",
	}
	var prePushHook bool
	install := &cobra.Command{
		Use:   "install [--pre-push]",
		Short: "Install the pre-commit (or pre-push) hook, chained after any existing hook",
		Long: `install writes loopx's block into the pre-commit hook of the repository
(core.hooksPath respected) and into its commit-msg hook (` + "`loopx guard commit-msg`" + `,
which adds the Loopx-Agent and Loopx-Lease trailers the code fence judges a
commit by), or with --pre-push into the pre-push hook, which checks every
commit being pushed (` + "`loopx guard check --pre-push`" + `). An existing
hook is never overwritten: it is kept as <hook>.loopx-chained and runs first
(a pre-push hook gets the same stdin); when it fails, git stops there. Running
install again changes nothing. The hook calls this loopx executable by its
absolute path while it exists, else ` + "`loopx`" + ` on PATH.`,
		Example: "  loopx guard install\n  loopx guard install --pre-push\n  git config loopx.agent agent-a   # who commits in this clone",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			exe := hookExecutable()
			if prePushHook {
				return e.run(func(s *loopx.Store) (loopx.Reply, error) {
					return audit.New(s).GuardInstallHook(audit.GuardHookPrePush, exe)
				})
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).GuardInstall(exe) })
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
meaning of A..B) with the code fence: on the store's current state, as the
agent its Loopx-Agent trailer names (no trailer: nobody's, so every effective
lease is another agent's). Each refusal is one line naming the commit, its
code and why. --pre-push reads the lines
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
			if rangeArg != "" || prePush {
				if agent != "" {
					return usageError("--agent-id has no effect with --range or --pre-push: a pushed commit is its Loopx-Agent trailer's (see `%s --help`)", c.CommandPath()).With("flag", "agent-id")
				}
				req := audit.GuardRangeRequest{Range: rangeArg, PrePush: prePush}
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
			if agent == "" {
				agent = os.Getenv("LOOPX_AGENT_ID")
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).GuardCheck(agent, staged, args) })
		},
	}
	check.Flags().StringVar(&agent, "agent-id", "", "with --staged or PATHs: the committing agent (default $LOOPX_AGENT_ID, else git config loopx.agent)")
	check.Flags().BoolVar(&staged, "staged", false, "check the paths staged for the next commit")
	check.Flags().StringVar(&rangeArg, "range", "", "check every commit of A..B (reachable from B, not from A)")
	check.Flags().BoolVar(&prePush, "pre-push", false, "check the commits of a push, read as the pre-push hook's stdin lines")
	var msgAgent string
	commitMsg := &cobra.Command{
		Use:   "commit-msg FILE",
		Short: "Add the Loopx-Agent and Loopx-Lease trailers to a commit message (the commit-msg hook)",
		Long: `commit-msg adds to the commit message in FILE (what git hands a commit-msg hook)
the trailers the code fence judges the commit by: Loopx-Agent, the committing
agent (inside ` + "`loopx run`" + ` its owner; else --agent-id, $LOOPX_AGENT_ID or
` + "`git config loopx.agent`" + `), and one Loopx-Lease: GOAL/TODO@EPOCH for each effective
lease of that agent whose write scope covers a staged path (inside ` + "`loopx run`" + `,
the lease it holds in any case). It reads the store as this clone last saw it
(never the network) and adds nothing when no agent is configured.`,
		Example: "  loopx guard commit-msg .git/COMMIT_EDITMSG",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("commit-msg takes one argument, the commit message file (see `%s --help`)", c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			run, err := audit.ParseRunLease(os.Getenv)
			if err != nil {
				return err
			}
			agent := msgAgent
			if agent == "" {
				agent = os.Getenv("LOOPX_AGENT_ID")
			}
			req := audit.CommitMsgRequest{File: args[0], Agent: agent, Run: run}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).CommitMsg(req) })
		},
	}
	commitMsg.Flags().StringVar(&msgAgent, "agent-id", "", "the committing agent (default $LOOPX_AGENT_ID, else git config loopx.agent; inside loopx run, its owner)")
	c.AddCommand(install, check, commitMsg)
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
