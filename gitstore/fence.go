package gitstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// fenceFile is the writer fence, in the common git dir.
const fenceFile = "loopx.lock"

// Lock takes the writer fence: an flock on <commondir>/loopx.lock,
// exclusive for writers, shared for readers that want a stable view across
// several reads. It polls until it gets the lock, ctx is done, or the
// Store's FenceTimeout passes; then it fails with an error wrapping ErrBusy
// (and ctx.Err() if ctx ended it). unlock releases the fence; calling it
// more than once is harmless.
//
// The fence is an flock on a fresh file descriptor per call, so it also
// excludes other goroutines and other Stores of the same process. The
// kernel releases it when the process dies, so it is never stale.
func (s *Store) Lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	fl := flock.New(filepath.Join(s.commonDir, fenceFile), flock.SetPermissions(0o666))
	try := fl.TryRLock
	if exclusive {
		try = fl.TryLock
	}
	deadline := time.Now().Add(s.fenceTimeout)
	delay := 500 * time.Microsecond
	for {
		ok, err := try()
		if err != nil {
			fl.Close()
			return nil, fmt.Errorf("gitstore: fence %s: %w", fl.Path(), err)
		}
		if ok {
			break
		}
		if err := ctx.Err(); err != nil {
			fl.Close()
			return nil, fmt.Errorf("gitstore: fence %s: %w (%w)", fl.Path(), ErrBusy, err)
		}
		if !time.Now().Before(deadline) {
			fl.Close()
			return nil, fmt.Errorf("gitstore: fence %s not obtained within %v: %w", fl.Path(), s.fenceTimeout, ErrBusy)
		}
		// Jittered exponential polling, capped low: commits are short.
		d := delay/2 + rand.N(delay)
		if rem := time.Until(deadline); d > rem {
			d = rem
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		delay = min(2*delay, 10*time.Millisecond)
	}
	if exclusive {
		s.fenceMu.Lock()
		s.exclusiveHeld++
		s.fenceMu.Unlock()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if exclusive {
				s.fenceMu.Lock()
				s.exclusiveHeld--
				s.fenceMu.Unlock()
			}
			fl.Close()
		})
	}, nil
}

// holdsExclusive reports whether an exclusive fence is held through s.
func (s *Store) holdsExclusive() bool {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	return s.exclusiveHeld > 0
}

// LockNamed takes an exclusive flock on <commondir>/name (a side lock such
// as "loopx-sync.lock", separate from the writer fence), polling until ctx
// is done; then it fails with an error wrapping ErrBusy.
func (s *Store) LockNamed(ctx context.Context, name string) (unlock func(), err error) {
	if filepath.Base(name) != name || !strings.HasPrefix(name, "loopx-") || name == fenceFile {
		return nil, fmt.Errorf("%w: lock name %q", ErrInvalidPath, name)
	}
	fl := flock.New(filepath.Join(s.commonDir, name), flock.SetPermissions(0o666))
	ok, err := fl.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		fl.Close()
		return nil, fmt.Errorf("gitstore: %s: %w", fl.Path(), ErrBusy)
	}
	var once sync.Once
	return func() { once.Do(func() { fl.Close() }) }, nil
}
