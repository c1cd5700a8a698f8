package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/agent"
	"github.com/loopx-dev/loopx/lease"
)

func todoCmd(e *env) *cobra.Command {
	c := &cobra.Command{Use: "todo", Short: "Add, find, claim, update and complete todos"}
	c.AddCommand(todoAddCmd(e), todoShowCmd(e), todoListCmd(e), todoReadyCmd(e), todoClaimCmd(e),
		todoUpdateCmd(e), todoCompleteCmd(e), todoSupersedeCmd(e), projectCmd(e))
	return c
}

func todoAddCmd(e *env) *cobra.Command {
	var req lease.AddRequest
	c := &cobra.Command{
		Use:   "add",
		Short: "Add a todo to a goal",
		Example: "  loopx todo add --text 'Write the parser' --priority P1 --required-write-scope 'src/parser/**'\n" +
			"  loopx todo add --todo-id todo_docs --text 'Document it' --depends-on todo_parser",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.AddTodo(req) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Text, "text", "", "what is to be done")
	f.StringVar(&req.Todo, "todo-id", "", "todo id (generated when omitted)")
	f.StringVar(&req.Priority, "priority", "", "P0 (highest) .. P4; default P2")
	f.StringArrayVar(&req.DependsOn, "depends-on", nil, "a todo that must be done first (repeatable)")
	f.StringArrayVar(&req.RequiredWriteScopes, "required-write-scope", nil, "path glob the work writes (repeatable)")
	f.StringVar(&req.BoundAgent, "bound-agent", "", "only this agent may work on it")
	f.StringArrayVar(&req.ExcludedAgents, "excluded-agent", nil, "an agent that may not work on it (repeatable)")
	f.StringVar(&req.Actor, "agent-id", "", "acting agent (recorded as author)")
	return c
}

func todoShowCmd(e *env) *cobra.Command {
	var todo string
	c := &cobra.Command{
		Use:     "show",
		Short:   "Show a todo, its effective claim, relations and lease",
		Example: "  loopx todo show --todo-id todo_001 | jq .claimed_by",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ShowTodo(e.goal, todo) })
		},
	}
	c.Flags().StringVar(&todo, "todo-id", "", "todo id")
	return c
}

func todoListCmd(e *env) *cobra.Command {
	var f loopx.TodoFilter
	c := &cobra.Command{
		Use:     "list",
		Short:   "List todos, highest priority first",
		Example: "  loopx todo list --status open\n  loopx todo list --agent-id agent-a --format json",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			f.Goal = e.goal
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ListTodos(f) })
		},
	}
	c.Flags().StringVar(&f.Status, "status", "", "open, done or superseded")
	c.Flags().StringVar(&f.Agent, "agent-id", "", "only todos this agent holds (claim or lease)")
	pageFlags(c, &f.Page)
	return c
}

// pageFlags are the flags of a list that prints a page of its entries.
func pageFlags(c *cobra.Command, p *loopx.Page) {
	c.Flags().IntVar(&p.Limit, "limit", 0, "at most this many todos (a page; the result then has total and next_offset)")
	c.Flags().IntVar(&p.Offset, "offset", 0, "with --limit: skip this many todos first (the next_offset of the previous page)")
}

func todoReadyCmd(e *env) *cobra.Command {
	var req lease.ReadyClaimRequest
	var claim bool
	var wait time.Duration
	var page loopx.Page
	c := &cobra.Command{
		Use:   "ready",
		Short: "List the todos an agent may take now; --claim takes the first one atomically",
		Long: `ready lists the todos an agent may take now, highest priority first, and
why each other open todo is not ready (not_ready: claimed, held by a lease,
dependencies open, a required scope overlapping another todo's lease,
excluded, bound to another agent).

--claim claims the first one atomically. With --wait, while nothing is ready
it waits (up to the duration), waking when the state ref moves or a holder
expires; in text mode it says on stderr what it waits for. It ends early,
answering "nothing claimed", when nothing can become ready for the agent:
every todo of the goal is closed, or every open one excludes the agent or is
bound to another.`,
		Example: "  loopx todo ready --agent-id agent-a\n" +
			"  loopx todo ready --agent-id agent-a --claim --claim-ttl-minutes 30",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			if claim && c.Flags().Changed("limit") {
				return usageError("--limit has no effect with --claim, which claims one todo (see `%s --help`)", c.CommandPath()).
					With("flag", "limit")
			}
			if claim && c.Flags().Changed("wait") {
				return e.runWait(wait, func(s *loopx.Store, w agent.WaitOptions) (loopx.Reply, error) {
					return agent.ReadyClaimWait(context.Background(), s, req, w)
				})
			}
			if claim {
				return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ReadyClaim(req) })
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ReadyPage(req.Goal, req.Actor, page) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Actor, "agent-id", "", "the agent looking for work")
	f.BoolVar(&claim, "claim", false, "claim the first ready todo")
	f.Int64Var(&req.ClaimTTLMinutes, "claim-ttl-minutes", 0, "with --claim: the claim expires after this many minutes")
	f.StringVar(&req.LeaseKey, "task-lease-idempotency-key", "", "with --claim: also acquire the task lease with this execution key")
	f.Int64Var(&req.LeaseTTLSeconds, "ttl-seconds", 0, "with --task-lease-idempotency-key: lease TTL")
	f.DurationVar(&wait, "wait", 0, "with --claim: while nothing is ready, wait up to this long (e.g. 5m); ends early when nothing can become ready")
	pageFlags(c, &page)
	return c
}

func todoClaimCmd(e *env) *cobra.Command {
	var req lease.ClaimRequest
	c := &cobra.Command{
		Use:   "claim",
		Short: "Claim a todo (optionally with a TTL, a scope agent, or its task lease in the same commit)",
		Example: "  loopx todo claim --todo-id todo_001 --claimed-by codex-agent --claim-ttl-minutes 30\n" +
			"  loopx todo claim --todo-id todo_001 --agent-id lead --claimed-by lead --scope-agent-id worker-1\n" +
			"  loopx todo claim --todo-id todo_001 --agent-id agent-a --task-lease-idempotency-key exec-1 --ttl-seconds 600",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Claim(req) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Todo, "todo-id", "", "todo id")
	f.StringVar(&req.Actor, "agent-id", "", "acting agent (default: --claimed-by, or the goal's only agent)")
	f.StringVar(&req.ClaimedBy, "claimed-by", "", "claim owner (default: the acting agent)")
	f.Int64Var(&req.ClaimTTLMinutes, "claim-ttl-minutes", 0, "the claim expires after this many minutes")
	f.StringVar(&req.ScopeAgent, "scope-agent-id", "", "orchestrators: the agent the claim is delegated to")
	f.StringVar(&req.LeaseKey, "task-lease-idempotency-key", "", "also acquire the task lease with this execution key")
	f.Int64Var(&req.LeaseTTLSeconds, "ttl-seconds", 0, "with --task-lease-idempotency-key: lease TTL")
	return c
}

// proofFlags binds the optional lease proof of update/complete/supersede.
func proofFlags(c *cobra.Command, key *string, version *int64) {
	c.Flags().StringVar(key, "task-lease-idempotency-key", "", "lease proof: the current execution key")
	c.Flags().Int64Var(version, "task-lease-expected-version", 0, "lease proof: the current lease version")
}

func proof(c *cobra.Command, key string, version int64) (*lease.Proof, error) {
	hasKey, hasVersion := c.Flags().Changed("task-lease-idempotency-key"), c.Flags().Changed("task-lease-expected-version")
	switch {
	case !hasKey && !hasVersion:
		return nil, nil
	case hasKey != hasVersion:
		return nil, lease.Errorf(lease.CodeLeaseFenceRequired, "the lease proof needs both --task-lease-idempotency-key and --task-lease-expected-version")
	}
	if err := lease.CheckIdempotencyKey("task lease idempotency key", key); err != nil {
		return nil, err
	}
	return &lease.Proof{IdempotencyKey: key, ExpectedVersion: version}, nil
}

func todoUpdateCmd(e *env) *cobra.Command {
	var req lease.UpdateRequest
	var text, key string
	var version int64
	c := &cobra.Command{
		Use:   "update",
		Short: "Update a todo (text, note, priority, exclusions, claim)",
		Example: "  loopx todo update --todo-id todo_001 --claimed-by codex-agent --text 'Refactor the data pipeline'\n" +
			"  loopx todo update --todo-id todo_001 --clear-claim\n" +
			"  loopx todo update --todo-id todo_work --agent-id agent-b --note 'Continue' --task-lease-idempotency-key execution-b --task-lease-expected-version 4",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			if c.Flags().Changed("text") {
				req.Text = &text
			}
			var err error
			if req.Proof, err = proof(c, key, version); err != nil {
				return err
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Update(req) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Todo, "todo-id", "", "todo id")
	f.StringVar(&req.Actor, "agent-id", "", "acting agent (default: --claimed-by, or the goal's only agent)")
	f.StringVar(&text, "text", "", "new text")
	f.StringVar(&req.Note, "note", "", "continuation note (kept byte for byte)")
	f.BoolVar(&req.ClearClaim, "clear-claim", false, "remove the claim")
	f.StringVar(&req.ClaimedBy, "claimed-by", "", "the claim owner acting (or, for an orchestrator, the new claim owner)")
	f.StringVar(&req.Priority, "priority", "", "new priority P0..P4")
	f.StringArrayVar(&req.ExcludeAgents, "exclude-agent", nil, "exclude an agent from this todo (repeatable)")
	f.StringVar(&req.AuthorityReason, "authority-reason", "", "why an orchestrator uses its lifecycle authority")
	proofFlags(c, &key, &version)
	return c
}

func todoCompleteCmd(e *env) *cobra.Command {
	var req lease.CompleteRequest
	var key string
	var version int64
	c := &cobra.Command{
		Use:   "complete",
		Short: "Complete a todo; a verified lease is released in the same commit",
		Example: "  loopx todo complete --todo-id todo_001 --agent-id agent-a --evidence 'PR #12 merged'\n" +
			"  loopx todo complete --todo-id todo_work --agent-id agent-b --task-lease-idempotency-key execution-b --task-lease-expected-version 5",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			var err error
			if req.Proof, err = proof(c, key, version); err != nil {
				return err
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Complete(req) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Todo, "todo-id", "", "todo id")
	f.StringVar(&req.Actor, "agent-id", "", "acting agent")
	f.StringArrayVar(&req.Evidence, "evidence", nil, "evidence of completion (repeatable)")
	f.StringVar(&req.Note, "note", "", "closing note")
	f.StringVar(&req.AuthorityReason, "authority-reason", "", "why an orchestrator uses its lifecycle authority")
	proofFlags(c, &key, &version)
	return c
}

func todoSupersedeCmd(e *env) *cobra.Command {
	var req lease.SupersedeRequest
	var key string
	var version int64
	c := &cobra.Command{
		Use:     "supersede",
		Short:   "Close a todo as superseded (optionally by another todo)",
		Example: "  loopx todo supersede --todo-id todo_old --agent-id agent-a --reason 'split in two' --by todo_new",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			var err error
			if req.Proof, err = proof(c, key, version); err != nil {
				return err
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Supersede(req) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Todo, "todo-id", "", "todo id")
	f.StringVar(&req.Actor, "agent-id", "", "acting agent")
	f.StringVar(&req.Reason, "reason", "", "why (required)")
	f.StringVar(&req.By, "by", "", "the todo that replaces it")
	f.StringVar(&req.AuthorityReason, "authority-reason", "", "why an orchestrator uses its lifecycle authority")
	proofFlags(c, &key, &version)
	return c
}

func projectCmd(e *env) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "project-markdown",
		Short: "Render the goal's board from the current head and commit it if it changed",
		Long: `project-markdown renders the goal's board from the current head and commits it
when it differs (this repairs a pending delivery). --output FILE also writes the
board to FILE; --output - writes the board bytes to stdout instead of the result
(an error then goes to stderr).`,
		Example: "  loopx todo project-markdown --goal-id example-goal\n  loopx todo project-markdown --output TODO.md\n" +
			"  loopx todo project-markdown --output - | less",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			e.boardOnStdout = output == "-"
			s, err := e.open()
			if err != nil {
				return err
			}
			defer s.Close()
			res, board, err := s.ProjectMarkdown(e.goal)
			if err != nil {
				return err
			}
			if output == "-" {
				if res.Projection == loopx.ProjectionPending {
					fmt.Fprintf(e.stderr, "loopx: the board was rendered but not committed (pending): %s\n", res.ProjectionError)
				}
				_, err := e.stdout.Write(board)
				return err
			}
			if output != "" {
				if err := os.WriteFile(output, board, 0o644); err != nil {
					return lease.Errorf(lease.CodeStoreIO, "write %s: %v: retry once the cause is fixed", output, err).With("path", output)
				}
			}
			return e.print(res)
		},
	}
	c.Flags().StringVar(&output, "output", "", "also write the board to this file; - writes it to stdout instead of the result")
	return c
}
