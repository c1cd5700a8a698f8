package gitstore

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/loopx-dev/loopx/internal/fault"
)

// OS-level failures.
//
// A full disk (ENOSPC, EDQUOT), a read-only file system or repository
// (EROFS, EACCES, EPERM), a failing device (EIO) and the like are not
// decisions: the same request can succeed once the cause is gone. Every
// function that writes (or reads) the repository's files wraps such an
// error with ErrIO, keeping the OS message, so that callers can tell "the
// store could not be written" from a refusal. A transaction that fails this
// way moved no ref, except when the failure is the fsync of the ref's
// directory after the rename (the outcome is then unknown until the next
// read); in both cases a retry with the same request is safe.

// ioErr marks an OS-level failure: it reads as the OS error and matches
// both it and ErrIO.
type ioErr struct{ err error }

func (e *ioErr) Error() string   { return e.err.Error() }
func (e *ioErr) Unwrap() []error { return []error{e.err, ErrIO} }

// ioError wraps err with ErrIO when it is an OS-level failure (see above),
// and returns it unchanged otherwise (nil, conflicts, busy locks, errors
// that already match ErrIO, and errors that are not the OS's).
func ioError(err error) error {
	if err == nil || errors.Is(err, ErrIO) || errors.Is(err, ErrConflict) || errors.Is(err, ErrBusy) {
		return err
	}
	if IsOSError(err) {
		return &ioErr{err}
	}
	return err
}

// IsOSError reports whether err is (or wraps) an error of an operating
// system call on a file: *fs.PathError, *os.LinkError, *os.SyscallError or
// a bare syscall.Errno.
func IsOSError(err error) bool {
	if err == nil {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var en syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &en)
}

// injected returns the error a test injects at point (package
// internal/fault) as the failure of operation op on path, or nil. The
// points are the stages of a commit, in order: "twin" (the ref-lock twin
// is created), "objects" (the pack, or loose objects, are written),
// "pack-index", "fsync" (objects and twin are fsynced), "pack-rename",
// "ref-lock" (<ref>.lock is created), "ref-rename" (the lock is renamed
// over the ref: the compare-and-swap) and "ref-dir-sync" (the ref's
// directory is fsynced: the ref has moved); and "fetch-objects" (fetched
// objects are stored).
func injected(point, op, path string) error {
	if err := fault.At(point); err != nil {
		return &fs.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}
