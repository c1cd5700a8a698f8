package loopx

// Remote mode: the state ref's authority is a Git server (docs/REMOTE.md).
//
//	mutation: the transaction of gitstore with the Remote authority: fence →
//	          fetch the server's head F → decide on F → commit N (parent F)
//	          → push F→N with the server's compare-and-swap → local ref := N
//	          (OnHead); a lost CAS re-fetches and re-decides (the retry
//	          policy); a refusal is remote_rejected, no answer
//	          remote_unavailable.
//	read:     fetch → read F (the local ref fast-forwards to it).
//	--offline: the local store alone; each commit carries Loopx-Offline
//	          besides its recorded request (Loopx-Request), so `loopx sync`
//	          can re-decide it on the server's head later.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// Trailers of offline commits.
const (
	// TrailerOffline marks a commit made with --offline (not yet on the
	// remote): its value is the remote's name.
	TrailerOffline = lease.TrailerOffline
	// TrailerRequest holds the canonical request of every state commit
	// (JSON; before format 2 only offline commits had one, in base64).
	TrailerRequest = lease.TrailerRequest
)

const (
	// remoteAttempts bounds init's publish-or-adopt rounds.
	remoteAttempts = 25
	// remoteTimeout bounds one remote fetch or sync.
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

// remoteShared is the state the copies of one Store share (sync's online
// copy).
type remoteShared struct {
	mu   sync.Mutex
	view viewState
	// known is the id of the store this clone used (knownStoreID), read
	// once (knownRead).
	known     string
	knownRead bool
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

// bindRepo makes the store's Repo: the local ref, or (with a remote, not
// offline) the server's ref, whose heads the local ref follows.
func (s *Store) bindRepo() {
	if s.remote.name == "" || s.remote.offline {
		s.repo = s.git.Bind(gitstore.LocalRef(), gitstore.DefaultRetry)
		return
	}
	s.repo = identityChecked{s.git.Bind(&gitstore.Remote{Name: s.remote.name, OnHead: func(h gitstore.Hash, published bool) {
		s.noteFetched(h)
		s.advanceLocal(h, published)
	}}, gitstore.DefaultRetry), s}
}

// identityChecked is the remote's Repo for every read that starts from
// its head (log, verify, status, guard...): a head of another store is
// store_mismatch. Mutations check the snapshot they decide on (decide).
type identityChecked struct {
	gitstore.Repo
	s *Store
}

func (r identityChecked) Head(ctx context.Context) (gitstore.Hash, error) {
	h, err := r.Repo.Head(ctx)
	if err != nil || h.IsZero() {
		return h, err
	}
	known := r.s.knownStoreID()
	if known == "" {
		return h, nil
	}
	served, err := r.s.storeIDAt(h)
	if err != nil {
		return h, nil // the read itself reports a corrupt or missing store
	}
	if served != "" && served != known {
		return gitstore.ZeroHash, errStoreMismatch(r.s.remote.name, known, served)
	}
	return h, nil
}

// The store's identity (contract section 8): every store has a store_id
// (loopx.yaml). A clone remembers the store it used: its local ref, which
// mirrors the server's, holds that store's loopx.yaml. When the configured
// remote (the registry's, --remote, a rewritten remote URL) serves a state
// ref of another store, every command refuses with store_mismatch before
// deciding anything, and the local ref is never moved onto it, until the
// user adopts the other store explicitly (`loopx init --remote NAME
// --adopt`, which keeps the local history under refs/loopx/backup/). A
// clone without a local store (a first contact) takes what it finds.

// knownStoreID is the id of the store this clone used: its local ref's
// ("" when it has none, or an old store without one). Read once per Store.
func (s *Store) knownStoreID() string {
	s.remote.sh.mu.Lock()
	defer s.remote.sh.mu.Unlock()
	if !s.remote.sh.knownRead {
		s.remote.sh.knownRead = true
		s.remote.sh.known = s.localStoreID()
	}
	return s.remote.sh.known
}

// localStoreID reads the store id on the local ref.
func (s *Store) localStoreID() string {
	if s.git == nil {
		return ""
	}
	h, err := s.git.Head()
	if err != nil || h.IsZero() {
		return ""
	}
	sn, err := s.git.Snapshot(h)
	if err != nil {
		return ""
	}
	m, err := lease.NewView(records.Files{Snap: sn}, h.String(), sn.Time()).Meta()
	if err != nil || m == nil {
		return ""
	}
	return m.StoreID
}

// checkStoreIdentity refuses a view of the remote's head that is another
// store than the one this clone used.
func (s *Store) checkStoreIdentity(v *lease.View) error {
	if s.remote.name == "" || s.remote.offline {
		return nil
	}
	known := s.knownStoreID()
	if known == "" {
		return nil
	}
	m, err := v.Meta()
	if err != nil || m == nil {
		return err // a missing or corrupt store is the decision's to report
	}
	if m.StoreID == known || m.StoreID == "" {
		// A store older than format 3 has no id yet (its upgrade, made
		// offline here, may still be waiting for sync): it cannot be told
		// apart, and the upgrade gives it this clone's id.
		return nil
	}
	return errStoreMismatch(s.remote.name, known, m.StoreID)
}

func errStoreMismatch(remote, known, served string) *lease.Error {
	return lease.Errorf(lease.CodeStoreMismatch, "remote %s serves another store (%s) than the one this clone used (%s): check the remote's URL and the registry; to work with the remote's store instead, run `loopx init --remote %s --adopt` (this clone's history is kept under refs/loopx/backup/)",
		remote, served, known, remote).With("remote", remote).With("local_store_id", known).With("remote_store_id", served)
}

// checkOfflineWork refuses an online mutation while offline work waits for
// `loopx sync` (so a machine's order of work never changes silently).
func (s *Store) checkOfflineWork() error {
	if s.remote.name == "" || s.remote.offline || s.remote.syncing {
		return nil
	}
	pending, _, err := s.offlinePending()
	if err != nil {
		return storeerr.Map(err)
	}
	if len(pending) > 0 {
		n := mutations(pending)
		if n == 0 {
			n = len(pending) // offline boards only
		}
		return errOfflinePending(s.remote.name, n)
	}
	return nil
}

func errOfflinePending(remote string, n int) error {
	return lease.Errorf(lease.CodeInvalidRequest,
		"%d offline mutation(s) are not on remote %s yet: run `loopx sync` first (or keep working with --offline)", n, remote).
		With("offline_pending", n)
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
	data, _ := json.Marshal(fetchRecord{Head: records.Rev(head), FetchedAt: now})
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
	if err == nil && len(out) > 0 {
		out, err = s.notOnServer(out)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, head, err
}

// notOnServer drops, from offline commits listed newest first along the
// local ref's first-parent chain, those the server already has: an
// offline commit another clone pushed as it is (a server without the hook
// accepts it) came here with a fetch, and is not this clone's work to
// replay, ever (contract section 8). The server's head is the tracking
// ref's last known value; one walk of its chain down to the oldest
// candidate's depth decides.
func (s *Store) notOnServer(cands []offlineCommit) ([]offlineCommit, error) {
	server, err := s.git.ReadRef(s.git.TrackingRef(s.remote.name))
	if err != nil || server.IsZero() {
		return cands, nil // never fetched: nothing is known to be there
	}
	oldest, err := s.git.Depth(cands[len(cands)-1].hash)
	if err != nil {
		return nil, err
	}
	top, err := s.git.Depth(server)
	if err != nil {
		return nil, err
	}
	if top < oldest {
		return cands, nil
	}
	there := map[gitstore.Hash]bool{}
	steps := top - oldest + 1
	err = s.git.Log(server, func(c gitstore.CommitMeta) (bool, error) {
		there[c.Hash] = true
		steps--
		return steps > 0, nil
	})
	if err != nil {
		return nil, err
	}
	for i, c := range cands {
		if there[c.hash] {
			return cands[:i], nil // it and everything below it are the server's
		}
	}
	return cands, nil
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

var _ = context.Background

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

// annotate adds to a result's envelope its cursor and, for a store with a
// remote, the remote view.
func (s *Store) annotate(e *Envelope, checkedAt time.Time) {
	if e.CurrentRevision != "" {
		e.Cursor, _ = s.repo.Depth(gitstore.ParseHash(e.CurrentRevision))
	}
	if s.remote.name == "" {
		return
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
	e.Remote = ri
}

// newResult is the result of a command that is neither a decision nor a
// read of one (log, gc, guard, sync...): its envelope annotated with the
// cursor and remote view, checkedAt the clock reading of a read (zero:
// none).
func newResult[T any](s *Store, e Envelope, checkedAt time.Time, data T) *Result[T] {
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

// publishOrAdopt connects the local store to remote for init: a remote that
// holds the state ref is adopted (the local ref takes its value; a local
// history that is not part of it is kept under refs/loopx/backup/); a remote
// that lacks it gets the local history, if any, pushed (published).
func (s *Store) publishOrAdopt(ctx context.Context, adopt bool) (action string, err error) {
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
			if known := s.localStoreID(); known != "" && !adopt {
				served, err := s.storeIDAt(remoteHead)
				if err != nil {
					return "", err
				}
				if served != "" && served != known {
					return "", errStoreMismatch(s.remote.name, known, served)
				}
			}
			s.advanceLocal(remoteHead, true)
			s.remote.sh.mu.Lock()
			s.remote.sh.knownRead = false // the adopted store is the one this clone uses now
			s.remote.sh.mu.Unlock()
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
	s.bindRepo()
	return s.publishOrAdopt(context.Background(), in.Adopt)
}

// storeIDAt reads the store id of the store at commit h.
func (s *Store) storeIDAt(h gitstore.Hash) (string, error) {
	sn, err := s.git.Snapshot(h)
	if err != nil {
		return "", err
	}
	m, err := lease.NewView(records.Files{Snap: sn}, h.String(), sn.Time()).Meta()
	if err != nil || m == nil {
		return "", err
	}
	return m.StoreID, nil
}

// actionInitCommit: neither side had a state ref; init's commit decides.
const actionInitCommit = "init-commit"

// remoteAction is the remote_action init reports: when neither side had a
// state ref, init's own commit published it, unless another machine
// published first (init then found it: adopted).
func remoteAction(action string, res *Envelope) string {
	if action != actionInitCommit {
		return action
	}
	if res.Status == lease.StatusApplied {
		return "published"
	}
	return "adopted"
}
