package loopx

// Remote mode: the state ref's authority is a Git server (docs/REMOTE.md).
//
//	mutation: fence → fetch the server's head F → decide on F → commit N
//	          (parent F) → push F→N with the server's compare-and-swap →
//	          local ref := N; a lost CAS re-fetches and re-decides (bounded,
//	          jittered); a refusal is remote_rejected, no answer
//	          remote_unavailable.
//	read:     fetch → read F (the local ref fast-forwards to it).
//	--offline: the local store alone; each commit carries Loopx-Offline and
//	          the canonical request (Loopx-Request) so `loopx sync` can
//	          re-decide it on the server's head later.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Trailers of offline commits.
const (
	// TrailerOffline marks a commit made with --offline (not yet on the
	// remote): its value is the remote's name.
	TrailerOffline = "Loopx-Offline"
	// TrailerRequest holds the canonical request of an offline state
	// commit: base64 (standard) of {"op": ..., "request": {...}}.
	TrailerRequest = "Loopx-Request"
)

const (
	// remoteAttempts bounds the decide-push cycles of one remote
	// transaction (lost compare-and-swaps).
	remoteAttempts = 25
	// remoteTimeout bounds one remote transaction or fetch.
	remoteTimeout = 2 * time.Minute
	// ancestryLimit bounds the first-parent walks that decide whether the
	// local ref may fast-forward.
	ancestryLimit = 1 << 20
)

// remoteConf is the remote mode of a Store.
type remoteConf struct {
	name    string // "" for a local store
	offline bool
	syncing bool // sync's own replays: pending offline work does not block them
	sh      *remoteShared
}

// remoteShared is the state the copies of one Store share (see op).
type remoteShared struct {
	mu    sync.Mutex
	known gitstore.Hash // the head this process last pushed: an optimistic guess
	view  viewState
}

// viewState describes the head the last read or mutation decided on.
type viewState struct {
	fetchedAt time.Time // when the server's head was seen
}

func remoteOf(reg *Registry, opts Options) remoteConf {
	rc := remoteConf{sh: &remoteShared{}}
	if reg != nil {
		rc.name = reg.Remote
	}
	if opts.Remote != "" {
		rc.name = opts.Remote
	}
	rc.offline = opts.Offline && rc.name != ""
	return rc
}

func (sh *remoteShared) takeKnown() gitstore.Hash {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.known
	sh.known = gitstore.ZeroHash
	return h
}

func (sh *remoteShared) setKnown(h gitstore.Hash) {
	sh.mu.Lock()
	sh.known = h
	sh.mu.Unlock()
}

func (sh *remoteShared) setView(v viewState) {
	sh.mu.Lock()
	sh.view = v
	sh.mu.Unlock()
}

func (sh *remoteShared) getView() viewState {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.view
}

// Remote is the remote the store's authority lives on ("" for a local store).
func (s *Store) Remote() string { return s.remote.name }

// opRequest is the request of one mutation, recorded on offline commits.
type opRequest struct {
	Op  string `json:"op"`
	Req any    `json:"request"`
}

// Operation names of replayable requests (see sync.go).
const (
	opGoalCreate      = "goal.create"
	opGoalArchive     = "goal.archive"
	opAgentRegister   = "agent.register"
	opAgentUnregister = "agent.unregister"
	opTodoAdd         = "todo.add"
	opTodoReadyClaim  = "todo.ready-claim"
	opTodoClaim       = lease.OpTodoClaim
	opTodoUpdate      = lease.OpTodoUpdate
	opTodoComplete    = lease.OpTodoComplete
	opTodoSupersede   = lease.OpTodoSupersede
	opLeaseAcquire    = lease.OpLeaseAcquire
	opLeaseRenew      = lease.OpLeaseRenew
	opLeaseTransfer   = lease.OpLeaseTransfer
	opLeaseRelease    = lease.OpLeaseRelease
)

// goalActor is the request of goal archive.
type goalActor struct {
	Goal, Actor string
}

// goalAgent is the request of agent unregister.
type goalAgent struct {
	Goal, Agent string
}

// op returns the store to run one mutation with: for an offline store, a
// copy that records the request (req points at the method's request, so the
// record shows the goal and agent the decision resolved).
func (s *Store) op(name string, req any) *Store {
	if !s.remote.offline {
		return s
	}
	c := *s
	c.req = &opRequest{Op: name, Req: req}
	return &c
}

// transactRemote is one remote transaction (see the file comment).
func (s *Store) transactRemote(ctx context.Context, decide func(sn *gitstore.Snapshot) (*gitstore.Proposal, error)) (gitstore.Hash, error) {
	unlock, err := s.git.Lock(ctx, true)
	if err != nil {
		return gitstore.ZeroHash, err
	}
	defer unlock()
	if !s.remote.syncing {
		pending, _, err := s.offlinePending()
		if err != nil {
			return gitstore.ZeroHash, err
		}
		if len(pending) > 0 {
			n := mutations(pending)
			if n == 0 {
				n = len(pending) // offline boards only
			}
			return gitstore.ZeroHash, errOfflinePending(s.remote.name, n)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	guess := s.remote.sh.takeKnown()
	for attempt := 1; ; attempt++ {
		head, optimistic := guess, !guess.IsZero()
		guess = gitstore.ZeroHash
		if !optimistic {
			if head, err = s.git.Fetch(ctx, s.remote.name); err != nil {
				return gitstore.ZeroHash, err
			}
			s.noteFetched(head)
		}
		sn, err := s.git.Snapshot(head)
		if err != nil {
			return head, err
		}
		p, err := decide(sn)
		if optimistic && (err != nil || p == nil) {
			continue // judge refusals and no-ops on a fresh head only
		}
		if err != nil || p == nil {
			s.advanceLocal(head, true)
			return head, err
		}
		n, err := s.git.WriteCommit(head, p.Changes, p.Info)
		if err != nil {
			return head, err
		}
		// A chained commit (the board) rides in the same push.
		if p.Next != nil {
			p2, err := p.Next(n)
			if err != nil {
				return head, err
			}
			if p2 != nil {
				if n, err = s.git.WriteCommit(n, p2.Changes, p2.Info); err != nil {
					return head, err
				}
			}
		}
		err = s.git.Push(ctx, s.remote.name, head, n)
		if err == nil {
			s.remote.sh.setKnown(n)
			s.noteFetched(n)
			s.advanceLocal(n, true)
			s.git.MaybeGC()
			return n, nil
		}
		if !errors.Is(err, gitstore.ErrConflict) {
			return head, err
		}
		if attempt >= remoteAttempts {
			return head, fmt.Errorf("remote %s: gave up after %d attempts: %w", s.remote.name, attempt, err)
		}
		// Jittered exponential backoff: other machines are writing.
		d := min(2*time.Millisecond<<min(attempt, 7), 200*time.Millisecond)
		select {
		case <-ctx.Done():
			return head, fmt.Errorf("remote %s: %w", s.remote.name, gitstore.ErrRemoteUnavailable)
		case <-time.After(d/2 + rand.N(d)):
		}
	}
}

func errOfflinePending(remote string, n int) error {
	return lease.Errorf(lease.CodeInvalidRequest,
		"%d offline mutation(s) are not on remote %s yet: run `loopx sync` first (or keep working with --offline)", n, remote).
		With("offline_pending", n)
}

// readHeadRemote fetches the server's head for a read.
func (s *Store) readHeadRemote(ctx context.Context) (gitstore.Hash, error) {
	if s.remote.offline {
		return s.git.Head()
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	head, err := s.git.Fetch(ctx, s.remote.name)
	if err != nil {
		return gitstore.ZeroHash, err
	}
	s.noteFetched(head)
	s.advanceLocal(head, false)
	return head, nil
}

// advanceLocal moves the local ref to target, the server's head, unless it
// holds offline work not yet synced. A reader only fast-forwards; a writer
// (holding the fence, after a push) also replaces a local ref that left
// the server's history, keeping it under refs/loopx/backup/.
func (s *Store) advanceLocal(target gitstore.Hash, writer bool) {
	if target.IsZero() {
		return
	}
	for i := 0; i < 5; i++ {
		local, err := s.git.Head()
		if err != nil || local == target {
			return
		}
		if pending, _, err := s.offlinePending(); err != nil || len(pending) > 0 {
			return
		}
		ok, err := s.git.IsAncestor(local, target, ancestryLimit)
		if err != nil {
			return
		}
		if !ok {
			if !writer {
				return
			}
			if err := s.backup(local); err != nil {
				return
			}
		}
		err = s.git.UpdateRef(s.git.Ref(), local, target)
		if err == nil {
			s.clearSyncMarker()
			return
		}
		if !errors.Is(err, gitstore.ErrConflict) {
			return
		}
	}
}

// backupRef is where a local head that is not on the server is kept.
func (s *Store) backupRef(h gitstore.Hash) string {
	return "refs/loopx/backup/" + strings.TrimPrefix(s.git.TrackingRef(s.remote.name), "refs/loopx/remotes/") + "/" + h.String()
}

func (s *Store) backup(h gitstore.Hash) error {
	ref := s.backupRef(h)
	if cur, err := s.git.ReadRef(ref); err == nil && cur == h {
		return nil
	}
	return s.git.UpdateRef(ref, gitstore.ZeroHash, h)
}

// remoteStateFile names a side file of this remote's bookkeeping.
func (s *Store) remoteStateFile(suffix string) string {
	key := strings.TrimPrefix(s.git.TrackingRef(s.remote.name), "refs/loopx/remotes/")
	return "loopx-remote/" + key + suffix
}

type fetchRecord struct {
	Head      string    `json:"head"`
	FetchedAt time.Time `json:"fetched_at"`
}

// noteFetched records that the server held head at the current time (the
// loopx clock, so LOOPX_NOW keeps output reproducible).
func (s *Store) noteFetched(head gitstore.Hash) {
	now := s.opts.now().UTC()
	s.remote.sh.setView(viewState{fetchedAt: now})
	data, _ := json.Marshal(fetchRecord{Head: revString(head), FetchedAt: now})
	_ = s.git.WriteSideFile(s.remoteStateFile(".json"), data, false) // advisory: the age of an offline view
}

// lastFetched is when the server's head was last seen (zero: never).
func (s *Store) lastFetched() time.Time {
	data, err := s.git.ReadSideFile(s.remoteStateFile(".json"))
	if err != nil || data == nil {
		return time.Time{}
	}
	var r fetchRecord
	if json.Unmarshal(data, &r) != nil {
		return time.Time{}
	}
	return r.FetchedAt
}

// Sync progress: the last offline commit sync has dealt with (applied,
// replayed or reported refused). Offline commits up to it are not pending.
func (s *Store) readSyncMarker() gitstore.Hash {
	data, err := s.git.ReadSideFile(s.remoteStateFile(".synced"))
	if err != nil {
		return gitstore.ZeroHash
	}
	return gitstore.ParseHash(strings.TrimSpace(string(data)))
}

func (s *Store) writeSyncMarker(h gitstore.Hash) error {
	return s.git.WriteSideFile(s.remoteStateFile(".synced"), []byte(h.String()+"\n"), true)
}

func (s *Store) clearSyncMarker() {
	_ = s.git.RemoveSideFile(s.remoteStateFile(".synced"))
}

// offlineCommit is a commit made with --offline.
type offlineCommit struct {
	hash gitstore.Hash
	msg  string
}

// offlinePending returns the offline commits on the local ref that sync has
// not dealt with, oldest first, and the local head.
func (s *Store) offlinePending() ([]offlineCommit, gitstore.Hash, error) {
	head, err := s.git.Head()
	if err != nil {
		return nil, head, err
	}
	done := s.readSyncMarker()
	var out []offlineCommit
	err = s.git.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if c.Hash == done || trailerValue(c.Message, TrailerOffline) == "" {
			return false, nil
		}
		out = append(out, offlineCommit{hash: c.Hash, msg: c.Message})
		return true, nil
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, head, err
}

// mutations counts the state commits (not the boards) among offline commits.
func mutations(cs []offlineCommit) int {
	n := 0
	for _, c := range cs {
		if !isBoard(c.msg) {
			n++
		}
	}
	return n
}

// isBoard reports whether a commit message is a board (projection) commit's.
func isBoard(msg string) bool {
	return trailerValue(msg, TrailerRequest) == "" && trailerValue(msg, lease.TrailerProjectionOf) != ""
}

// trailerValue returns the value of the last "key: value" line of msg.
func trailerValue(msg, key string) string {
	v := ""
	for _, line := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(line, key+": "); ok {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}

// transactOffline commits on the local ref alone, marking each commit as
// offline and recording the request of state commits.
func (s *Store) transactOffline(ctx context.Context, decide func(sn *gitstore.Snapshot) (*gitstore.Proposal, error)) (gitstore.Hash, error) {
	return s.git.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		p, err := decide(sn)
		if err != nil || p == nil {
			return p, err
		}
		msg := p.Info.Message
		if msg != "" && !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		msg += TrailerOffline + ": " + s.remote.name + "\n"
		if s.req != nil && trailerValue(msg, lease.TrailerProjectionOf) == "" {
			raw, err := json.Marshal(s.req)
			if err != nil {
				return nil, err
			}
			msg += TrailerRequest + ": " + base64.StdEncoding.EncodeToString(raw) + "\n"
		}
		p.Info.Message = msg
		if next := p.Next; next != nil {
			// A chained board commit is offline work too (sync skips it:
			// the replays deliver their own boards).
			p.Next = func(first gitstore.Hash) (*gitstore.Proposal, error) {
				p2, err := next(first)
				if p2 != nil {
					m := p2.Info.Message
					if m != "" && !strings.HasSuffix(m, "\n") {
						m += "\n"
					}
					p2.Info.Message = m + TrailerOffline + ": " + s.remote.name + "\n"
				}
				return p2, err
			}
		}
		return p, nil
	})
}

// RemoteInfo describes, in results of a store with a remote, how fresh the
// view was: the JSON fields remote, offline, view_fetched_at,
// offline_pending and (reads) checked_at.
type RemoteInfo struct {
	Name string
	// Offline is set for --offline commands: the view is the local ref.
	Offline bool
	// FetchedAt is when the server's head was seen: now for an online
	// command, the last fetch for an offline one (zero: never).
	FetchedAt time.Time
	// Pending counts offline commits not yet synced.
	Pending int
	// CheckedAt is the clock reading a read judged expiry with.
	CheckedAt time.Time
}

func (ri *RemoteInfo) fill(m map[string]any) {
	m["remote"] = ri.Name
	if ri.Offline {
		m["offline"] = true
	}
	if !ri.FetchedAt.IsZero() {
		m["view_fetched_at"] = ri.FetchedAt.UTC().Format(time.RFC3339)
	}
	if ri.Pending > 0 {
		m["offline_pending"] = ri.Pending
	}
	if !ri.CheckedAt.IsZero() {
		m["checked_at"] = ri.CheckedAt.UTC().Format(time.RFC3339)
	}
}

// annotate adds the remote view to a result (nothing for a local store).
func (s *Store) annotate(res *Result, checkedAt time.Time) *Result {
	if res == nil || s.remote.name == "" {
		return res
	}
	ri := &RemoteInfo{Name: s.remote.name, Offline: s.remote.offline, CheckedAt: checkedAt}
	if s.remote.offline {
		ri.FetchedAt = s.lastFetched()
	} else {
		ri.FetchedAt = s.remote.sh.getView().fetchedAt
	}
	if pending, _, err := s.offlinePending(); err == nil {
		ri.Pending = mutations(pending)
	}
	res.Remote = ri
	return res
}

// publishOrAdopt connects the local store to remote for init: a remote that
// holds the state ref is adopted (the local ref takes its value; a local
// history that is not part of it is kept under refs/loopx/backup/); a remote
// that lacks it gets the local history, if any, pushed (published).
func (s *Store) publishOrAdopt(ctx context.Context) (action string, err error) {
	unlock, err := s.git.Lock(ctx, true)
	if err != nil {
		return "", err
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	for attempt := 1; attempt <= remoteAttempts; attempt++ {
		remoteHead, err := s.git.Fetch(ctx, s.remote.name)
		if err != nil {
			return "", err
		}
		s.noteFetched(remoteHead)
		local, err := s.git.Head()
		if err != nil {
			return "", err
		}
		switch {
		case remoteHead.IsZero() && local.IsZero():
			return actionInitCommit, nil // init's own commit publishes it (see remoteAction)
		case remoteHead.IsZero():
			err := s.git.Push(ctx, s.remote.name, gitstore.ZeroHash, local)
			if errors.Is(err, gitstore.ErrConflict) {
				continue // someone published meanwhile: adopt theirs
			}
			if err != nil {
				return "", err
			}
			s.noteFetched(local)
			return "published", nil
		case local == remoteHead:
			return "up_to_date", nil
		default:
			s.advanceLocal(remoteHead, true)
			return "adopted", nil
		}
	}
	return "", fmt.Errorf("remote %s: %w", s.remote.name, gitstore.ErrConflict)
}

// initRemote connects init to its remote (--remote, else the one the
// registry already names, so a second init keeps it) and returns what it
// did; init itself never runs offline.
func (s *Store) initRemote(in *InitOptions) (string, error) {
	if in.Remote == "" {
		in.Remote = s.remote.name
	}
	if in.Remote == "" {
		return "", nil
	}
	s.remote.name = in.Remote
	s.remote.offline = false
	return s.publishOrAdopt(context.Background())
}

// actionInitCommit: neither side had a state ref; init's commit decides.
const actionInitCommit = "init-commit"

// remoteAction is the remote_action init reports: when neither side had a
// state ref, init's own commit published it, unless another machine
// published first (init then found it: adopted).
func remoteAction(action string, res *Result) string {
	if action != actionInitCommit {
		return action
	}
	if res.Status == lease.StatusApplied {
		return "published"
	}
	return "adopted"
}
