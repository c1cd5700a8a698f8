//go:build !unix

package gitstore

import (
	"context"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gofrs/flock"
)

// waitFence polls a lock on f's path with gofrs/flock (this platform has
// no blocking wait here that could be abandoned safely) with a jittered
// backoff capped at 10ms, up to timeout or until ctx is done; then it fails
// with ErrBusy and closes f. The lock is held on flock's own descriptor:
// release lets it go.
func waitFence(ctx context.Context, f *os.File, exclusive bool, timeout time.Duration) (release func(), err error) {
	fl := flock.New(f.Name())
	try := fl.TryRLock
	if exclusive {
		try = fl.TryLock
	}
	deadline := time.Now().Add(timeout)
	delay := 500 * time.Microsecond
	for {
		ok, err := try()
		if err != nil {
			fl.Close()
			f.Close()
			return nil, err
		}
		if ok {
			return func() { fl.Close() }, nil
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			fl.Close()
			f.Close()
			return nil, ErrBusy
		}
		d := min(delay/2+rand.N(delay), time.Until(deadline))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		delay = min(2*delay, 10*time.Millisecond)
	}
}
