package loopx

import (
	"context"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// The store's side of remote mode (package remote keeps the rest: the
// binding to the server's ref, the store's identity, offline work and its
// bookkeeping, sync's replays, publish-or-adopt).

// Remote is the remote the store's authority lives on ("" for a local store).
func (s *Store) Remote() string { return s.remote.Name() }

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

// Sync brings a store that was used offline up to date with its remote
// (remote.Remote.Sync): each offline mutation is decided again, on the
// server's head, by this store's rules.
func (s *Store) Sync() (*Result[remote.SyncData], error) {
	online := *s
	online.remote = s.remote.ForSync()
	online.repo = online.remote.Bind()
	d, head, err := s.remote.Sync(func(call lease.Call) (string, string, error) {
		res, err := online.Apply(call)
		if err != nil {
			return "", "", err
		}
		return res.Status, res.Revision, nil
	})
	if d == nil {
		return nil, err
	}
	return NewResult(&online, Envelope{Operation: "sync", CurrentRevision: records.Rev(head)}, time.Time{}, *d), err
}

// annotate adds to a result's envelope its cursor and, for a store with a
// remote, the remote view.
func (s *Store) annotate(e *Envelope, checkedAt time.Time) {
	if e.CurrentRevision != "" {
		e.Cursor, _ = s.repo.Depth(gitstore.ParseHash(e.CurrentRevision))
	}
	e.Remote = s.remote.Info(checkedAt)
}

// NewResult is the result of a command that is neither a decision nor a
// read of one (log, gc, guard, sync...): its envelope annotated with the
// cursor and remote view, checkedAt the clock reading of a read (zero:
// none).
func NewResult[T any](s *Store, e Envelope, checkedAt time.Time, data T) *Result[T] {
	s.annotate(&e, checkedAt)
	return &Result[T]{Envelope: e, Data: data}
}

// annotateErr adds to a version_mismatch its current_cursor: the position
// of the revision it was decided on (its "revision" detail), as a result's
// current_cursor is that of current_provider_revision (seed 000: a version
// conflict exposes provider, revision and cursor).
func (s *Store) annotateErr(err error) error {
	e, ok := lease.AsError(err)
	if !ok || e.Code != lease.CodeVersionMismatch {
		return err
	}
	if _, done := e.Details["current_cursor"]; done {
		return err
	}
	if rev, _ := e.Details["revision"].(string); rev != "" {
		if n, derr := s.repo.Depth(gitstore.ParseHash(rev)); derr == nil {
			e.With("current_cursor", n)
		}
	}
	return err
}
