package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/agent"
	"github.com/loopx-dev/loopx/lease"
)

// ExitLeaseLost is the exit code of `loopx run` when the lease was lost
// while the command ran.
const ExitLeaseLost = 4

// exitStatus ends a command with a code of its own (run passes its
// command's status through); err, when set, is printed as usual first.
type exitStatus struct {
	code int
	err  *lease.Error
}

func (x *exitStatus) Error() string { return fmt.Sprintf("exit status %d", x.code) }

// exitCode returns the code an exitStatus error asks for, printing its
// error first.
func (e *env) exitCode(err error, args []string) (int, bool) {
	var x *exitStatus
	if !errors.As(err, &x) {
		return 0, false
	}
	if x.err != nil {
		if e.format == "" {
			e.format = formatFromArgs(args, e.stdout)
		}
		e.printError(x.err)
	}
	return x.code, true
}

func runCmd(e *env) *cobra.Command {
	var (
		req               agent.RunRequest
		scopes, evidence  []string
		claim, complete   bool
		grace, wait, poll time.Duration
		todo, owner, key  string
		ttl               int64
		note              string
		forwardedByParent = agent.ForwardedSignals
	)
	c := &cobra.Command{
		Use:   "run --todo-id ID --owner A --ttl-seconds N [--idempotency-key K] [flags] -- CMD [ARGS...]",
		Short: "Hold a task lease while a command runs: acquire, renew, release; exit with its status",
		Long: `run acquires the todo's task lease, runs CMD with LOOPX_GOAL, LOOPX_TODO,
LOOPX_OWNER, LOOPX_IDEMPOTENCY_KEY, LOOPX_EPOCH and LOOPX_VERSION in its
environment, renews the lease about every third of the TTL while CMD runs
(retrying transient failures with the same arguments), releases it when CMD
exits and exits with CMD's status. Signals sent to run are passed on to CMD.

Without --idempotency-key each run is a new execution under a generated key
(run-<16 hex digits>, printed on stderr in text mode and given to CMD as
LOOPX_IDEMPOTENCY_KEY): a run that failed (CMD exited non-zero, or the lease
was lost) is retried by running the same command line again. If the acquire
itself failed transiently (exit 3), the error names the generated key: retry
with --idempotency-key set to it, in case the acquire was applied.

With --idempotency-key K, run adopts the owner's current execution of K
whatever TTL, expected version or write scopes it was acquired with (say, by
task-lease acquire, or by a run that was cut off): it renews it at once with
its own --ttl-seconds and goes on as if it had acquired it. A K whose
execution ended (released by an earlier run, expired, taken over) is refused
with execution_not_current or idempotency_key_reuse: a new execution needs a
new key, or none.

If the lease is lost while CMD runs (a renewal refused: taken over,
transferred, released by hand, owner unregistered; or no renewal succeeded
within two thirds of the TTL), CMD gets SIGTERM, then SIGKILL after --grace,
and run exits 4 with the reason (a JSON error object in JSON mode). Between
renewals run watches the state ref (with a remote, polls the server's head
every 2s) and renews at once when the lease is no longer this execution, so
a loss is noticed within seconds.

Stdout is CMD's: on success run prints nothing there itself.`,
		Example: `  loopx run --todo-id todo_lexer --owner agent-a --ttl-seconds 60 \
    --write-scope 'src/lexer/**' -- make test
  loopx run --todo-id todo_lexer --owner agent-a --ttl-seconds 60 \
    --claim --complete-on-success --evidence 'tests pass' -- ./do-the-work.sh
  # adopt an execution acquired by hand (any TTL), then hold it with 60s
  loopx task-lease acquire --todo-id todo_lexer --owner agent-a \
    --idempotency-key exec-1 --ttl-seconds 600
  loopx run --todo-id todo_lexer --owner agent-a --idempotency-key exec-1 \
    --ttl-seconds 60 -- make lexer`,
		RunE: func(c *cobra.Command, args []string) error {
			collectForLongRun()
			dash := c.ArgsLenAtDash()
			switch {
			case len(args) == 0:
				return usageError("no command to run: put it after --, e.g. `loopx run ... -- make test`")
			case dash != 0:
				return usageError("unexpected argument %q: put the command after --", args[0])
			case claim && len(scopes) > 0:
				return usageError("--write-scope is ignored with --claim (the lease takes the todo's required write scopes)")
			case !complete && (len(evidence) > 0 || note != ""):
				return usageError("--evidence and --note need --complete-on-success")
			case grace < 0 || wait < 0:
				return usageError("--grace and --wait take a positive duration")
			case c.Flags().Changed("poll") && (poll < 100*time.Millisecond || poll >= time.Duration(ttl)*time.Second):
				return usageError("--poll %v: want at least 100ms and less than the TTL", poll)
			}
			req.Hold = agent.HoldRequest{Claim: claim, Wait: agent.WaitOptions{Timeout: wait},
				Acquire: lease.AcquireRequest{Goal: e.goal, Todo: todo, Owner: owner, IdempotencyKey: key,
					TTLSeconds: ttl, WriteScopes: scopes}}
			req.Hold.Poll = poll
			req.Command, req.Grace = args, grace
			req.CompleteOnSuccess, req.Evidence, req.Note = complete, evidence, note
			req.Stdin, req.Stdout, req.Stderr = os.Stdin, e.stdout, e.stderr
			if e.format == "text" {
				req.Held = func(l agent.HeldLease) {
					if line := heldLine(l); line != "" {
						fmt.Fprintf(safeWriter{e.stderr}, "loopx: run: %s\n", line)
					}
				}
			}
			sigs := make(chan os.Signal, 8)
			signal.Notify(sigs, forwardedByParent...)
			defer signal.Stop(sigs)
			req.Signals = sigs
			s, err := e.open()
			if err != nil {
				return err
			}
			defer s.Close()
			// In a store that requires signatures the command's commits are
			// signed with the agent's key (gpg.format=ssh, commit.gpgSign).
			if req.Env, err = s.CodeSigningEnv(os.Environ()); err != nil {
				return err
			}
			var stats *agent.WaitStats
			if wait > 0 {
				stats = e.waitStats()
				req.Hold.Wait.Stats = stats
				req.Hold.Wait.Notify = e.waitNotifier()
			}
			res, err := agent.Run(context.Background(), s, req)
			e.reportWait(stats)
			if res == nil {
				return err
			}
			if err != nil { // the command could not be started
				le, _ := lease.AsError(err)
				return &exitStatus{code: res.ExitCode, err: le}
			}
			if res.Interrupted != nil {
				if e.format == "text" {
					fmt.Fprintf(e.stderr, "loopx: run: interrupted (%v) before %s started\n", res.Interrupted, args[0])
				}
				return &exitStatus{code: res.ExitCode}
			}
			if res.Lost != nil {
				return &exitStatus{code: ExitLeaseLost, err: res.Lost}
			}
			if e.format == "text" {
				fmt.Fprintf(safeWriter{e.stderr}, "loopx: run: %s\n", runSummary(args[0], res))
			}
			if res.FinishErr != nil {
				le, ok := lease.AsError(res.FinishErr)
				if !ok {
					le = lease.Errorf(lease.CodeStoreIO, "%v", res.FinishErr)
				}
				if res.Completed {
					// CMD succeeded but the todo is not complete: say so by the
					// error's own class.
					return le
				}
				fmt.Fprintf(safeWriter{e.stderr}, "loopx: run: the lease was not released (it expires by itself): %s: %s\n", le.Code, flat(le.Message))
			}
			if res.ExitCode != 0 {
				return &exitStatus{code: res.ExitCode}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&todo, "todo-id", "", "todo id")
	f.StringVar(&owner, "owner", "", "lease owner (the acting agent)")
	f.StringVar(&key, "idempotency-key", "", "execution key: adopt this current execution (any TTL); default: a new execution, key generated")
	f.Int64Var(&ttl, "ttl-seconds", 0, "lease time to live, 1..86400; renewed about every third of it")
	f.StringArrayVar(&scopes, "write-scope", nil, "path glob this execution writes (repeatable)")
	f.BoolVar(&claim, "claim", false, "also claim the todo for the owner, in the same commit as the acquire")
	f.BoolVar(&complete, "complete-on-success", false, "complete the todo (releasing the lease in the same commit) when CMD exits 0")
	f.StringArrayVar(&evidence, "evidence", nil, "with --complete-on-success: evidence of completion (repeatable)")
	f.StringVar(&note, "note", "", "with --complete-on-success: closing note")
	f.DurationVar(&grace, "grace", agent.DefaultGrace, "after a lost lease, time between SIGTERM and SIGKILL")
	f.DurationVar(&wait, "wait", 0, "wait up to this long while the lease is held by another execution (or a scope conflicts)")
	f.DurationVar(&poll, "poll", 0, "with a remote: how often the server's head is polled between renewals, to notice a lost lease (one connection to the server each, and a fetch when it moved); default: a sixth of the TTL, within 2s..30s")
	return c
}

// waitStats returns counters to fill when LOOPX_WAIT_STATS=1 asks for
// them (tests, benchmarks), else nil.
func (e *env) waitStats() *agent.WaitStats {
	if os.Getenv("LOOPX_WAIT_STATS") == "1" {
		return &agent.WaitStats{}
	}
	return nil
}

// waitNotifier says on stderr, in text mode only, what a --wait waits for
// (who holds the lease and until when; why nothing is ready), each time
// that changes, and why a wait ended early. Nil in JSON mode: stderr stays
// quiet for programs.
func (e *env) waitNotifier() func(agent.WaitNotice) {
	if e.format != "text" {
		return nil
	}
	last := ""
	return func(n agent.WaitNotice) {
		what := waitingFor(n)
		if n.Final {
			fmt.Fprintf(safeWriter{e.stderr}, "loopx: not waiting: nothing can become ready for %s: %s\n", orDefault(n.Agent, "anybody"), what)
			return
		}
		if what == last {
			return
		}
		last = what
		left := max(time.Until(n.Deadline), 0)
		if left >= time.Second {
			left = left.Round(time.Second)
		} else {
			left = left.Round(10 * time.Millisecond)
		}
		fmt.Fprintf(safeWriter{e.stderr}, "loopx: waiting (up to %v more): %s\n", left, what)
	}
}

// waitingFor is what a wait notice says a wait waits for, on one line.
func waitingFor(n agent.WaitNotice) string {
	if n.Refusal != nil {
		return flat(n.Refusal.Message)
	}
	if len(n.NotReady) == 0 {
		if n.Final {
			return "no todo of the goal is open"
		}
		return "nothing is ready for " + orDefault(n.Agent, "anybody")
	}
	const shown = 3
	var parts []string
	for i, t := range n.NotReady {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(n.NotReady)-shown))
			break
		}
		var why []string
		for _, r := range t.Reasons {
			w := notReadyText(r)
			if r.ExpiresAt != nil {
				w += " until " + r.ExpiresAt.UTC().Format(time.RFC3339)
			}
			why = append(why, w)
		}
		parts = append(parts, t.TodoID+" "+strings.Join(why, ", "))
	}
	prefix := "nothing is ready for " + orDefault(n.Agent, "anybody") + ": "
	if n.Final {
		prefix = ""
	}
	return prefix + strings.Join(parts, "; ")
}

// reportWait prints what a --wait did on stderr, when asked to.
func (e *env) reportWait(st *agent.WaitStats) {
	if st == nil {
		return
	}
	data, _ := json.Marshal(st)
	fmt.Fprintf(e.stderr, "loopx: wait: %s\n", data)
}

// runWait runs a --wait command: a negative duration is a usage error, and
// LOOPX_WAIT_STATS=1 reports what the wait did on stderr.
func (e *env) runWait(d time.Duration, fn func(s *loopx.Store, w agent.WaitOptions) (loopx.Reply, error)) error {
	if d < 0 {
		return usageError("--wait %v: want a positive duration", d)
	}
	st := e.waitStats()
	defer e.reportWait(st)
	return e.run(func(s *loopx.Store) (loopx.Reply, error) {
		return fn(s, agent.WaitOptions{Timeout: d, Stats: st, Notify: e.waitNotifier()})
	})
}

// heldLine is what run says on stderr in text mode once the lease is held,
// when there is something the user did not write: the generated key, or
// the adoption of an earlier acquire ("" otherwise).
func heldLine(l agent.HeldLease) string {
	switch {
	case l.Generated:
		return fmt.Sprintf("execution key %s (generated; LOOPX_IDEMPOTENCY_KEY), lease of %s/%s at epoch %d",
			l.IdempotencyKey, l.Goal, l.Todo, l.Epoch)
	case l.Adopted:
		return fmt.Sprintf("adopted the current execution %s of %s on %s/%s (epoch %d), renewed with this run's TTL",
			l.IdempotencyKey, l.Owner, l.Goal, l.Todo, l.Epoch)
	}
	return ""
}

// runSummary is what run says on stderr in text mode when its command
// ended: how, and what became of the lease: "make exited 0; todo g/todo_x
// completed, its lease (epoch 1, renewed 2 times) released with it".
func runSummary(cmd string, res *agent.RunResult) string {
	l := res.Lease
	s := fmt.Sprintf("%s exited %d", cmd, res.ExitCode)
	held := fmt.Sprintf("epoch %d, renewed %d time(s)", l.Epoch, res.Renewals)
	switch {
	case res.FinishErr != nil:
		return s // the next line says what failed
	case res.Completed:
		return s + fmt.Sprintf("; todo %s/%s completed, its lease (%s) released with it", l.Goal, l.Todo, held)
	}
	return s + fmt.Sprintf("; the lease of %s/%s (%s) released", l.Goal, l.Todo, held)
}
