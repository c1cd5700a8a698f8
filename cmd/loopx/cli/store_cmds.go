package cli

import (
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/lease"
)

func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected argument %q (see `%s --help`)", args[0], c.CommandPath())
	}
	return nil
}

func initCmd(e *env) *cobra.Command {
	var in loopx.InitOptions
	var adminKey string
	c := &cobra.Command{
		Use:   "init",
		Short: "Create the state ref (and the Git repository if needed) and the registry file",
		Long: `init creates the state ref and writes the registry file (default
.loopx/registry.json; with --registry FILE, that file). It runs ` + "`git init`" + ` first
when the folder is not inside a repository. Running it again changes nothing.`,
		Example: "  loopx init\n  loopx init --registry registry.json\n  loopx init --ref refs/heads/loopx",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o, err := e.options()
			if err != nil {
				return err
			}
			in.RegistryFile = e.registry
			if c.Flags().Changed("registry") == false && os.Getenv("LOOPX_REGISTRY") != "" {
				in.RegistryFile = os.Getenv("LOOPX_REGISTRY")
			}
			o.Registry = ""
			in.DefaultGoal = e.goal
			if adminKey != "" {
				key, err := readKeyFile("admin-key", adminKey)
				if err != nil {
					return err
				}
				in.AdminKey = key
			}
			res, err := loopx.Init(o, in)
			if err != nil {
				return err
			}
			return e.print(res)
		},
	}
	c.Flags().StringVar(&in.Ref, "ref", "", "state ref (default refs/loopx/state)")
	c.Flags().StringVar(&in.Remote, "remote", "", "remote that holds the shared state ref")
	c.Flags().Int64Var(&in.MaxClockSkewSeconds, "max-clock-skew-seconds", 0, "how far the head may be dated ahead of a deciding machine's clock (default 30)")
	c.Flags().BoolVar(&in.Force, "force", false, "start a store on --ref although the repository's store is on another ref (which is kept)")
	c.Flags().BoolVar(&in.RequireSignatures, "require-signatures", false, "every later state commit must be signed by its acting agent's registered key (cannot be turned off; needs an admin with a key)")
	c.Flags().StringVar(&in.Admin, "admin", "", "add an admin (the first closes an open store; see `loopx admin --help`)")
	c.Flags().StringVar(&adminKey, "admin-key", "", "the admin's SSH public key file (FILE.pub)")
	c.Flags().StringVar(&in.Registration, "registration", "", "who registers agents: open (agents themselves) or admin")
	c.Flags().StringVar(&in.By, "by", "", "the admin who changes the settings of a store that has admins")
	c.Flags().BoolVar(&in.Adopt, "adopt", false, "with --remote: take the remote's store although it is another than this clone's (this clone's history is kept under refs/loopx/backup/)")
	return c
}

func goalCmd(e *env) *cobra.Command {
	c := &cobra.Command{Use: "goal", Short: "Create, show, list and archive goals"}
	var req lease.GoalCreateRequest
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a goal",
		Example: "  loopx goal create --goal-id example-goal --title 'Ship the parser' --handoff-mode hard_lease",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			if req.Goal == "" {
				return lease.Errorf(lease.CodeInvalidGoalID, "goal id is required (--goal-id)")
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.CreateGoal(req) })
		},
	}
	create.Flags().StringVar(&req.Title, "title", "", "title (default: the goal id)")
	create.Flags().StringVar(&req.HandoffMode, "handoff-mode", lease.HandoffSoftClaim, "soft_claim or hard_lease")
	create.Flags().StringVar(&req.Actor, "agent-id", "", "acting agent (recorded as author)")
	show := &cobra.Command{
		Use: "show", Short: "Show a goal", Args: noArgs,
		Example: "  loopx goal show --goal-id example-goal",
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ShowGoal(e.goal) })
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List goals", Args: noArgs,
		Example: "  loopx goal list --format json",
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ListGoals() })
		},
	}
	var actor string
	archive := &cobra.Command{
		Use: "archive", Short: "Archive a goal (its records stay; mutations are refused); --goal-id is required", Args: noArgs,
		Example: "  loopx goal archive --goal-id example-goal",
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ArchiveGoal(e.goal, actor) })
		},
	}
	archive.Flags().StringVar(&actor, "agent-id", "", "acting agent (recorded as author); in a store with admins, an admin")
	archive.Flags().StringVar(&actor, "by", "", "the admin who archives it (the same as --agent-id)")
	unarchive := &cobra.Command{
		Use: "unarchive", Short: "Make an archived goal active again (--goal-id is required)", Args: noArgs,
		Example: "  loopx goal unarchive --goal-id example-goal",
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.UnarchiveGoal(e.goal, actor) })
		},
	}
	unarchive.Flags().StringVar(&actor, "agent-id", "", "acting agent (recorded as author); in a store with admins, an admin")
	unarchive.Flags().StringVar(&actor, "by", "", "the admin who unarchives it (the same as --agent-id)")
	c.AddCommand(create, show, list, archive, unarchive)
	return c
}

func agentCmd(e *env) *cobra.Command {
	c := &cobra.Command{Use: "agent", Short: "Register, unregister and list the agents of a goal"}
	var req lease.RegisterRequest
	var authority, keyFile string
	register := &cobra.Command{
		Use:   "register",
		Short: "Register an agent in a goal",
		Example: "  loopx agent register --agent-id agent-a\n" +
			"  loopx agent register --agent-id lead --role orchestrator --lifecycle-authority complete,reassign --requires-reason\n" +
			"  loopx agent register --agent-id agent-a --signing-key ~/.ssh/id_ed25519.pub",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			req.LifecycleAuthority = splitList(authority)
			if c.Flags().Changed("signing-key") {
				data, err := os.ReadFile(keyFile)
				if err != nil {
					return lease.Errorf(lease.CodeInvalidRequest, "--signing-key: cannot read %s: %v", keyFile, err).With("field", "signing_key")
				}
				if strings.TrimSpace(string(data)) == "" {
					return lease.Errorf(lease.CodeInvalidRequest, "--signing-key: %s is empty", keyFile).With("field", "signing_key")
				}
				req.SigningKey = string(data)
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.RegisterAgent(req) })
		},
	}
	register.Flags().StringVar(&keyFile, "signing-key", "", "the agent's SSH public key file (FILE.pub: ed25519, or ECDSA, RSA >= 2048 bits), for signed commits")
	register.Flags().StringVar(&req.Agent, "agent-id", "", "agent id")
	register.Flags().StringVar(&req.Role, "role", lease.RoleAgent, "agent or orchestrator")
	register.Flags().StringVar(&authority, "lifecycle-authority", "", "comma-separated: complete,update,supersede,reassign (orchestrators)")
	register.Flags().BoolVar(&req.RequiresReason, "requires-reason", false, "the orchestrator must give --authority-reason when using its authority")
	register.Flags().StringVar(&req.By, "by", "", "the admin who registers the agent (in a store with admins: for orchestrators, lifecycle authority, another agent, or registration admin)")
	var unreq lease.UnregisterRequest
	unregister := &cobra.Command{
		Use: "unregister", Short: "Unregister an agent (its leases stop being effective): itself, or --by an orchestrator", Args: noArgs,
		Example: "  loopx agent unregister --agent-id agent-a\n  loopx agent unregister --agent-id agent-a --by lead",
		RunE: func(c *cobra.Command, args []string) error {
			unreq.Goal = e.goal
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.UnregisterAgent(unreq) })
		},
	}
	unregister.Flags().StringVar(&unreq.Agent, "agent-id", "", "the agent to unregister")
	unregister.Flags().StringVar(&unreq.By, "by", "", "who does it, when not the agent itself: an admin (in a store with admins), else a registered orchestrator (recorded as author)")
	list := &cobra.Command{
		Use: "list", Short: "List the agents of a goal", Args: noArgs,
		Example: "  loopx agent list --goal-id example-goal",
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ListAgents(e.goal) })
		},
	}
	c.AddCommand(register, unregister, list, rotateKeyCmd(e))
	return c
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func logCmd(e *env) *cobra.Command {
	var q audit.LogQuery
	var since string
	c := &cobra.Command{
		Use:   "log",
		Short: "Show the audit trail read from the state ref's commit trailers",
		Example: "  loopx log --limit 20\n  loopx log --todo-id todo_work --format json\n" +
			"  loopx log --agent-id agent-a --operation task-lease --since 2026-01-01T00:00:00Z",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			q.Goal = e.goal
			if q.Todo != "" {
				if err := lease.CheckTodoID(q.Todo); err != nil {
					return err
				}
			}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return lease.Errorf(lease.CodeInvalidRequest, "--since %q is not an RFC 3339 time", since)
				}
				q.Since = t
			}
			if q.Limit < 0 {
				return lease.Errorf(lease.CodeInvalidRequest, "--limit must be positive")
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return audit.New(s).Log(q) })
		},
	}
	c.Flags().StringVar(&q.Todo, "todo-id", "", "only this todo")
	c.Flags().StringVar(&q.Agent, "agent-id", "", "only this acting agent")
	c.Flags().StringVar(&q.Operation, "operation", "", "only this operation (e.g. task-lease.acquire, or task-lease)")
	c.Flags().StringVar(&since, "since", "", "only entries at or after this RFC 3339 time")
	c.Flags().IntVar(&q.Limit, "limit", audit.DefaultLogLimit, "at most this many entries")
	return c
}

func verifyCmd(e *env) *cobra.Command {
	var history, published bool
	var since string
	c := &cobra.Command{
		Use:   "verify",
		Short: "Check every record on the head (or, with --history, every commit) and report problems",
		Long: `verify exits 1 with code corrupt_record when any record is invalid; the problems list names each path.

With --history it re-verifies every commit of the state ref's first-parent
history (after --since REV): each state commit's recorded request, decided again
on its parent at its time, must give exactly its tree and message, and each
board commit must be the rendering of the state it names. The first commit
that does not hold is named (details revision and reason); commits made before
the store recorded requests are counted as unverifiable_older. A commit dated
more than the store's skew bound ahead of this machine's real clock (LOOPX_NOW
does not apply) is reported too (future_dated, code clock_skew), as the server
hook refuses it; --published also refuses offline commits pushed as they are.`,
		Example: "  loopx verify --format json\n  loopx verify --history\n  loopx verify --history --since 4f1c…",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			s, err := e.open()
			if err != nil {
				return err
			}
			defer s.Close()
			if history {
				collectForBigWork()
				res, err := audit.New(s).VerifyHistoryOf(audit.HistoryQuery{Since: since, Published: published})
				if err != nil {
					return err
				}
				return e.print(res)
			}
			res, err := s.Verify()
			if err != nil {
				return err
			}
			d := res.Data
			if !d.OK && len(d.Problems) == 0 && d.ClockSkew != nil {
				return lease.Errorf(lease.CodeClockSkew, "the store's head is dated %s, beyond %ds ahead of this machine's clock (%s): mutations are refused; see `loopx clock-reset --help`",
					d.ClockSkew.HeadTime, d.ClockSkew.MaxClockSkewSeconds, d.ClockSkew.LocalTime).
					With("head_time", d.ClockSkew.HeadTime).With("local_time", d.ClockSkew.LocalTime).
					With("max_clock_skew_seconds", d.ClockSkew.MaxClockSkewSeconds)
			}
			if !d.OK {
				le := lease.Errorf(lease.CodeCorruptRecord, "%d invalid record(s); first: %s", len(d.Problems), d.Problems[0].Path).
					With("path", d.Problems[0].Path).With("problems", d.Problems)
				return le
			}
			return e.print(res)
		},
	}
	c.Flags().BoolVar(&history, "history", false, "re-verify every commit of the state ref's history")
	c.Flags().StringVar(&since, "since", "", "with --history: only the commits after this revision")
	c.Flags().BoolVar(&published, "published", false, "with --history: check the history as a server holds it (offline commits pushed as they are do not verify); the hookless CI check")
	return c
}

func gcCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "gc",
		Short:   "Pack the store's loose objects (also runs automatically)",
		Example: "  loopx gc",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			collectForBigWork()
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.GC() })
		},
	}
}

// The collector. main.go turns Go's collector off under a 48 MiB limit,
// which suits the commands of a few milliseconds. Two kinds of command get
// a collector paced by their heap instead (no limit), unless GOGC or
// GOMEMLIMIT chose one:
//
//   - big work (collectForBigWork, GOGC=50): gc holds a whole history's
//     new pack, verify --history re-decides every commit; their heap
//     outgrows the limit, and the runtime then collected without pause.
//     An explicit GC of 3,000 mutations: 9.6 s (16.7 s of CPU), 90 MB
//     under the limit; 5.6 s (6.2 s), 123 MB with GOGC=50; 6.3 s, 151 MB
//     with Go's default of 100. verify --history of the same store:
//     17.5 → 7.4 s, 80 → 94 MB.
//   - long runs (collectForLongRun, Go's default of 100): web, mcp and run
//     live for minutes or hours, and with collection off their garbage
//     piles up to the limit: a run renewing every second held 43.9 MB
//     after 37 s and growing, 28.5 MB with the default.
const (
	bigWorkGCPercent = 50
	longRunGCPercent = 100
)

func collectForBigWork() { collectPacedByHeap(bigWorkGCPercent) }
func collectForLongRun() { collectPacedByHeap(longRunGCPercent) }

func collectPacedByHeap(percent int) {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
