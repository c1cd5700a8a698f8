//go:build unix

package gitstore

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/loopx-dev/loopx/internal/clock"
)

// waitFence takes an flock on f (exclusive or shared), waiting up to
// timeout (on clk) or until ctx is done (see "The writer fence" in fence.go); it
// fails with ErrBusy then. On any error f is closed, or left to the waiting
// goroutine, which closes it. The fence is held on f itself: closing f
// releases it, and release has nothing more to do.
func waitFence(ctx context.Context, clk clock.Clock, f *os.File, exclusive bool, timeout time.Duration) (release func(), err error) {
	if err := waitFlock(ctx, clk, f, exclusive, timeout); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func waitFlock(ctx context.Context, clk clock.Clock, f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := flockFile(f, how|syscall.LOCK_NB)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return err
	}
	if ctx.Err() != nil || timeout <= 0 {
		f.Close()
		return ErrBusy
	}
	var (
		mu     sync.Mutex
		gaveUp bool
		done   = make(chan error, 1)
	)
	go func() {
		err := flockFile(f, how)
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			// Obtained (or failed) after the caller left: let go at once.
			f.Close()
			return
		}
		done <- err
	}()
	t := clk.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-t.C():
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-done: // obtained just as the deadline passed
		if err != nil {
			f.Close()
		}
		return err
	default:
		gaveUp = true
		return ErrBusy
	}
}

// flockFile calls flock(2) on f's descriptor (valid while it runs),
// retrying when a signal interrupts it.
func flockFile(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return os.NewSyscallError("flock", ferr)
	}
	return nil
}
