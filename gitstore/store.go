package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/loopx-dev/loopx/internal/clock"
)

// Hash is a Git object name. ZeroHash means "no commit" (an absent ref).
type Hash = plumbing.Hash

// ZeroHash is the zero Hash: an absent ref, or "no parent".
var ZeroHash = plumbing.ZeroHash

var (
	// ErrNotRepository is returned by Open when no Git repository contains
	// the path.
	ErrNotRepository = errors.New("not a git repository")
	// ErrConflict is returned (wrapped) when the ref does not hold the
	// expected value: the compare-and-swap was lost.
	ErrConflict = errors.New("ref changed (compare-and-swap lost)")
	// ErrBusy is returned (wrapped) when the writer fence, or git's own
	// <ref>.lock, was not obtained in time.
	ErrBusy = errors.New("writer fence busy")
	// ErrInvalidPath is returned (wrapped, naming the path) for a path
	// that ValidPath rejects, or a change that would turn a file into a
	// directory or the reverse.
	ErrInvalidPath = errors.New("invalid path")
	// ErrIO is returned (wrapped, with the operating system's message)
	// when reading or writing the repository's files failed at the OS
	// level: a full disk, a read-only file system or repository, missing
	// permissions, a failing device (see ioerr.go). It is never a decision:
	// the same request can succeed once the cause is gone.
	ErrIO = errors.New("repository I/O failed")
	// ErrUnsupportedRepository is returned (wrapped) by Open for a
	// repository whose format gitstore cannot read or write (SHA-256
	// object names, the reftable ref backend).
	ErrUnsupportedRepository = errors.New("unsupported repository format")
	// ErrInvalidRef is returned (wrapped) for a ref name git would not
	// accept, or one outside refs/.
	ErrInvalidRef = errors.New("invalid ref name")
)

// DefaultRef is the ref used when Options.Ref is empty.
const DefaultRef = "refs/loopx/state"

// DefaultFenceTimeout is used when Options.FenceTimeout is zero.
const DefaultFenceTimeout = 10 * time.Second

// Options configure Open.
type Options struct {
	// Ref is the full name of the ref holding the store; it must start
	// with "refs/". Default DefaultRef.
	Ref string
	// FenceTimeout bounds how long Lock waits for the writer fence.
	// Default DefaultFenceTimeout.
	FenceTimeout time.Duration
	// ServerLockWait is how long pushes may keep finding the server's ref
	// lock file in place before it is taken for a stale one. Default
	// DefaultServerLockWait.
	ServerLockWait time.Duration
	// Clock is what the store waits on and measures its waits with
	// (retries, backoff, the fence's deadline); default the real clock.
	Clock clock.Clock
}

// Store is a transactional store of files on one Git ref.
//
// A Store may be used from several goroutines: its methods serialise their
// access to the repository internally (go-git itself is not goroutine-safe).
// Several processes may open the same repository at once; writers are
// serialised by the writer fence (Lock).
type Store struct {
	ref            string
	fenceTimeout   time.Duration
	serverLockWait time.Duration
	clock          clock.Clock
	gitDir         string  // this worktree's git dir
	commonDir      string  // shared git dir: objects, refs, locks
	gcSpread       float64 // in [0,1): where this repository's automatic GCs fall (gc.go)
	workDir        string  // top of the working tree; "" if bare

	mu      sync.Mutex // guards everything below and all object access
	repo    *git.Repository
	odb     *objectDB
	trees   treeCache
	closed  bool
	fenceMu sync.Mutex // guards exclusiveHeld and fence
	// exclusiveHeld counts exclusive fences held through this Store, so
	// that GC and MaybeGC called by a fence holder do not wait on
	// themselves.
	exclusiveHeld int
	// fence is the exclusive fence held through this Store, if any (at
	// most one: each Lock uses its own descriptor, which excludes the
	// others).
	fence *fenceHold
}

// InitRepo makes dir a (non-bare) Git repository, like `git init`, unless
// dir is already inside one, in which case it does nothing. dir is created
// if needed.
func InitRepo(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true}); err == nil {
		return nil
	} else if !errors.Is(err, git.ErrRepositoryNotExists) {
		return fmt.Errorf("gitstore: init %s: %w", abs, err)
	}
	if err := os.MkdirAll(abs, 0o777); err != nil {
		return err
	}
	if _, err := git.PlainInit(abs, false); err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
		return fmt.Errorf("gitstore: init %s: %w", abs, err)
	}
	return nil
}

// Open opens the store in the Git repository containing path (path may be
// anywhere inside a working tree, a linked worktree, or a bare repository).
// It returns an error wrapping ErrNotRepository if there is none.
//
// The repository is found as git finds it: the nearest enclosing ".git"
// directory or "gitdir:" file, else a directory that is itself a git dir
// (bare); a linked worktree's "commondir" names the common dir that holds
// the objects, the refs and the locks. go-git opens it with
// PlainOpenWithOptions (DetectDotGit, EnableDotGitCommonDir).
func Open(path string, opts Options) (*Store, error) {
	ref := opts.Ref
	if ref == "" {
		ref = DefaultRef
	}
	if err := checkRefName(ref); err != nil {
		return nil, err
	}
	timeout := opts.FenceTimeout
	if timeout <= 0 {
		timeout = DefaultFenceTimeout
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	gitDir, workDir, err := discover(abs)
	if err != nil {
		return nil, err
	}
	commonDir, err := readCommonDir(gitDir)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(commonDir); err != nil {
		return nil, err
	}
	repo, err := git.PlainOpenWithOptions(firstNonEmpty(workDir, gitDir), &git.PlainOpenOptions{
		DetectDotGit:          workDir != "",
		EnableDotGitCommonDir: true,
	})
	if err != nil {
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("gitstore: %s: %w", abs, ErrNotRepository)
		}
		return nil, fmt.Errorf("gitstore: open %s: %w", abs, err)
	}
	lockWait := opts.ServerLockWait
	if lockWait <= 0 {
		lockWait = DefaultServerLockWait
	}
	s := &Store{
		ref:            ref,
		fenceTimeout:   timeout,
		serverLockWait: lockWait,
		clock:          clock.Or(opts.Clock),
		gitDir:         gitDir,
		commonDir:      commonDir,
		gcSpread:       spreadOf(commonDir),
		workDir:        workDir,
		repo:           repo,
	}
	s.odb = newObjectDB(commonDir, repo)
	s.odb.onTemp = s.markTemp
	return s, nil
}

// checkFormat rejects repositories whose objects or refs gitstore cannot
// read or write (SHA-256 object names, the reftable ref backend).
func checkFormat(commonDir string) error {
	b, err := os.ReadFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return nil // git tolerates a missing config; so do we
	}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.Trim(line, "[] \t"))
			continue
		}
		if section != "extensions" {
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.ToLower(strings.Trim(strings.TrimSpace(val), `"`))
		if (key == "objectformat" && val != "sha1") || (key == "refstorage" && val != "files") {
			return fmt.Errorf("gitstore: %s: extensions.%s = %s: %w", commonDir, key, val, ErrUnsupportedRepository)
		}
	}
	return nil
}

// checkRefName accepts full ref names under refs/ that git would accept
// (a conservative subset of git-check-ref-format).
func checkRefName(ref string) error {
	bad := func(why string) error { return fmt.Errorf("gitstore: ref %q: %s: %w", ref, why, ErrInvalidRef) }
	if !strings.HasPrefix(ref, "refs/") || len(ref) == len("refs/") {
		return bad(`must start with "refs/"`)
	}
	if strings.ContainsAny(ref, " ~^:?*[\\\x7f") || strings.Contains(ref, "..") || strings.Contains(ref, "@{") {
		return bad("forbidden character")
	}
	for _, c := range []byte(ref) {
		if c < 0x20 {
			return bad("control character")
		}
	}
	for _, comp := range strings.Split(ref, "/") {
		if comp == "" || comp[0] == '.' || strings.HasSuffix(comp, ".lock") {
			return bad("bad component")
		}
	}
	if strings.HasSuffix(ref, ".") {
		return bad("ends with '.'")
	}
	return nil
}

// discover finds the git dir and working tree around abs the way git does:
// walk up looking for a ".git" directory or "gitdir:" file; a directory that
// is itself a git dir (bare repository) also counts.
func discover(abs string) (gitDir, workDir string, err error) {
	dir := abs
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		dir = filepath.Dir(dir)
	}
	for {
		dotgit := filepath.Join(dir, ".git")
		if fi, err := os.Stat(dotgit); err == nil {
			if fi.IsDir() {
				return dotgit, dir, nil
			}
			gd, err := readGitFile(dotgit)
			if err != nil {
				return "", "", err
			}
			return gd, dir, nil
		}
		if looksLikeGitDir(dir) {
			return dir, "", nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", fmt.Errorf("gitstore: %s: %w", abs, ErrNotRepository)
		}
		dir = parent
	}
}

// readGitFile reads a ".git" file ("gitdir: <path>").
func readGitFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", fmt.Errorf("gitstore: %s: no gitdir line: %w", name, ErrNotRepository)
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(name), gd)
	}
	return filepath.Clean(gd), nil
}

// looksLikeGitDir reports whether dir has the shape of a git dir.
func looksLikeGitDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || fi.IsDir() {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "commondir")); err == nil {
		return true
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// readCommonDir resolves <gitDir>/commondir (linked worktrees), else gitDir.
func readCommonDir(gitDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		return gitDir, nil
	}
	if err != nil {
		return "", err
	}
	cd := strings.TrimSpace(string(b))
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gitDir, cd)
	}
	cd = filepath.Clean(cd)
	if fi, err := os.Stat(cd); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("gitstore: common dir %s of %s is missing: %w", cd, gitDir, ErrNotRepository)
	}
	return cd, nil
}

// Ref returns the full name of the store's ref.
func (s *Store) Ref() string { return s.ref }

// CommonDir returns the absolute common git dir: the one holding objects,
// refs and the locks, shared by all linked worktrees.
func (s *Store) CommonDir() string { return s.commonDir }

// WorkDir returns the top of the working tree, or "" for a bare repository.
func (s *Store) WorkDir() string { return s.workDir }

// Close releases the Store's open files. A closed Store must not be used.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.trees.reset()
	return s.odb.close()
}

var errClosed = errors.New("gitstore: store is closed")

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Clock is the clock the store waits on (Options.Clock).
func (s *Store) Clock() clock.Clock { return s.clock }
