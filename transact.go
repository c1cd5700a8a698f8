package loopx

import (
	"context"

	"github.com/loopx-dev/loopx/gitstore"
)

// transact is the single path of every commit (state and board):
//
//   - a local store: the fenced compare-and-swap transaction on the local ref;
//   - a store with a remote: fetch, decide on the server's head, push with
//     the server's compare-and-swap, mirror the result locally (remote.go);
//   - --offline: the local transaction, each commit marked for `loopx sync`.
func (s *Store) transact(ctx context.Context, decide func(sn *gitstore.Snapshot) (*gitstore.Proposal, error)) (gitstore.Hash, error) {
	switch {
	case s.remote.name == "":
		return s.git.Transact(ctx, decide)
	case s.remote.offline:
		return s.transactOffline(ctx, decide)
	default:
		return s.transactRemote(ctx, decide)
	}
}

// readHead is the head that reads decide on: the local ref, or with a
// remote the server's head, fetched first (unless --offline).
func (s *Store) readHead(ctx context.Context) (gitstore.Hash, error) {
	if s.remote.name == "" {
		return s.git.Head()
	}
	return s.readHeadRemote(ctx)
}
