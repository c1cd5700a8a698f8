package mcp

import (
	"context"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/agent"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/lease"
)

// Request schemas of the mutation tools.
const (
	schemaReadyClaim    = "loopx.todo.ready-claim/v2"
	schemaClaim         = "loopx.todo.claim/v2"
	schemaUpdate        = "loopx.todo.update/v2"
	schemaComplete      = "loopx.todo.complete/v1"
	schemaAcquire       = "loopx.task-lease.acquire/v1"
	schemaRenew         = "loopx.task-lease.renew/v1"
	schemaTransfer      = "loopx.task-lease.transfer/v1"
	schemaTransferClaim = "loopx.task-lease.transfer-claim/v2"
	schemaRelease       = "loopx.task-lease.release/v1"
)

// Arguments of the read tools.
type todoArgs struct {
	Goal string `json:"goal_id" desc:"goal id (default: the server's --goal-id, else the store's default goal)"`
	Todo string `json:"todo_id" desc:"todo id" required:"true"`
}

type readyArgs struct {
	Goal  string `json:"goal_id" desc:"goal id (default: the server's --goal-id, else the store's default goal)"`
	Agent string `json:"agent_id" desc:"the agent looking for work (default: the goal's only agent)"`
}

type statusArgs struct {
	Goal  string `json:"goal_id" desc:"goal id (default: the server's --goal-id, else the store's default goal)"`
	Agent string `json:"agent_id" desc:"list the todos ready for this agent (default: ready for anybody)"`
}

type logArgs struct {
	Goal      string `json:"goal_id" desc:"goal id (default: the server's --goal-id, else the store's default goal)"`
	Todo      string `json:"todo_id" desc:"only this todo"`
	Agent     string `json:"agent_id" desc:"only this acting agent"`
	Operation string `json:"operation" desc:"only this operation (e.g. task-lease.acquire), or a prefix of operations (task-lease)"`
	Since     string `json:"since" desc:"only entries at or after this RFC 3339 time"`
	Limit     int    `json:"limit" desc:"at most this many entries, newest first (default 50)"`
}

var (
	claimProp = map[string]any{"type": "boolean",
		"description": "claim the first ready todo atomically (default false: only list them)"}
	waitProp = map[string]any{"type": "integer", "minimum": 0,
		"description": "with nothing to take yet (the lease held, a scope or claim conflicting, nothing ready), wait up to this many seconds for it, then answer what the request answers then; keep it under the client's tool-call timeout (default 0: decide once)"}
	transferClaimProp = map[string]any{"type": "boolean",
		"description": "also hand the todo's claim to new_owner in the same commit (hard_lease goals; the loopx.task-lease.transfer-claim/v2 request)"}
)

// readyClaimOnly are the ready arguments that need claim: true.
var readyClaimOnly = []string{"claim_ttl_minutes", "task_lease_idempotency_key", "ttl_seconds", argWait}

// tools is the tool set, in the order of the agent's loop.
func tools() []tool {
	return []tool{
		{
			name: "ready", title: "Find (and claim) work",
			desc: "List the todos agent_id may take now, highest priority first (open, dependencies done, not claimed or leased by another, not excluded). " +
				"With claim: true, claim the first one atomically instead (loopx todo ready --claim): optionally with a claim TTL, and with task_lease_idempotency_key and ttl_seconds its task lease in the same commit; " +
				`"claimed": false when nothing was ready. wait_seconds waits for work to become ready.`,
			schema: withDesc(requestSchema(schemaReadyClaim, map[string]any{argClaim: claimProp, argWait: waitProp}),
				"With claim: true, the fields of a "+schemaReadyClaim+" request (docs/request-schema.json); without it only goal_id and agent_id apply."),
			run: runReady,
		},
		{
			name: "claim", title: "Claim a todo",
			desc: "Claim a todo for agent_id (loopx todo claim), optionally expiring after claim_ttl_minutes, and with task_lease_idempotency_key and ttl_seconds acquiring its task lease in the same commit. " +
				"An orchestrator may delegate with claimed_by and scope_agent_id. Refused with claim_conflict while another agent's claim is in force.",
			schema: requestSchema(schemaClaim, nil), idempotent: true,
			run: applying(schemaClaim),
		},
		{
			name: "acquire", title: "Acquire a task lease",
			desc: "Start a new execution on a todo (loopx task-lease acquire): a fenced lease for owner with a new idempotency_key, for ttl_seconds, over write_scopes (default: the todo's required write scopes); it takes over an expired or released lease. " +
				"The result's lease has the version (pass it as expected_version to renew, transfer, release and as task_lease to complete and update) and the epoch (the fencing token). " +
				"The same arguments again replay the current execution. wait_seconds waits while the lease is held by another execution or a scope conflicts.",
			schema: requestSchema(schemaAcquire, map[string]any{argWait: waitProp}), idempotent: true,
			run: runAcquire,
		},
		{
			name: "renew", title: "Renew a task lease",
			desc: "Extend the current execution's lease to ttl_seconds from now (loopx task-lease renew); the proof is owner, idempotency_key and expected_version = the lease's current version, and the version goes up by one. " +
				"Renew at about a third of the TTL; a refusal (version_mismatch, lease_proof_mismatch, lease_not_active, ...) means the lease is lost: stop writing.",
			schema: requestSchema(schemaRenew, nil), idempotent: true,
			run: applying(schemaRenew),
		},
		{
			name: "transfer", title: "Hand a task lease over",
			desc: "Hand the execution to new_owner with its new_idempotency_key and ttl_seconds (loopx task-lease transfer); version and epoch go up by one, write scopes are kept. " +
				"transfer_claim: true also moves the todo's claim in the same commit (hard_lease goals).",
			schema: withDesc(requestSchema(schemaTransfer, map[string]any{argTransferClaim: transferClaimProp}),
				"The fields of a "+schemaTransfer+" request, or with transfer_claim: true of a "+schemaTransferClaim+" request (docs/request-schema.json)."),
			idempotent: true,
			run: func(_ context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
				joint, err := c.popBool(argTransferClaim)
				if err != nil {
					return nil, err
				}
				if joint {
					return c.apply(s, schemaTransferClaim)
				}
				return c.apply(s, schemaTransfer)
			},
		},
		{
			name: "release", title: "Release a task lease",
			desc: "End the current execution (loopx task-lease release) with its proof (owner, idempotency_key, expected_version); the claim stays. " +
				`Releasing a lease already released, or none at expected_version 0, is "no_change".`,
			schema: requestSchema(schemaRelease, nil), idempotent: true,
			run: applying(schemaRelease),
		},
		{
			name: "complete", title: "Complete a todo",
			desc: "Mark a todo done with evidence and a closing note (loopx todo complete). While the todo has a lease in force, task_lease {idempotency_key, expected_version} proves the execution, and the lease is released in the same commit. " +
				"Completing a done todo again is a replay.",
			schema: requestSchema(schemaComplete, nil), idempotent: true,
			run: applying(schemaComplete),
		},
		{
			name: "update", title: "Update a todo",
			desc: "Change a todo (loopx todo update): its text, a continuation note for whoever continues, its priority, excluded agents, or its claim (clear_claim; claimed_by for an orchestrator's reassignment). " +
				"While the todo has a lease in force, task_lease {idempotency_key, expected_version} proves the execution.",
			schema: requestSchema(schemaUpdate, nil),
			run:    applying(schemaUpdate),
		},
		{
			name: "show", title: "Show a todo", readOnly: true,
			desc:   "Read a todo (loopx todo show): its text, status, effective claim (claimed_by), notes, dependencies, what it unblocks, and its lease.",
			schema: argsSchema(todoArgs{}, "Which todo to show."),
			run: func(_ context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
				var a todoArgs
				if err := readArgs(c, &a); err != nil {
					return nil, err
				}
				return s.ShowTodo(a.Goal, a.Todo)
			},
		},
		{
			name: "inspect", title: "Inspect a task lease", readOnly: true,
			desc:   `Read a todo's current task lease (loopx task-lease inspect): owner, idempotency_key, version, epoch, status, write scopes, expiry and whether it is "effective" now (null when the todo never had one).`,
			schema: argsSchema(todoArgs{}, "Which todo's lease to inspect."),
			run: func(_ context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
				var a todoArgs
				if err := readArgs(c, &a); err != nil {
					return nil, err
				}
				return s.Inspect(a.Goal, a.Todo)
			},
		},
		{
			name: "status", title: "Who holds what", readOnly: true,
			desc:   "Who holds what in a goal (loopx status): the claims and leases in force with owner, epoch, write scopes and seconds left, soonest expiry first; the holders no longer in force not yet taken over; and the todos ready now (for agent_id, or for anybody).",
			schema: argsSchema(statusArgs{}, "Which goal, and whose ready todos."),
			run: func(_ context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
				var a statusArgs
				if err := readArgs(c, &a); err != nil {
					return nil, err
				}
				return s.Status(a.Goal, a.Agent)
			},
		},
		{
			name: "log", title: "Audit trail", readOnly: true,
			desc:   "The audit trail read from the state ref's Git history (loopx log), newest first: each entry's revision, time, operation, acting agent, todo, status, lease version and epoch, and whether its commit verifies (integrity).",
			schema: argsSchema(logArgs{}, "Filters of the audit trail (none: the latest entries of every goal)."),
			run:    runLog,
		},
	}
}

func withDesc(s map[string]any, desc string) map[string]any {
	s["description"] = desc
	return s
}

// applying is the run of a tool whose arguments are one request of schema
// id.
func applying(id string) func(context.Context, *loopx.Store, *call) (loopx.Reply, error) {
	return func(_ context.Context, s *loopx.Store, c *call) (loopx.Reply, error) { return c.apply(s, id) }
}

func runReady(ctx context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
	claim, err := c.popBool(argClaim)
	if err != nil {
		return nil, err
	}
	if !claim {
		for _, f := range readyClaimOnly {
			if raw, ok := c.args[f]; ok && string(raw) != "null" {
				return nil, fieldError(f, "%s has no effect without claim: true", f).With("needs", argClaim)
			}
		}
		var a readyArgs
		if err := readArgs(c, &a); err != nil {
			return nil, err
		}
		return s.Ready(a.Goal, a.Agent)
	}
	return applyWaiting(s, c, schemaReadyClaim, func(req lease.Call, w agent.WaitOptions) (loopx.Reply, error) {
		return agent.ReadyClaimWait(ctx, s, *req.Req.(*lease.ReadyClaimRequest), w)
	})
}

func runAcquire(ctx context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
	return applyWaiting(s, c, schemaAcquire, func(req lease.Call, w agent.WaitOptions) (loopx.Reply, error) {
		return agent.AcquireWait(ctx, s, *req.Req.(*lease.AcquireRequest), w)
	})
}

// applyWaiting applies the call's request of schema, through wait when the
// call gives wait_seconds.
func applyWaiting(s *loopx.Store, c *call, schema string, wait func(lease.Call, agent.WaitOptions) (loopx.Reply, error)) (loopx.Reply, error) {
	d, waiting, err := c.popWait()
	if err != nil {
		return nil, err
	}
	data, err := c.request(schema)
	if err != nil {
		return nil, err
	}
	req, err := lease.DecodeWireRequest(data)
	if err != nil {
		return nil, err
	}
	if waiting {
		return wait(req, agent.WaitOptions{Timeout: d})
	}
	return s.Apply(req)
}

// runLog reads the audit trail with the checks of `loopx log`.
func runLog(_ context.Context, s *loopx.Store, c *call) (loopx.Reply, error) {
	var a logArgs
	if err := readArgs(c, &a); err != nil {
		return nil, err
	}
	q := audit.LogQuery{Goal: a.Goal, Todo: a.Todo, Agent: a.Agent, Operation: a.Operation, Limit: a.Limit}
	if q.Todo != "" {
		if err := lease.CheckTodoID(q.Todo); err != nil {
			return nil, err
		}
	}
	if a.Since != "" {
		t, err := time.Parse(time.RFC3339, a.Since)
		if err != nil {
			return nil, fieldError("since", "since %q is not an RFC 3339 time", a.Since)
		}
		q.Since = t
	}
	if q.Limit < 0 {
		return nil, fieldError("limit", "limit must be positive")
	}
	return audit.New(s).Log(q)
}
