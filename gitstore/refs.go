package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/retry"
)

// Head returns the current value of the store's ref, or ZeroHash if the ref
// does not exist. It reads the loose ref file, else packed-refs, as git
// does; both are replaced by rename, so a reader never sees a partial value.
func (s *Store) Head() (Hash, error) {
	return readRef(s.commonDir, s.ref)
}

// readRef reads ref (a full name under refs/) from the common dir.
func readRef(commonDir, ref string) (Hash, error) {
	name := filepath.Join(commonDir, filepath.FromSlash(ref))
	// Writers replace the file by rename, so its content is always
	// complete; tolerate a few odd reads anyway (a writer that does not
	// follow git's protocol, or an exotic file system).
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			_ = clock.Sleep(context.Background(), clock.Real, oddReadRetry.Delay(attempt, 0))
		}
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) || isDirError(err, name) {
			return readPackedRef(commonDir, ref)
		}
		if err != nil {
			return ZeroHash, fmt.Errorf("gitstore: read %s: %w", ref, ioError(err))
		}
		h, err := parseRefContent(b)
		if err == nil {
			return h, nil
		}
		lastErr = fmt.Errorf("gitstore: ref %s: %w", ref, err)
	}
	return ZeroHash, lastErr
}

// isDirError reports whether reading name failed because it is a directory
// (refs/loopx/state/... used as a namespace): the ref is then absent.
func isDirError(err error, name string) bool {
	if err == nil {
		return false
	}
	fi, statErr := os.Stat(name)
	return statErr == nil && fi.IsDir()
}

func parseRefContent(b []byte) (Hash, error) {
	line := strings.TrimRight(string(b), "\n")
	if strings.HasPrefix(line, "ref:") {
		return ZeroHash, fmt.Errorf("is a symbolic ref (%s)", strings.TrimSpace(line[4:]))
	}
	if len(line) != 40 || !plumbing.IsHash(line) {
		return ZeroHash, fmt.Errorf("bad content %q", truncate(line, 60))
	}
	return plumbing.NewHash(line), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// readPackedRef looks ref up in packed-refs.
func readPackedRef(commonDir, ref string) (Hash, error) {
	f, err := os.Open(filepath.Join(commonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return ZeroHash, nil
	}
	if err != nil {
		return ZeroHash, fmt.Errorf("gitstore: read packed-refs: %w", ioError(err))
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		if string(line[41:]) == ref {
			hex := string(line[:40])
			if !plumbing.IsHash(hex) {
				return ZeroHash, fmt.Errorf("gitstore: packed-refs: bad value for %s", ref)
			}
			return plumbing.NewHash(hex), nil
		}
	}
	if err := sc.Err(); err != nil {
		return ZeroHash, fmt.Errorf("gitstore: read packed-refs: %w", ioError(err))
	}
	return ZeroHash, nil
}

// Ref lock protocol.
//
// The ref moves exactly as git moves it: <ref>.lock is created exclusively,
// the current value is verified under it, the lock file (holding the new
// value) is fsynced and renamed over the ref, and the directory is fsynced.
// Any git command updating the ref meanwhile fails to create the lock (git
// retries for core.filesRefLockTimeout, 100ms by default), and loopx waits
// briefly for a git-held lock, so neither loses the other's update.
//
// Stale locks. A loopx process killed between creating <ref>.lock and the
// rename would leave the lock behind and, as with git, block every later
// update. To recognise its own locks, loopx does not create <ref>.lock
// empty: it first writes the new value to <commondir>/loopx-reflock.<pid>.<n>
// (fsynced), then hard-links that file to <ref>.lock, which is just as
// atomic and exclusive as O_CREAT|O_EXCL. A <ref>.lock that is the same file
// (same inode) as some loopx-reflock.<pid>.<n> was therefore made by loopx
// process <pid>. Such a lock is removed as stale when <pid> is no longer
// running, or when the lock is older than staleLockAge (pid reuse). Writers
// hold the exclusive fence, so no live loopx writer can be inside this
// protocol at the same time; the pid check only guards against a caller that
// commits without the fence. A lock without a loopx twin is git's (or
// unknown): it is never removed; after refLockWait, Commit fails with
// ErrBusy naming the file, as git would. On file systems without hard
// links, the lock is created directly with O_CREAT|O_EXCL and cannot be
// recognised later.

const (
	refLockWait     = time.Second
	staleLockAge    = 10 * time.Second
	refLockTmpGlob  = "loopx-reflock.*"
	refLockTmpStart = "loopx-reflock."
)

var refLockCounter atomic.Uint64

// refLockPoll spaces the looks at a <ref>.lock held by someone else: 1ms,
// doubling to 20ms (git holds one for milliseconds). oddReadRetry spaces
// the reads of a ref file that read oddly: 1, 2, 4, 8ms.
var (
	refLockPoll  = retry.Policy{Base: 500 * time.Microsecond, Factor: 2, Max: 20 * time.Millisecond}
	oddReadRetry = retry.Policy{Base: 500 * time.Microsecond, Factor: 2}
)

// testHook, if set, is called at named points of Commit (tests use it to
// widen crash windows).
var testHook func(point string)

func hook(point string) {
	if testHook != nil {
		testHook(point)
	}
}

// createTwin creates the ref-lock twin holding newHash (not yet fsynced).
func (s *Store) createTwin(newHash Hash) (string, *os.File, error) {
	name := filepath.Join(s.commonDir, fmt.Sprintf("%s%d.%d", refLockTmpStart, os.Getpid(), refLockCounter.Add(1)))
	s.markTempFenced()
	if err := injected("twin", "open", name); err != nil {
		return "", nil, fmt.Errorf("gitstore: %w", ioError(err))
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return "", nil, fmt.Errorf("gitstore: %w", ioError(err))
	}
	if _, err := f.WriteString(newHash.String() + "\n"); err != nil {
		f.Close()
		os.Remove(name)
		return "", nil, fmt.Errorf("gitstore: %w", ioError(err))
	}
	return name, f, nil
}

// refLock is a held <ref>.lock.
type refLock struct {
	refPath, lockPath string
	held              bool
	noSync            bool
}

// lockRef takes <ref>.lock as a hard link to twin (which holds newHash)
// and verifies, under it, that the ref holds expected (ErrConflict if
// not). Until commit or release, git cannot move the ref.
func (s *Store) lockRef(expected, newHash Hash, twin string) (*refLock, error) {
	refPath := filepath.Join(s.commonDir, filepath.FromSlash(s.ref))
	lockPath := refPath + ".lock"
	if err := mkdirAllSync(filepath.Dir(refPath), s.odb.noSync); err != nil {
		return nil, fmt.Errorf("gitstore: %w", ioError(err))
	}
	if err := s.acquireRefLock(twin, lockPath, []byte(newHash.String()+"\n")); err != nil {
		return nil, err
	}
	l := &refLock{refPath: refPath, lockPath: lockPath, held: true, noSync: s.odb.noSync}
	hook("ref-locked")
	cur, err := readRef(s.commonDir, s.ref)
	if err == nil && cur != expected {
		err = fmt.Errorf("gitstore: %s is %s, expected %s: %w", s.ref, shortHash(cur), shortHash(expected), ErrConflict)
	}
	if err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// mkdirAllSync is os.MkdirAll that also fsyncs the parent of every
// directory it creates, so that a path created for a new ref survives a
// crash along with the ref.
func mkdirAllSync(dir string, noSync bool) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if noSync {
		return nil
	}
	for _, d := range created {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// release removes the lock if it was not committed.
func (l *refLock) release() {
	if l.held {
		os.Remove(l.lockPath)
		l.held = false
	}
}

// commit renames the lock (whose content the caller made durable) over the
// ref and fsyncs the directory.
//
// An error before the rename leaves the ref unchanged; an error after it
// (the directory's fsync) means the ref has moved but may not survive a
// crash: the error says so, and wraps ErrIO like the others.
func (l *refLock) commit() error {
	err := injected("ref-rename", "rename", l.lockPath)
	if err == nil {
		err = os.Rename(l.lockPath, l.refPath)
	}
	if err != nil {
		return fmt.Errorf("gitstore: %w", ioError(err))
	}
	l.held = false
	hook("ref-renamed")
	if err := injected("ref-dir-sync", "sync", filepath.Dir(l.refPath)); err != nil {
		return fmt.Errorf("gitstore: the ref moved, but its directory could not be made durable: %w", ioError(err))
	}
	if l.noSync {
		return nil
	}
	if err := syncDir(filepath.Dir(l.refPath)); err != nil {
		return fmt.Errorf("gitstore: the ref moved, but its directory could not be made durable: %w", ioError(err))
	}
	return nil
}

func shortHash(h Hash) string {
	if h.IsZero() {
		return "absent"
	}
	return h.String()[:12]
}

// acquireRefLock creates lockPath as a hard link to tmp (or, failing hard
// links, exclusively with content), waiting up to refLockWait for a lock
// held by someone else and removing stale loopx locks.
func (s *Store) acquireRefLock(tmp, lockPath string, content []byte) error {
	deadline := s.clock.Now().Add(refLockWait)
	for n := 1; ; n++ {
		err := injected("ref-lock", "link", lockPath)
		if err != nil {
			return fmt.Errorf("gitstore: %w", ioError(err))
		}
		err = os.Link(tmp, lockPath)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			// No hard links here: plain exclusive create.
			f, cerr := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
			if cerr == nil {
				_, werr := f.Write(content)
				if werr == nil {
					werr = f.Sync()
				}
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				if werr != nil {
					os.Remove(lockPath)
					return fmt.Errorf("gitstore: %w", ioError(werr))
				}
				return nil
			}
			if !errors.Is(cerr, os.ErrExist) {
				return fmt.Errorf("gitstore: create %s: %w", lockPath, ioError(cerr))
			}
		}
		if s.removeStaleRefLock(lockPath) {
			continue
		}
		if s.clock.Now().After(deadline) {
			return s.refLockBusy(lockPath)
		}
		_ = clock.Sleep(context.Background(), s.clock, refLockPoll.Delay(n, 0))
	}
}

// RefLockError is the error (wrapping ErrBusy) of a <ref>.lock that stayed
// in place for as long as loopx waits for one (refLockWait): held by a git
// command that is running, or, if it is old, left by one that crashed. git
// itself then fails the same way ("Unable to create '...lock': File
// exists"). loopx never removes a lock it did not make: the message says
// which file it is, how old, and that it can be removed once no git process
// runs.
type RefLockError struct {
	Path string        // the lock file
	Age  time.Duration // since it was last modified
	// LoopxPid is the loopx process that made it (0: git, or unknown).
	LoopxPid int
}

func (e *RefLockError) Error() string {
	age := e.Age.Round(time.Second)
	if e.LoopxPid > 0 {
		return fmt.Sprintf("gitstore: %s (%s old) is held by loopx process %d, which is still running", e.Path, age, e.LoopxPid)
	}
	return fmt.Sprintf("gitstore: %s exists (%s old): a git command is updating the ref, or one crashed and left it behind; "+
		"if no git process is running, remove it (loopx never removes git's lock files)", e.Path, age)
}

func (e *RefLockError) Unwrap() error { return ErrBusy }

// refLockBusy describes the lock that acquireRefLock gave up on.
func (s *Store) refLockBusy(lockPath string) error {
	e := &RefLockError{Path: lockPath}
	if fi, err := os.Lstat(lockPath); err == nil {
		e.Age = max(time.Since(fi.ModTime()), 0)
		if _, pid := s.findLockTwin(fi); pid > 0 {
			e.LoopxPid = pid
		}
	}
	return e
}

// removeStaleRefLock removes lockPath if it is a stale loopx lock (see the
// protocol above) and reports whether it did.
func (s *Store) removeStaleRefLock(lockPath string) bool {
	lfi, err := os.Lstat(lockPath)
	if err != nil {
		return errors.Is(err, os.ErrNotExist) // gone meanwhile: retry at once
	}
	twin, pid := s.findLockTwin(lfi)
	if twin == "" {
		return false
	}
	if processAlive(pid) && time.Since(lfi.ModTime()) < staleLockAge {
		return false
	}
	// Remove the lock before its twin, so that a lock always has one.
	if err := os.Remove(lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	os.Remove(twin)
	return true
}

// findLockTwin returns the loopx-reflock file that is the same file as lfi,
// and the pid that created it.
func (s *Store) findLockTwin(lfi os.FileInfo) (string, int) {
	names, _ := filepath.Glob(filepath.Join(s.commonDir, refLockTmpGlob))
	for _, name := range names {
		fi, err := os.Lstat(name)
		if err != nil || !os.SameFile(fi, lfi) {
			continue
		}
		rest := strings.TrimPrefix(filepath.Base(name), refLockTmpStart)
		pidStr, _, _ := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		return name, pid
	}
	return "", 0
}

// cleanRefLockTwins removes loopx-reflock files left by dead processes
// (crashes before the link or after the rename). Callers hold the exclusive
// fence.
func (s *Store) cleanRefLockTwins() {
	names, _ := filepath.Glob(filepath.Join(s.commonDir, refLockTmpGlob))
	s.removeDeadTwins(names)
}

// removeDeadTwins removes, of the loopx-reflock files names, those of dead
// processes, and the store's ref lock if it is one of them.
func (s *Store) removeDeadTwins(names []string) {
	if len(names) == 0 {
		return
	}
	lockPath := filepath.Join(s.commonDir, filepath.FromSlash(s.ref)) + ".lock"
	lfi, lerr := os.Lstat(lockPath)
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), refLockTmpStart)
		pidStr, _, _ := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || processAlive(pid) {
			continue
		}
		if lerr == nil {
			if fi, err := os.Lstat(name); err == nil && os.SameFile(fi, lfi) {
				os.Remove(lockPath) // its stale lock first
			}
		}
		os.Remove(name)
	}
}

// appendReflog appends a line to the ref's reflog if it exists (git creates
// reflogs for refs outside refs/heads, refs/remotes and refs/notes only with
// core.logAllRefUpdates=always; an existing one is always appended to).
// Failures are ignored: the reflog is advisory.
func (s *Store) appendReflog(old, new Hash, who, msg string) {
	name := filepath.Join(s.commonDir, "logs", filepath.FromSlash(s.ref))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	msg, _, _ = strings.Cut(msg, "\n")
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\t%s\n", old, new, who, msg)
	f.Write(b.Bytes())
}
