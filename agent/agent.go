// Package agent is the agent's loop over a store: waiting for work or for
// a lease (wait.go: --wait), holding a task lease while work runs, renewed
// in the background (hold.go), and running a command under it (run.go:
// `loopx run`). It sits above the Store and uses nothing of it but the
// operations of the loop and how the store is seen to move (Store), the
// way client-go's leaderelection holds a lock through
// resourcelock.Interface: a fake store tests it.
package agent

import (
	"context"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/lease"
)

// Store is what the agent's loop needs of a store: the operations it
// decides (each one compare-and-swap commit, or a read), and how it sees
// the store move while it waits.
type Store interface {
	Acquire(lease.AcquireRequest) (*loopx.Result[lease.LeaseResult], error)
	Claim(lease.ClaimRequest) (*loopx.Result[lease.TodoResult], error)
	ReadyClaim(lease.ReadyClaimRequest) (*loopx.Result[lease.TodoResult], error)
	// Ready lists what an agent may take now and why the rest is not
	// ready (a ready --claim wait says so, and ends when nothing can be).
	Ready(goal, agent string) (*loopx.Result[loopx.ReadyList], error)
	holdOps

	// ProbeHead reads the head decisions are made on, cheaply: the local
	// ref, or the server's by a ref advertisement (no fetch).
	ProbeHead(ctx context.Context) (gitstore.Hash, error)
	// PollsRemote reports whether the head is the server's (polled) rather
	// than the local ref (watched).
	PollsRemote() bool
	// WatchRef notifies changes of the local ref.
	WatchRef() gitstore.Watcher
	// NextExpiry is how long until the soonest expiry in force in goal
	// (ok false: none known).
	NextExpiry(goal string) (d time.Duration, ok bool)
	// Clock is what the loop waits on and measures its waits with (the
	// machine's clock; a fake in tests). The store's decision clock
	// (LOOPX_NOW) stays the store's: the loop never sleeps on it.
	Clock() clock.Clock
}

var _ Store = (*loopx.Store)(nil)
