package gitstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/loopx-dev/loopx/internal/retry"
)

// The compare-and-swap cycle, once for every authority.
//
//	fence → head (the authority's) → snapshot → decide → build the commit
//	(and a chained second one) → publish it with a compare-and-swap on the
//	head decided on → done; a lost compare-and-swap decides again on the
//	new head, after a backoff from the retry policy.
//
// The authority says where the ref's truth lives: this repository's ref
// (LocalRef), or a Git server's (Remote), whose receive-pack checks the old
// value under its own ref lock: a true compare-and-swap, never a force push.
// Everything else (chaining, retries, backoff, the lookup of a lost
// response) is the same for both.

// Decide is one decision on a snapshot: the proposal to commit on it, or
// nil (nothing to commit), or an error (nothing is committed).
type Decide func(sn *Snapshot) (*Proposal, error)

// TxResult is what a transaction did.
type TxResult struct {
	// Head is the ref's value afterwards: the last commit made, or the
	// head the final decision was made on.
	Head Hash
	// State is the first commit made (ZeroHash when none): the commit of
	// the proposal's own changes, before any chained commit.
	State Hash
	// Base is the head the final decision was made on.
	Base Hash
	// Attempts counts decisions; Conflicts the lost compare-and-swaps.
	Attempts, Conflicts int
	// ByServer: the server decided and committed (request.go);
	// Reproduced: its commits were made again here, not fetched.
	ByServer, Reproduced bool
	// Asked is how long the server took to answer the request (the push
	// and its hook: ByServer); ServerDecided how long, of that, its hook
	// said the decision took (its writer fence's wait included).
	Asked, ServerDecided time.Duration
}

// RetryPolicy bounds the retries of lost compare-and-swaps: the one retry
// policy of loopx (internal/retry), whose slot (Base) a transaction sets
// to its own attempt time (a round trip to the authority and a decision).
// After the n-th lost race the wait is random in [Min, min(Max,
// slot×2^e)], e growing with n over GrowFor races and then falling. A race
// is lost to someone whose attempt overlapped ours, so waits are measured
// in attempts, not in fixed milliseconds: a few milliseconds on a local
// ref, tens through a server; the expected wait grows until the
// contenders' attempts stop overlapping, and shrinks for the next
// transaction; a writer that has lost many races in a row retries sooner
// than the ones that just arrived (age wins, and nobody is left waiting
// while newcomers take every turn). A transaction through a server also
// starts with the contention its clone last saw there (contention.go), so
// a writer that just won does not outrun the ones still waiting.
type RetryPolicy = retry.Policy

// DefaultRetry is the policy of loopx's mutations: up to 200 attempts,
// full-jitter waits from 2 ms up to 2 s in a window that grows over 4
// lost races (to 16 slots: room for about that many contenders'
// attempts) and then shrinks, two minutes in all. A lost
// compare-and-swap costs one round trip to the authority; 16 writers on
// one server lose many races, and none should give up while the others
// progress.
var DefaultRetry = RetryPolicy{MaxAttempts: 200, Min: 2 * time.Millisecond, Max: 2 * time.Second,
	Factor: 2, Jitter: 1, GrowFor: 4, Timeout: 2 * time.Minute}

// Authority is where the ref's truth lives (LocalRef, or a Remote).
type Authority interface {
	// head returns the head to decide on; guess reports an optimistic
	// value that a refusal must not be judged on.
	head(ctx context.Context, s *Store, attempt int) (h Hash, guess bool, err error)
	// publish makes pr (built on expected) the authority's head, failing
	// with ErrConflict when the head is no longer expected.
	publish(ctx context.Context, s *Store, expected Hash, pr *prepared) error
}

// LocalRef is the authority of the store's own ref.
func LocalRef() Authority { return localRef{} }

type localRef struct{}

func (localRef) head(ctx context.Context, s *Store, attempt int) (Hash, bool, error) {
	h, err := s.Head()
	return h, false, err
}

func (localRef) publish(ctx context.Context, s *Store, expected Hash, pr *prepared) error {
	_, err := s.commitPrepared(expected, pr)
	return err
}

// Remote is the authority of a Git server's ref, reached with fetch and a
// compare-and-swap push. The local ref mirrors it (OnHead moves it).
type Remote struct {
	// Name is the remote's name (or URL).
	Name string
	// OnHead, when set, is told each head seen on the server: fetched
	// (published false) or just published by this transaction (true).
	OnHead func(h Hash, published bool)

	mu    sync.Mutex
	known Hash // the head this process last published: an optimistic guess
	// guessed is the guess handed to the transaction in progress (zero:
	// none); stale records that the last guess lost its compare-and-swap.
	guessed Hash
	stale   bool
}

// head is the head to decide on. The first attempt of a transaction
// decides on the head this process last published, without asking the
// server, while that guess keeps proving right: a writer alone on its
// server saves the fetch's round trip. A guess that lost its
// compare-and-swap cost a push for nothing (through a busy server the head
// moves between two renewals of a held lease, 20 s apart), so after one
// the transactions fetch first, until a fetch finds the server's head
// still at the head this process last published: the guess would have
// held, so guessing resumes.
func (r *Remote) head(ctx context.Context, s *Store, attempt int) (Hash, bool, error) {
	r.mu.Lock()
	guess, stale := r.known, r.stale
	r.known, r.guessed = ZeroHash, ZeroHash
	if attempt == 1 && !guess.IsZero() && !stale && s.hasCommit(guess) {
		r.guessed = guess
		r.mu.Unlock()
		return guess, true, nil
	}
	r.mu.Unlock()
	h, err := s.Fetch(ctx, r.Name)
	if err != nil {
		return ZeroHash, false, err
	}
	if attempt == 1 && stale && !guess.IsZero() && h == guess {
		r.mu.Lock()
		r.stale = false
		r.mu.Unlock()
	}
	if r.OnHead != nil {
		r.OnHead(h, false)
	}
	return h, false, nil
}

// Fetched fetches the server's head for a read, telling OnHead.
func (r *Remote) Fetched(ctx context.Context, s *Store) (Hash, error) {
	h, _, err := r.head(ctx, s, 0)
	return h, err
}

func (r *Remote) publish(ctx context.Context, s *Store, expected Hash, pr *prepared) error {
	if err := s.writePrepared(pr); err != nil {
		return err
	}
	if err := s.Push(ctx, r.Name, expected, pr.head); err != nil {
		if errors.Is(err, ErrConflict) {
			r.mu.Lock()
			if !r.guessed.IsZero() && r.guessed == expected {
				r.stale = true
			}
			r.mu.Unlock()
		}
		return err
	}
	r.mu.Lock()
	r.known = pr.head
	r.mu.Unlock()
	if r.OnHead != nil {
		r.OnHead(pr.head, true)
	}
	return nil
}

// Repo is a store of files on a ref as a mutation path needs it: the
// authority's head, snapshots, one compare-and-swap transaction, history.
// *Store bound to an authority (Bind) and MemRepo implement it; the
// conformance suite (storetest) checks both.
type Repo interface {
	// Head returns the authority's head (ZeroHash when the ref is absent).
	Head(ctx context.Context) (Hash, error)
	// Snapshot returns the snapshot at a commit (ZeroHash: empty).
	Snapshot(rev Hash) (*Snapshot, error)
	// Transact runs decide under the fence and commits its proposal with a
	// compare-and-swap on the head it decided on, retrying lost ones.
	Transact(ctx context.Context, decide Decide) (TxResult, error)
	// Log walks first-parent history from a commit, newest first.
	Log(from Hash, fn func(c CommitMeta) (bool, error)) error
	// ChildOf finds, on head's first-parent history, the commit whose
	// parent is parent (ZeroHash when there is none): where a decision
	// made on parent was committed (the lookup of a lost response).
	ChildOf(head, parent Hash) (Hash, error)
	// DiffHashes calls fn for each file under dir whose blob differs
	// between two commits.
	DiffHashes(from, to Hash, dir string, fn func(path string, old, new Hash) error) error
	// TreeOf returns the tree name a commit of changes on parent would
	// have, writing nothing.
	TreeOf(parent Hash, changes []Change) (Hash, error)
	// Depth is the number of commits on a commit's first-parent chain (0
	// for ZeroHash): its position on the history, the contract's cursor.
	Depth(h Hash) (int64, error)
	// ReadSideFile and WriteSideFile keep derived data beside the ref;
	// the bytes ReadSideFile returns are the caller's own.
	ReadSideFile(name string) ([]byte, error)
	WriteSideFile(name string, data []byte, durable bool) error
}

// Bind returns the store as a Repo whose truth is auth, retried by policy.
func (s *Store) Bind(auth Authority, policy RetryPolicy) Repo {
	return &bound{Store: s, auth: auth, policy: policy}
}

type bound struct {
	*Store
	auth   Authority
	policy RetryPolicy
}

func (b *bound) Head(ctx context.Context) (Hash, error) {
	h, _, err := b.auth.head(ctx, b.Store, 0)
	return h, err
}

func (b *bound) Transact(ctx context.Context, decide Decide) (TxResult, error) {
	return b.Store.transact(ctx, b.auth, b.policy, decide)
}

// Transact runs one read-decide-commit cycle on the local ref under the
// exclusive fence (see the authority comment at the top of this file): it
// reads the head, calls decide with a snapshot of it, and commits the
// returned proposal on top of that head. If decide returns (nil, nil) or an
// error, nothing is committed and Transact returns the head it read and
// decide's error. A lost compare-and-swap (only possible for a writer that
// bypasses the fence, such as `git update-ref`) decides again on the new
// head, as DefaultRetry allows; then the error wraps ErrConflict. decide
// must therefore be free of side effects other than its proposal. It
// returns the new head.
func (s *Store) Transact(ctx context.Context, decide Decide) (Hash, error) {
	res, err := s.transact(ctx, LocalRef(), DefaultRetry, decide)
	return res.Head, err
}

// transact is the cycle.
func (s *Store) transact(ctx context.Context, auth Authority, policy RetryPolicy, decide Decide) (TxResult, error) {
	var res TxResult
	ctx, cancel := policy.Bound(ctx)
	defer cancel()
	unlock, err := s.Lock(ctx, true)
	if err != nil {
		return res, err
	}
	defer unlock()
	var lockedSince time.Time // when pushes started finding the server's lock file
	var slot time.Duration    // how long an attempt takes (moving average)
	mem := s.contention(auth)
	if err := mem.before(ctx, policy); err != nil {
		return res, err
	}
	defer func() { mem.after(res.Conflicts, slot) }()
	for attempt := 1; ; attempt++ {
		began := s.clock.Now()
		head, guess, err := auth.head(ctx, s, attempt)
		if err != nil {
			return res, err
		}
		res.Base, res.Head, res.Attempts = head, head, attempt
		sn, err := s.Snapshot(head)
		if err != nil {
			return res, err
		}
		p, err := decide(sn)
		if guess && (err != nil || p == nil) {
			continue // judge refusals and no-ops on a fresh head only
		}
		if err != nil || p == nil {
			return res, err
		}
		pr, err := s.prepareProposal(head, p)
		if err != nil {
			return res, err
		}
		err = auth.publish(ctx, s, head, pr)
		if err == nil {
			res.Head, res.State = pr.head, pr.first
			s.maybeGCLocked()
			return res, nil
		}
		if !errors.Is(err, ErrConflict) {
			return res, err
		}
		if errors.Is(err, errServerLock) {
			if lockedSince.IsZero() {
				lockedSince = s.clock.Now()
			} else if held := s.clock.Since(lockedSince); held > s.serverLockWait {
				return res, fmt.Errorf("gitstore: the server's ref lock has stayed in place for %v: a git process on the server may have died holding it; the server's operator can remove the lock file when no push is running (%v): %w",
					held.Round(time.Second), err, ErrServerLocked)
			}
		} else {
			lockedSince = time.Time{}
		}
		res.Conflicts++
		if took := s.clock.Since(began); slot == 0 {
			slot = took
		} else {
			slot = (3*slot + took) / 4
		}
		if policy.Exhausted(attempt) {
			return res, fmt.Errorf("gitstore: gave up after %d attempts: %w", attempt, err)
		}
		if werr := policy.WithBase(slot).Wait(ctx, s.clock, res.Conflicts); werr != nil {
			return res, fmt.Errorf("gitstore: %w (after %w)", werr, err)
		}
	}
}

// ChildOf finds the commit on head's first-parent history whose parent is
// parent (ZeroHash when none): where a decision made on parent landed.
func (s *Store) ChildOf(head, parent Hash) (Hash, error) {
	found := ZeroHash
	err := s.Log(head, func(c CommitMeta) (bool, error) {
		if c.Parent == parent {
			found = c.Hash
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// TreeOf returns the name of the tree a commit of changes on parent would
// have, without writing anything.
func (s *Store) TreeOf(parent Hash, changes []Change) (Hash, error) {
	if err := validateChanges(changes); err != nil {
		return ZeroHash, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	pend := newPendingObjects()
	h, err := s.buildCommit(pend, parent, changes, CommitInfo{When: time.Unix(0, 0)})
	if err != nil {
		return ZeroHash, err
	}
	return pend.commits[h], nil
}
