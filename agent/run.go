package agent

// `loopx run … -- CMD`: hold a task lease while a command runs.
//
//	Hold (acquire or replay, or adopt the current execution of the owner
//	and key; with Claim, claim + acquire in one commit; a fresh key when
//	none is given)
//	→ start CMD with LOOPX_GOAL, LOOPX_TODO, LOOPX_OWNER,
//	  LOOPX_IDEMPOTENCY_KEY, LOOPX_EPOCH, LOOPX_VERSION in its environment
//	→ renew in the background (hold.go); forward signals to CMD
//	→ CMD exits: release (or, with CompleteOnSuccess and status 0, complete
//	  with the lease proof, which releases in the same commit)
//	→ lease lost while CMD runs: SIGTERM to CMD, SIGKILL after Grace; the
//	  result carries the loss (the command line exits 4).
//
// Decisions written down here:
//   - CMD stays in run's process group, so it keeps the terminal (it can
//     read from it, and a terminal's Ctrl-C reaches it directly as well as
//     forwarded). On Linux CMD also gets SIGTERM if run itself dies (kill
//     -9), so no work goes on unfenced; the lease then simply expires.
//   - A command killed by a signal has status 128+signal, as in shells.
//     A command that cannot be started has status 127 (not found) or 126
//     (not executable), as in shells and timeout(1); the lease is released.
//   - After a loss, run still tries once to release with the last version
//     it knew: a takeover refuses that harmlessly, and an unregistered
//     owner or a lease whose renewals failed is cleaned up for the next
//     holder.
//   - A loss that is noticed after CMD exited but before run stopped
//     renewing still counts (run cannot tell whether CMD's last writes
//     were fenced).

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// DefaultGrace is how long a command gets after SIGTERM before SIGKILL.
const DefaultGrace = 10 * time.Second

// RunRequest is one `loopx run`.
type RunRequest struct {
	Hold HoldRequest
	// Command is the program and its arguments.
	Command []string
	// Env is the command's environment before the LOOPX_* variables are
	// set (default os.Environ()); Dir its working folder (default: ours).
	Env []string
	Dir string
	// Stdin, Stdout, Stderr are the command's (nil: the null device).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Grace is the time between SIGTERM and SIGKILL after a loss (default
	// DefaultGrace).
	Grace time.Duration
	// Signals are forwarded to the command while it runs.
	Signals <-chan os.Signal
	// CompleteOnSuccess completes the todo (with Evidence and Note) when
	// the command exits 0.
	CompleteOnSuccess bool
	Evidence          []string
	Note              string
	// Held, when set, is called with the lease once it is held, before
	// the command starts.
	Held func(HeldLease)
	// Started, when set, is called with the command's process id.
	Started func(pid int)
}

// RunResult is how a run ended.
type RunResult struct {
	// ExitCode is the command's status (128+signal when a signal ended it).
	ExitCode int
	// Lost is why the lease was lost while the command ran (nil if it was
	// not); the command was then sent SIGTERM.
	Lost *lease.Error
	// Acquired is the result of the acquire (or claim).
	Acquired loopx.Reply
	// Lease is the lease as last known (version after the last renewal).
	Lease HeldLease
	// Renewals counts the successful renewals.
	Renewals int
	// Finished is the release (or completion) after the command, FinishErr
	// its error; Completed tells which it was.
	Finished  loopx.Reply
	FinishErr error
	Completed bool
	// Interrupted is the signal that ended the run before the command
	// started (nil if it started).
	Interrupted os.Signal
}

// reply is a result as a loopx.Reply (nil for none).
func reply[T any](r *loopx.Result[T], err error) (loopx.Reply, error) {
	if r == nil {
		return nil, err
	}
	return r, err
}

// Env returns the LOOPX_* variables a command run under l gets.
func (l HeldLease) Env() []string {
	return []string{"LOOPX_GOAL=" + l.Goal, "LOOPX_TODO=" + l.Todo, "LOOPX_OWNER=" + l.Owner,
		"LOOPX_IDEMPOTENCY_KEY=" + l.IdempotencyKey, "LOOPX_EPOCH=" + strconv.FormatInt(l.Epoch, 10),
		"LOOPX_VERSION=" + strconv.FormatInt(l.Version, 10)}
}

// withEnv returns base with the variables of set replacing any of the same name.
func withEnv(base, set []string) []string {
	names := map[string]bool{}
	for _, kv := range set {
		names[kv[:strings.IndexByte(kv, '=')]] = true
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		if i := strings.IndexByte(kv, '='); i > 0 && names[kv[:i]] {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

// Run holds the lease while the command runs (see the file comment). An
// error before the command started (the acquire refused or failed) is
// returned with a nil result; a command that could not start is an error
// with a result (status 126/127, the lease released).
func Run(ctx context.Context, s Store, req RunRequest) (*RunResult, error) {
	if len(req.Command) == 0 {
		return nil, lease.Errorf(lease.CodeUsage, "no command to run: put it after --")
	}
	if req.Grace <= 0 {
		req.Grace = DefaultGrace
	}
	// A signal before the command started (say, Ctrl-C during --wait)
	// ends the run: the wait is cancelled, a lease already granted is
	// released, and the status is 128+signal, as if the command got it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var early os.Signal
	stopEarly, earlyDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(earlyDone)
		select {
		case early = <-req.Signals:
			cancel()
		case <-stopEarly:
		}
	}()
	h, acq, err := HoldLease(ctx, s, req.Hold)
	close(stopEarly)
	<-earlyDone
	if early != nil {
		out := &RunResult{ExitCode: signalStatus(early), Acquired: acq, Interrupted: early}
		if err == nil {
			out.Finished, out.FinishErr = reply(h.Release())
			out.Lease = h.Lease()
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out := &RunResult{Acquired: acq}
	l := h.Lease()
	if req.Held != nil {
		req.Held(l)
	}
	cmd := exec.Command(req.Command[0], req.Command[1:]...)
	base := req.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = withEnv(base, l.Env())
	cmd.Dir = req.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, req.Stdout, req.Stderr
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		out.ExitCode = 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			out.ExitCode = 127
		}
		out.Finished, out.FinishErr = reply(h.Release())
		out.Lease = h.Lease()
		return out, lease.Errorf(lease.CodeInvalidRequest, "cannot run %s: %v", req.Command[0], err)
	}
	if req.Started != nil {
		req.Started(cmd.Process.Pid)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var kill <-chan time.Time
	lost := h.Lost()
wait:
	for {
		select {
		case sig := <-req.Signals:
			_ = cmd.Process.Signal(sig)
		case <-lost:
			lost = nil
			terminate(cmd.Process)
			kill = s.Clock().After(req.Grace)
		case <-kill:
			_ = cmd.Process.Kill()
		case <-exited:
			break wait
		}
	}
	out.ExitCode = exitStatus(cmd.ProcessState)
	h.Stop()
	out.Lease, out.Renewals = h.Lease(), h.Renewals()
	if out.Lost = h.LostErr(); out.Lost != nil {
		out.Lost = out.Lost.With("exit_status", out.ExitCode)
		// One attempt, no retries: a takeover refuses it harmlessly.
		v := out.Lease.Version
		_, _ = s.Release(lease.ReleaseRequest{Goal: l.Goal, Todo: l.Todo, Owner: l.Owner,
			IdempotencyKey: l.IdempotencyKey, ExpectedVersion: &v})
		return out, nil
	}
	if req.CompleteOnSuccess && out.ExitCode == 0 {
		out.Completed = true
		out.Finished, out.FinishErr = reply(h.Complete(req.Evidence, req.Note))
		if out.FinishErr != nil {
			_, _ = h.Release() // the completion was refused: do not leave the lease to expire
		}
	} else {
		out.Finished, out.FinishErr = reply(h.Release())
	}
	out.Lease = h.Lease()
	return out, nil
}
