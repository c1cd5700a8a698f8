// Package loopx is the Go API of loopx: a Store opened on a Git repository,
// with one method per operation, each returning its own result type. It
// composes the pure domain (lease), the generic Git store (gitstore), the
// board renderer (markdown), the data derived beside the store
// (internal/derived) and remote mode (remote):
//
//	read head → decide (pure) → commit (CAS under the fence) → deliver the board
//
// Above it, package agent holds the agent's loop (hold, run, wait) and
// package audit verifies history and judges pushes and commits; the
// command line in cmd/loopx is a thin layer over the three
// (docs/ARCHITECTURE.md draws the map).
package loopx

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// DefaultRef is the state ref when none is configured.
const DefaultRef = "refs/loopx/state"

// DefaultRegistryPath is where init writes the registry, relative to the
// top of the working tree.
const DefaultRegistryPath = ".loopx/registry.json"

// Registry is the JSON locator of a store.
type Registry struct {
	// Repo is the repository path, relative to the registry file's folder.
	Repo        string `json:"repo"`
	Ref         string `json:"ref,omitempty"`
	Remote      string `json:"remote,omitempty"`
	DefaultGoal string `json:"default_goal,omitempty"`
}

// Options locate and configure a store.
type Options struct {
	// Registry is a registry file; when set it locates the repository.
	Registry string
	// Dir is the repository (or any folder inside it); default: the working directory.
	Dir string
	// Ref overrides the state ref.
	Ref string
	// DefaultGoal is used when a command names no goal (e.g. LOOPX_GOAL);
	// the registry's default_goal takes precedence.
	DefaultGoal string
	// Now is the decision clock: the time a mutation is decided at and
	// its commit dated (LOOPX_NOW fixes it); default Clock's. It never
	// sleeps.
	Now func() time.Time
	// SystemClock is the real time (default Clock's), which a fixed Now
	// (LOOPX_NOW) does not replace where real time must decide:
	// clock-reset is decided at it and verify --history reports commits
	// dated beyond the skew bound ahead of it (contract section 8).
	SystemClock func() time.Time
	// Clock is the clock everything that waits waits on (compare-and-swap
	// backoff, the fence's deadline, --wait, a held lease's renewals)
	// and measures its waits with; default the machine's (internal/clock).
	Clock clock.Clock
	// FenceTimeout bounds the wait for the writer fence (default 10s).
	FenceTimeout time.Duration
	// FailProjection makes board delivery fail (fault injection for tests).
	FailProjection bool
	// AfterCommit, when set, runs after a state commit moved the ref and
	// before anything is reported (tests kill the process there to lose the
	// response).
	AfterCommit func()
	// TxStats, when set, is called after every mutation's transaction
	// with how it went: applied, replayed, no_change or refused (the CLI
	// prints it on stderr when LOOPX_TX_STATS=1 asks). It runs on the
	// goroutine of the mutation, under no lock.
	TxStats func(TxStats)
	// Remote names the remote whose state ref is the authority (overrides
	// the registry's remote); see docs/REMOTE.md.
	Remote string
	// Offline works on the local ref alone, for a store with a remote;
	// `loopx sync` publishes the work later.
	Offline bool
	// SigningKey is where the commit signing key is ($LOOPX_SIGNING_KEY:
	// a private key file, or a public key the ssh-agent holds); without
	// it, git's user.signingKey (gpg.format=ssh) and the ssh-agent are
	// asked for the acting agent's registered key (signed.go).
	SigningKey string
	// SSHAuthSock is the ssh-agent's socket ($SSH_AUTH_SOCK).
	SSHAuthSock string
	// Derived tunes the derived data beside the store (internal/derived;
	// zero: the defaults).
	Derived derived.Config
}

// Store is an open loopx store.
type Store struct {
	git         *gitstore.Store // the repository (administration: gc, hooks, sync's refs)
	repo        gitstore.Repo   // the mutation path's view of it: head, snapshots, transactions
	opts        Options
	defaultGoal string
	derived     *derived.Cache // indexes and caches beside the store
	remote      *remote.Remote // remote mode (package remote)
	// unrecorded leaves the request out of state commits: only the
	// benchmark of what recording costs sets it.
	unrecorded bool
	keys       *keyRing // resolved signing keys (signed.go), shared by copies
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return clock.Or(o.Clock).Now()
}

// systemNow is the real time (Options.SystemClock).
func (o *Options) systemNow() time.Time {
	if o.SystemClock != nil {
		return o.SystemClock()
	}
	return clock.Or(o.Clock).Now()
}

// newStoreID names a new store: 128 random bits, or with a fixed clock
// (LOOPX_NOW: the same commands give the same bytes) a digest of that
// time, so that reproducible runs make reproducible stores.
func (o *Options) newStoreID() string {
	if o.Now != nil {
		sum := sha256.Sum256([]byte("loopx store " + o.Now().UTC().Format(time.RFC3339Nano)))
		return hex.EncodeToString(sum[:16])
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		sum := sha256.Sum256([]byte(fmt.Sprintf("loopx store %d %d", time.Now().UnixNano(), os.Getpid())))
		copy(b[:], sum[:])
	}
	return hex.EncodeToString(b[:])
}

func readRegistry(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, lease.Errorf(lease.CodeStoreIO, "cannot read registry %s: %v: retry with the same arguments once the cause is fixed", path, err)
	}
	if err != nil {
		return nil, lease.Errorf(lease.CodeStoreNotInitialized, "cannot read registry %s: %v", path, err)
	}
	var r Registry
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "registry %s is not valid JSON: %v", path, err)
	}
	if r.Repo == "" {
		r.Repo = "."
	}
	return &r, nil
}

// locate finds the repository and the registry that configure a store.
func locate(opts Options) (repoDir string, reg *Registry, err error) {
	if opts.Registry != "" {
		reg, err = readRegistry(opts.Registry)
		if err != nil {
			return "", nil, err
		}
		repoDir = reg.Repo
		if !filepath.IsAbs(repoDir) {
			repoDir = filepath.Join(filepath.Dir(opts.Registry), repoDir)
		}
		return repoDir, reg, nil
	}
	repoDir = opts.Dir
	if repoDir == "" {
		repoDir = "."
	}
	return repoDir, nil, nil
}

// Open opens the store of an existing repository. A missing repository or
// state ref is reported by the commands as store_not_initialized.
func Open(opts Options) (*Store, error) {
	repoDir, reg, err := locate(opts)
	if err != nil {
		return nil, err
	}
	gopts := gitstore.Options{Ref: DefaultRef, FenceTimeout: opts.FenceTimeout, Clock: opts.Clock}
	probe, err := gitstore.Open(repoDir, gopts)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if reg == nil {
		// The repository's own registry, when present, configures the store.
		if top := probe.WorkDir(); top != "" {
			if _, statErr := os.Stat(filepath.Join(top, DefaultRegistryPath)); statErr == nil {
				if reg, err = readRegistry(filepath.Join(top, DefaultRegistryPath)); err != nil {
					probe.Close()
					return nil, err
				}
			}
		}
	}
	s := &Store{opts: opts, defaultGoal: opts.DefaultGoal}
	remoteName := opts.Remote
	if remoteName == "" && reg != nil {
		remoteName = reg.Remote
	}
	ref := DefaultRef
	if reg != nil {
		if reg.Ref != "" {
			ref = reg.Ref
		}
		if reg.DefaultGoal != "" {
			s.defaultGoal = reg.DefaultGoal
		}
	}
	if opts.Ref != "" {
		ref = opts.Ref
	}
	defer func() {
		if s.git != nil {
			s.keys = &keyRing{signingKey: opts.SigningKey, authSock: opts.SSHAuthSock, git: s.git}
			s.remote = remote.New(s.git, remoteName, opts.Offline, s.opts.now)
			s.repo = s.remote.Bind()
			s.derived = derived.New(s.repo, opts.Derived)
		}
	}()
	if ref == DefaultRef {
		s.git = probe
	} else {
		probe.Close()
		gopts.Ref = ref
		if s.git, err = gitstore.Open(repoDir, gopts); err != nil {
			return nil, storeerr.Map(err)
		}
	}
	return s, nil
}

// Close saves what the record cache learned and releases the repository.
func (s *Store) Close() error {
	if s.derived != nil {
		s.derived.Close()
	}
	s.keys.close()
	if s.git == nil {
		return nil
	}
	return s.git.Close()
}

// OpenRepo returns a Store on any Repo with the given options: the
// in-memory repository (gitstore.MemRepo) of tests and of programs that
// keep no Git repository, where the administration of one (gc, hooks,
// remotes, signatures) does not apply.
func OpenRepo(repo gitstore.Repo, opts Options) *Store {
	s := &Store{repo: repo, opts: opts, defaultGoal: opts.DefaultGoal, derived: derived.New(repo, opts.Derived),
		keys: &keyRing{signingKey: opts.SigningKey, authSock: opts.SSHAuthSock}}
	s.remote = remote.New(nil, "", false, s.opts.now)
	return s
}

// The store's rooms above the root (audit, agent) work through these.

// Repo is the mutation path's view of the store: head, snapshots,
// transactions, history (the local ref's, or with a remote the server's).
func (s *Store) Repo() gitstore.Repo { return s.repo }

// Git is the Git repository (nil for a Store on another Repo: OpenRepo).
func (s *Store) Git() *gitstore.Store { return s.git }

// Derived is the derived data beside the store (internal/derived).
func (s *Store) Derived() *derived.Cache { return s.derived }

// Now is the store's clock (Options.Now; LOOPX_NOW).
func (s *Store) Now() time.Time { return s.opts.now() }

// SystemNow is the real time (Options.SystemClock), which a fixed Now does
// not replace where real time must decide.
func (s *Store) SystemNow() time.Time { return s.opts.systemNow() }

// Clock is the clock the store's waits wait on (Options.Clock).
func (s *Store) Clock() clock.Clock { return clock.Or(s.opts.Clock) }

// Remote is the remote the store's authority lives on ("" for a local store).
func (s *Store) Remote() string { return s.remote.Name() }

// Ref is the state ref of the store.
func (s *Store) Ref() string { return s.git.Ref() }

// HasStore reports whether the folder holds (or is inside) a repository
// with a loopx store: a registry file or the default state ref.
func HasStore(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, DefaultRegistryPath)); err == nil {
		return true
	}
	g, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		return false
	}
	defer g.Close()
	h, err := g.Head()
	return err == nil && !h.IsZero()
}

// viewOf returns the records view of a snapshot with the derived data
// beside the store (internal/derived: the decoded-record cache, the
// goals' active leases, board models, archived receipts).
func (s *Store) viewOf(sn *gitstore.Snapshot) *lease.View { return s.derived.View(sn) }

// commitInfo is the identity and message of a commit decided at now; an
// offline commit is marked for `loopx sync`.
func (s *Store) commitInfo(actor, msg string, now time.Time) gitstore.CommitInfo {
	return records.Commit(actor, s.remote.OfflineTrailer(msg), now)
}

// goalOf resolves the goal of a command (explicit, configured default, or
// the only active goal).
func (s *Store) goalOf(v *lease.View, explicit string) (string, error) {
	return lease.ResolveGoal(v, explicit, s.defaultGoal)
}
