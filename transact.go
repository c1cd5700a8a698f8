package loopx

import (
	"context"

	"github.com/loopx-dev/loopx/gitstore"
)

// transact is the single path of every commit (state and board): today the
// local store's fenced compare-and-swap transaction.
func (s *Store) transact(ctx context.Context, decide func(sn *gitstore.Snapshot) (*gitstore.Proposal, error)) (gitstore.Hash, error) {
	return s.git.Transact(ctx, decide)
}

// readHead is the head that reads decide on.
func (s *Store) readHead(ctx context.Context) (gitstore.Hash, error) {
	return s.git.Head()
}
