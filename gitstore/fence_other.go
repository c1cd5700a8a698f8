//go:build !unix

package gitstore

import (
	"context"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gofrs/flock"

	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/retry"
)

// fencePoll is how waitFence polls here: waits that double from 500µs to
// 10ms, each drawn from the upper half of its window.
var fencePoll = retry.Policy{Base: 250 * time.Microsecond, Factor: 2, Max: 10 * time.Millisecond, Jitter: 0.5}

// waitFence polls a lock on f's path with gofrs/flock (this platform has
// no blocking wait here that could be abandoned safely) as fencePoll says,
// up to timeout (on clk) or until ctx is done; then it fails with ErrBusy
// and closes f. The lock is held on flock's own descriptor: release lets
// it go.
func waitFence(ctx context.Context, clk clock.Clock, f *os.File, exclusive bool, timeout time.Duration) (release func(), err error) {
	fl := flock.New(f.Name())
	try := fl.TryRLock
	if exclusive {
		try = fl.TryLock
	}
	deadline := clk.Now().Add(timeout)
	for n := 1; ; n++ {
		ok, err := try()
		if err != nil {
			fl.Close()
			f.Close()
			return nil, err
		}
		if ok {
			return func() { fl.Close() }, nil
		}
		left := deadline.Sub(clk.Now())
		if ctx.Err() != nil || left <= 0 {
			fl.Close()
			f.Close()
			return nil, ErrBusy
		}
		// A done context is seen at the next try, which fails with ErrBusy.
		_ = clock.Sleep(ctx, clk, min(fencePoll.Delay(n, rand.Float64()), left))
	}
}
