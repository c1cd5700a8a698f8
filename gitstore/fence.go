package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// fenceFile is the writer fence, in the common git dir.
const fenceFile = "loopx.lock"

// The writer fence.
//
// Lock takes an flock on <commondir>/loopx.lock, on a fresh file descriptor
// per call, so it also excludes other goroutines and other Stores of the
// same process. The kernel releases it when the process dies, so it is
// never stale.
//
// Waiting is a blocking flock (unix), so that the kernel hands the fence
// to waiters as it is released, instead of each waiter polling with a
// backoff (which leaves the fence idle between polls and lets a lucky
// newcomer overtake a waiter that has been waiting for seconds). A blocking
// flock cannot be cancelled, so it runs on its own goroutine (and its own
// descriptor); at the deadline, Lock gives it up: if it is still waiting it
// is abandoned, and when it later obtains the fence it releases it at once
// (closing its descriptor). The fence is never held by a caller that was
// told it was not, and a caller that was told it holds it does.
//
// flock, not fcntl/OFD record locks: older loopx processes take flock, and
// the two kinds of lock do not exclude each other.
//
// Dead writers' leftovers. The fence file's first two bytes say whether a
// writer may have left temporary files: byte 0 is set by the holder of the
// exclusive fence before it creates any (and cleared when it lets go),
// byte 1 by a writer without the fence (a Fetch of a read) after it created
// some. Whoever takes the exclusive fence and finds a byte set removes the
// temporary files of dead processes (see removeDeadTmpFiles), then clears
// it. An empty file, or zeros, cost one pread per writer: nothing is
// scanned.
const (
	fenceMarkFenced   = 0 // offset of the mark set by the exclusive holder
	fenceMarkUnfenced = 1 // offset of the mark set by writers without the fence
)

// fenceHold is an exclusive fence held through a Store.
type fenceHold struct {
	f        *os.File
	writable bool // f was opened read-write (the marks can be set)
	marked   bool // byte 0 was set by this holder
}

// Lock takes the writer fence: exclusive for writers, shared for readers
// that want a stable view across several reads. It waits until it gets the
// fence, ctx is done, or the Store's FenceTimeout passes; then it fails with
// an error wrapping ErrBusy (and ctx.Err() if ctx ended it). A ctx that is
// already done makes it a single try. unlock releases the fence; calling it
// more than once is harmless.
func (s *Store) Lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	path := filepath.Join(s.commonDir, fenceFile)
	f, writable, err := openFence(path)
	if err != nil {
		return nil, fmt.Errorf("gitstore: fence %s: %w", path, ioError(err))
	}
	release, err := waitFence(ctx, s.clock, f, exclusive, s.fenceTimeout)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("gitstore: fence %s: %w (%w)", path, ErrBusy, ctx.Err())
			}
			return nil, fmt.Errorf("gitstore: fence %s not obtained within %v (held by another loopx writer): %w", path, s.fenceTimeout, ErrBusy)
		}
		return nil, fmt.Errorf("gitstore: fence %s: %w", path, ioError(err))
	}
	var hold *fenceHold
	if exclusive {
		hold = &fenceHold{f: f, writable: writable}
		if writable {
			s.cleanIfMarked(f)
		}
		s.fenceMu.Lock()
		s.exclusiveHeld++
		s.fence = hold
		s.fenceMu.Unlock()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if exclusive {
				s.fenceMu.Lock()
				s.exclusiveHeld--
				if s.fence == hold {
					s.fence = nil
				}
				marked := hold.marked
				s.fenceMu.Unlock()
				if marked {
					// Whatever this holder created is renamed or removed.
					f.WriteAt([]byte{0}, fenceMarkFenced)
				}
			}
			f.Close()
			release()
		})
	}, nil
}

// openFence opens (creating) the fence file read-write, or read-only where
// it cannot be written (a read-only repository can still be read under a
// shared fence, and flock needs no write permission).
func openFence(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err == nil {
		return f, true, nil
	}
	if f, rerr := os.Open(path); rerr == nil {
		return f, false, nil
	}
	return nil, false, err
}

// holdsExclusive reports whether an exclusive fence is held through s.
func (s *Store) holdsExclusive() bool {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	return s.exclusiveHeld > 0
}

// markTemp records, before and after a writer creates temporary files, that
// it may leave some behind if it is killed (see "Dead writers' leftovers").
// The exclusive holder sets byte 0 once per hold; a writer without the fence
// sets byte 1 each time. Failures are ignored: gc's hourly sweep remains.
func (s *Store) markTemp() {
	s.fenceMu.Lock()
	h := s.fence
	if h != nil {
		if !h.marked && h.writable {
			if _, err := h.f.WriteAt([]byte{1}, fenceMarkFenced); err == nil {
				h.marked = true
			}
		}
		s.fenceMu.Unlock()
		return
	}
	s.fenceMu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.commonDir, fenceFile), os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return
	}
	f.WriteAt([]byte{1}, fenceMarkUnfenced)
	f.Close()
}

// markTempFenced is markTemp for the exclusive holder only: a writer
// without the fence that leaves a ref-lock twin behind is cleaned up by gc
// (and its lock, if any, when met: removeStaleRefLock).
func (s *Store) markTempFenced() {
	s.fenceMu.Lock()
	held := s.fence != nil
	s.fenceMu.Unlock()
	if held {
		s.markTemp()
	}
}

// cleanIfMarked runs, with the exclusive fence just taken on f, the
// cleanup of dead writers' leftovers if a mark says there may be some, and
// clears the marks (the unfenced one only if no live writer's temporary
// file was seen).
func (s *Store) cleanIfMarked(f *os.File) {
	var b [2]byte
	n, _ := f.ReadAt(b[:], 0)
	if n == 0 || b[0] == 0 && b[1] == 0 {
		return
	}
	live := s.removeDeadTmpFiles()
	clear := []byte{0, 0}
	if live && b[1] != 0 {
		clear = clear[:1]
	}
	f.WriteAt(clear, 0)
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
