package loopx

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// InitOptions configure init.
type InitOptions struct {
	Ref    string
	Remote string
	// RegistryFile is where the registry is written; default
	// .loopx/registry.json at the top of the working tree.
	RegistryFile string
	DefaultGoal  string
	// MaxClockSkewSeconds sets the store's clock-skew bound (0: keep).
	MaxClockSkewSeconds int64
	// Force lets init start a store on Ref when the repository's store is
	// on another ref (which is kept, not deleted).
	Force bool
	// RequireSignatures turns on signed state commits (false: keep).
	RequireSignatures bool
	// Admin adds an admin (AdminKey: its public key, authorized_keys
	// text); Registration sets who registers agents (open | admin); By is
	// the admin who changes a governed store's settings (contract
	// section 8).
	Admin, AdminKey, Registration, By string
	// Adopt lets init --remote take a remote that serves another store
	// than this clone's (store_mismatch without it); the local history is
	// kept under refs/loopx/backup/.
	Adopt bool
}

// InitData is the result of init.
type InitData struct {
	Repo     string `json:"repo"`
	Ref      string `json:"ref"`
	Registry string `json:"registry"`
	// Remote and RemoteAction (published | adopted | up_to_date) for init --remote.
	Remote       string `json:"remote,omitempty"`
	RemoteAction string `json:"remote_action,omitempty"`
}

// Init creates the repository if needed, the state ref and the registry
// file. It is idempotent.
func Init(opts Options, in InitOptions) (*Result[InitData], error) {
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	if err := gitstore.InitRepo(dir); err != nil {
		return nil, storeerr.Map(err)
	}
	if in.Ref == "" {
		in.Ref = DefaultRef
	}
	opts.Registry = ""
	opts.Ref = in.Ref
	s, err := Open(opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.checkInitRef(in); err != nil {
		return nil, err
	}
	action, err := s.initRemote(&in)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	res, err := s.Apply(lease.CallOf(lease.InitRequest{FormatVersion: lease.FormatVersion, StoreID: s.opts.newStoreID(),
		MaxClockSkewSeconds: in.MaxClockSkewSeconds, RequireSignatures: in.RequireSignatures,
		Admin: in.Admin, AdminKey: in.AdminKey, Registration: in.Registration, By: in.By}))
	if err != nil {
		return nil, err
	}
	regPath := in.RegistryFile
	top := s.git.WorkDir()
	if top == "" {
		top = filepath.Dir(s.git.CommonDir())
	}
	if regPath == "" {
		regPath = filepath.Join(top, DefaultRegistryPath)
	}
	absReg, err := filepath.Abs(regPath)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(filepath.Dir(absReg), top)
	if err != nil {
		rel = top
	}
	reg := Registry{Repo: filepath.ToSlash(rel), Ref: in.Ref, Remote: in.Remote, DefaultGoal: in.DefaultGoal}
	data, _ := json.MarshalIndent(reg, "", "  ")
	data = append(data, '\n')
	if old, err := os.ReadFile(absReg); err != nil || string(old) != string(data) {
		if err := os.MkdirAll(filepath.Dir(absReg), 0o755); err != nil {
			return nil, storeerr.Map(err)
		}
		if err := os.WriteFile(absReg, data, 0o644); err != nil {
			return nil, storeerr.Map(fmt.Errorf("write registry: %w", err))
		}
	}
	return &Result[InitData]{Envelope: res.Envelope,
		Data: InitData{Repo: top, Ref: in.Ref, Registry: regPath, Remote: in.Remote, RemoteAction: remote.InitAction(action, res.Applied())}}, nil
}

// checkInitRef refuses to point the store at code: a branch some working
// tree has checked out (its next `git commit` would move the store's ref,
// and loopx would rewrite the branch), or a ref whose history loopx did not
// make; and, without Force, a second store on another ref than the one the
// repository's store is on (it would be abandoned, silently).
func (s *Store) checkInitRef(in InitOptions) error {
	ref := in.Ref
	if strings.HasPrefix(ref, "refs/heads/") {
		trees, err := s.git.CheckedOutIn(ref)
		if err != nil {
			return storeerr.Map(err)
		}
		if len(trees) > 0 {
			return lease.Errorf(lease.CodeInvalidRequest, "%s is checked out in %s: a `git commit` there would move the store's ref, and loopx would commit onto the branch; choose a ref no working tree has checked out (the default is %s)",
				ref, strings.Join(trees, ", "), DefaultRef).With("field", "ref").With("worktrees", trees)
		}
	}
	if c, ok, err := s.git.HeadCommit(ref); err != nil {
		return storeerr.Map(err)
	} else if ok {
		// A store's tree has its root record; a code branch does not.
		isStore := false
		if sn, err := s.git.Snapshot(c.Hash); err == nil {
			_, isStore, _ = sn.HashOf(lease.MetaPath) // present; not read
		}
		if _, loopxMade := lease.ParseMessage(c.Message); !loopxMade && !isStore {
			subject, _, _ := strings.Cut(c.Message, "\n")
			return lease.Errorf(lease.CodeInvalidRequest, "%s holds history loopx did not make (head %s %q): init will not put a store on it; choose another ref",
				ref, c.Hash.String()[:12], subject).With("field", "ref")
		}
	}
	if in.Force {
		return nil
	}
	current := DefaultRef
	regPath := in.RegistryFile
	if regPath == "" && s.git.WorkDir() != "" {
		regPath = filepath.Join(s.git.WorkDir(), DefaultRegistryPath)
	}
	if regPath != "" {
		if reg, err := readRegistry(regPath); err == nil && reg.Ref != "" {
			current = reg.Ref
		}
	}
	if current == ref {
		return nil
	}
	c, ok, err := s.git.HeadCommit(current)
	if err != nil || !ok {
		return storeerr.Map(err)
	}
	n := 0
	_ = s.git.Log(c.Hash, func(gitstore.CommitMeta) (bool, error) { n++; return n < 1_000_000, nil })
	return lease.Errorf(lease.CodeInvalidRequest, "this repository's store is on %s (%d commits, head %s): init --ref %s would abandon it; run again with --force to start a new store on %s (%s is kept)",
		current, n, c.Hash.String()[:12], ref, ref, current).With("field", "ref").With("current_ref", current).With("commits", n)
}

// initRemote connects init to its remote (--remote, else the one the
// registry already names, so a second init keeps it) and returns what it
// did; init itself never runs offline.
func (s *Store) initRemote(in *InitOptions) (string, error) {
	if in.Remote == "" {
		in.Remote = s.remote.Name()
	}
	if in.Remote == "" {
		return "", nil
	}
	s.remote.Connect(in.Remote)
	s.repo = s.remote.Bind()
	return s.remote.PublishOrAdopt(context.Background(), in.Adopt)
}
