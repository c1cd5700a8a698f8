package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/agent"
	"github.com/loopx-dev/loopx/lease"
)

// leaseFlags are the flags of the seed's task-lease command lines.
type leaseFlags struct {
	todo, owner, key, newOwner, newKey string
	expected, ttl                      int64
	scopes                             []string
	transferClaim                      bool
}

func (f *leaseFlags) bind(c *cobra.Command, withTTL bool) {
	c.Flags().StringVar(&f.todo, "todo-id", "", "todo id")
	c.Flags().StringVar(&f.owner, "owner", "", "lease owner (the acting agent)")
	c.Flags().StringVar(&f.key, "idempotency-key", "", "execution key of the owner's execution")
	c.Flags().Int64Var(&f.expected, "expected-version", 0, "the lease version you read (0 when there is none)")
	if withTTL {
		c.Flags().Int64Var(&f.ttl, "ttl-seconds", 0, "lease time to live, 1..86400")
	}
}

// expected returns the --expected-version when given.
func (f *leaseFlags) expectedVersion(c *cobra.Command) *int64 {
	if !c.Flags().Changed("expected-version") {
		return nil
	}
	v := f.expected
	return &v
}

func leaseCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "task-lease",
		Short: "Acquire, renew, transfer, release and inspect task leases",
		Long: `A task lease is execution authority over one todo: owner, execution key
(idempotency key), version (bumped by every change), epoch (fencing token,
bumped by every new execution), expiry and write scopes. Retry an ambiguous
result with the same arguments: it is replayed, never applied twice.`,
	}
	var f leaseFlags
	var acquireWait time.Duration
	acquire := &cobra.Command{
		Use:   "acquire",
		Short: "Start a new execution on a todo (or take over after expiry or release)",
		Example: `  loopx --registry registry.json task-lease acquire \
    --goal-id example-goal --todo-id todo_work --owner agent-a \
    --idempotency-key execution-a --expected-version 0 \
    --ttl-seconds 600 --write-scope 'src/**'`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req := lease.AcquireRequest{Goal: e.goal, Todo: f.todo, Owner: f.owner, IdempotencyKey: f.key,
				ExpectedVersion: f.expectedVersion(c), TTLSeconds: f.ttl, WriteScopes: f.scopes}
			if c.Flags().Changed("wait") {
				return e.runWait(acquireWait, func(s *loopx.Store, w agent.WaitOptions) (loopx.Reply, error) {
					return agent.AcquireWait(context.Background(), s, req, w)
				})
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Acquire(req) })
		},
	}
	f.bind(acquire, true)
	acquire.Flags().StringArrayVar(&f.scopes, "write-scope", nil, "path glob this execution writes (repeatable)")
	acquire.Flags().DurationVar(&acquireWait, "wait", 0, "while the lease is held by another execution or a scope conflicts, wait up to this long (e.g. 5m)")

	var rf leaseFlags
	renew := &cobra.Command{
		Use:   "renew",
		Short: "Extend the current execution's lease (version+1)",
		Example: `  loopx --registry registry.json task-lease renew \
    --goal-id example-goal --todo-id todo_work --owner agent-b \
    --idempotency-key execution-b --expected-version 4 --ttl-seconds 600`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req := lease.RenewRequest{Goal: e.goal, Todo: rf.todo, Owner: rf.owner, IdempotencyKey: rf.key,
				ExpectedVersion: rf.expectedVersion(c), TTLSeconds: rf.ttl}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Renew(req) })
		},
	}
	rf.bind(renew, true)

	var tf leaseFlags
	transfer := &cobra.Command{
		Use:   "transfer",
		Short: "Hand the execution to another agent (version+1, epoch+1); --transfer-claim moves the claim too",
		Example: `  loopx --registry registry.json task-lease transfer \
    --goal-id example-goal --todo-id todo_work --owner agent-a \
    --idempotency-key execution-a --expected-version 3 \
    --new-owner agent-b --new-idempotency-key execution-b --ttl-seconds 600 \
    --transfer-claim --format json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req := lease.TransferRequest{Goal: e.goal, Todo: tf.todo, Owner: tf.owner, IdempotencyKey: tf.key,
				ExpectedVersion: tf.expectedVersion(c), NewOwner: tf.newOwner, NewIdempotencyKey: tf.newKey,
				TTLSeconds: tf.ttl, TransferClaim: tf.transferClaim}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Transfer(req) })
		},
	}
	tf.bind(transfer, true)
	transfer.Flags().StringVar(&tf.newOwner, "new-owner", "", "the receiving agent")
	transfer.Flags().StringVar(&tf.newKey, "new-idempotency-key", "", "the receiver's new execution key")
	transfer.Flags().BoolVar(&tf.transferClaim, "transfer-claim", false, "hard_lease goals: move the todo claim in the same commit")

	var lf leaseFlags
	release := &cobra.Command{
		Use:   "release",
		Short: "End the current execution (version and epoch kept)",
		Example: `  loopx --registry registry.json task-lease release \
    --goal-id example-goal --todo-id todo_work --owner agent-b \
    --idempotency-key execution-b --expected-version 5`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req := lease.ReleaseRequest{Goal: e.goal, Todo: lf.todo, Owner: lf.owner, IdempotencyKey: lf.key,
				ExpectedVersion: lf.expectedVersion(c)}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Release(req) })
		},
	}
	lf.bind(release, false)

	var todo string
	inspect := &cobra.Command{
		Use:   "inspect",
		Short: "Read a todo's current lease and whether it is effective",
		Example: `  loopx --registry registry.json task-lease inspect \
    --goal-id example-goal --todo-id todo_work --format json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Inspect(e.goal, todo) })
		},
	}
	inspect.Flags().StringVar(&todo, "todo-id", "", "todo id")
	c.AddCommand(acquire, renew, transfer, release, inspect)
	return c
}
