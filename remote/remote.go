package remote

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

// Remote is the remote mode of one store: the remote its authority lives
// on ("" for a local store), whether it works offline, and the bookkeeping
// of both beside the store (loopx-remote/<remote>.*: when the server's head
// was last seen, how far sync got). The copies of one Remote (ForSync)
// share what they learn.
type Remote struct {
	git     *gitstore.Store // nil for a store without a Git repository (no remote)
	now     func() time.Time
	name    string // "" for a local store
	offline bool
	syncing bool // sync's own replays: pending offline work does not block them
	sh      *shared
}

// shared is the state the copies of one Remote share (sync's online copy).
type shared struct {
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

// New is the remote mode of the store in git: on remote name ("" for a
// local store), offline or not; now is the loopx clock (LOOPX_NOW keeps
// the bookkeeping's output reproducible).
func New(git *gitstore.Store, name string, offline bool, now func() time.Time) *Remote {
	return &Remote{git: git, now: now, name: name, offline: offline && name != "", sh: &shared{}}
}

func (sh *shared) setView(v viewState) {
	sh.mu.Lock()
	sh.view = v
	sh.mu.Unlock()
}

func (sh *shared) getView() viewState {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.view
}

// Name is the remote the store's authority lives on ("" for a local store).
func (r *Remote) Name() string { return r.name }

// Online reports whether the authority is the server's ref (a remote, not
// offline).
func (r *Remote) Online() bool { return r.name != "" && !r.offline }

// Bind makes the store's Repo: the local ref, or (with a remote, not
// offline) the server's ref, whose heads the local ref follows.
func (r *Remote) Bind() gitstore.Repo {
	if !r.Online() {
		return r.git.Bind(gitstore.LocalRef(), gitstore.DefaultRetry)
	}
	return identityChecked{r.git.Bind(&gitstore.Remote{Name: r.name, OnHead: func(h gitstore.Hash, published bool) {
		r.noteFetched(h)
		r.advanceLocal(h, published)
	}}, gitstore.DefaultRetry), r}
}

// ForSync is the online copy of r that sync's replays go through: pending
// offline work does not block them.
func (r *Remote) ForSync() *Remote {
	c := *r
	c.offline, c.syncing = false, true
	return &c
}

// Connect points r at remote name, online (init --remote).
func (r *Remote) Connect(name string) {
	r.name, r.offline = name, false
}

// OfflineTrailer adds to an offline commit's message the trailer that
// marks it for sync (Loopx-Offline: <remote>).
func (r *Remote) OfflineTrailer(msg string) string {
	if !r.offline {
		return msg
	}
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg + TrailerOffline + ": " + r.name + "\n"
}

// IsOffline reports whether a commit message is an offline commit's (not
// yet decided on the server).
func IsOffline(msg string) bool { return trailerValue(msg, TrailerOffline) != "" }

// ProbeHead reads the server's head without fetching (one ref
// advertisement, no pack): what a waiting request polls.
func (r *Remote) ProbeHead(ctx context.Context) (gitstore.Hash, error) {
	return r.git.LsRemote(ctx, r.name)
}

// LastSeenHead is the server's head as last fetched (the tracking ref).
func (r *Remote) LastSeenHead() (gitstore.Hash, error) {
	return r.git.ReadRef(r.git.TrackingRef(r.name))
}

// identityChecked is the remote's Repo for every read that starts from
// its head (log, verify, status, guard...): a head of another store is
// store_mismatch. Mutations check the snapshot they decide on (decide).
type identityChecked struct {
	gitstore.Repo
	r *Remote
}

func (ic identityChecked) Head(ctx context.Context) (gitstore.Hash, error) {
	h, err := ic.Repo.Head(ctx)
	if err != nil || h.IsZero() {
		return h, err
	}
	known := ic.r.knownStoreID()
	if known == "" {
		return h, nil
	}
	served, err := ic.r.storeIDAt(h)
	if err != nil {
		return h, nil // the read itself reports a corrupt or missing store
	}
	if served != "" && served != known {
		return gitstore.ZeroHash, errStoreMismatch(ic.r.name, known, served)
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
// ("" when it has none, or an old store without one). Read once per Remote.
func (r *Remote) knownStoreID() string {
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	if !r.sh.knownRead {
		r.sh.knownRead = true
		r.sh.known = r.localStoreID()
	}
	return r.sh.known
}

// localStoreID reads the store id on the local ref.
func (r *Remote) localStoreID() string {
	if r.git == nil {
		return ""
	}
	h, err := r.git.Head()
	if err != nil || h.IsZero() {
		return ""
	}
	sn, err := r.git.Snapshot(h)
	if err != nil {
		return ""
	}
	id, _ := records.StoreID(sn)
	return id
}

// CheckIdentity refuses a view of the remote's head that is another store
// than the one this clone used.
func (r *Remote) CheckIdentity(v *lease.View) error {
	if r.name == "" || r.offline {
		return nil
	}
	known := r.knownStoreID()
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
	return errStoreMismatch(r.name, known, m.StoreID)
}

func errStoreMismatch(remote, known, served string) *lease.Error {
	return lease.Errorf(lease.CodeStoreMismatch, "remote %s serves another store (%s) than the one this clone used (%s): check the remote's URL and the registry; to work with the remote's store instead, run `loopx init --remote %s --adopt` (this clone's history is kept under refs/loopx/backup/)",
		remote, served, known, remote).With("remote", remote).With("local_store_id", known).With("remote_store_id", served)
}

// CheckOfflineWork refuses an online mutation while offline work waits for
// `loopx sync` (so a machine's order of work never changes silently).
func (r *Remote) CheckOfflineWork() error {
	if r.name == "" || r.offline || r.syncing {
		return nil
	}
	pending, _, err := r.offlinePending()
	if err != nil {
		return storeerr.Map(err)
	}
	if len(pending) > 0 {
		n := mutations(pending)
		if n == 0 {
			n = len(pending) // offline boards only
		}
		return errOfflinePending(r.name, n)
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
func (r *Remote) advanceLocal(target gitstore.Hash, writer bool) {
	if target.IsZero() {
		return
	}
	for i := 0; i < 5; i++ {
		local, err := r.git.Head()
		if err != nil || local == target {
			return
		}
		if pending, _, err := r.offlinePending(); err != nil || len(pending) > 0 {
			return
		}
		ok, err := r.git.IsAncestor(local, target, ancestryLimit)
		if err != nil {
			return
		}
		if !ok {
			if !writer {
				return
			}
			if err := r.backup(local); err != nil {
				return
			}
		}
		err = r.git.UpdateRef(r.git.Ref(), local, target)
		if err == nil {
			r.clearSyncMarker()
			return
		}
		if !errors.Is(err, gitstore.ErrConflict) {
			return
		}
	}
}

// Published takes h, a head the server holds and whose commits are here,
// as the server's head, as a push of this clone's would: the tracking ref
// and the local ref follow it (decided.go in the root package, whose
// clone made the server's commits again instead of fetching them).
func (r *Remote) Published(h gitstore.Hash) {
	r.git.SetTracking(r.name, h)
	r.noteFetched(h)
	r.advanceLocal(h, true)
}

// backupRef is where a local head that is not on the server is kept.
func (r *Remote) backupRef(h gitstore.Hash) string {
	return "refs/loopx/backup/" + strings.TrimPrefix(r.git.TrackingRef(r.name), "refs/loopx/remotes/") + "/" + h.String()
}

func (r *Remote) backup(h gitstore.Hash) error {
	ref := r.backupRef(h)
	if cur, err := r.git.ReadRef(ref); err == nil && cur == h {
		return nil
	}
	return r.git.UpdateRef(ref, gitstore.ZeroHash, h)
}

// remoteStateFile names a side file of this remote's bookkeeping.
func (r *Remote) remoteStateFile(suffix string) string {
	key := strings.TrimPrefix(r.git.TrackingRef(r.name), "refs/loopx/remotes/")
	return "loopx-remote/" + key + suffix
}

type fetchRecord struct {
	Head      string    `json:"head"`
	FetchedAt time.Time `json:"fetched_at"`
}

// noteFetched records that the server held head at the current time (the
// loopx clock, so LOOPX_NOW keeps output reproducible).
func (r *Remote) noteFetched(head gitstore.Hash) {
	now := r.now().UTC()
	r.sh.setView(viewState{fetchedAt: now})
	data, _ := json.Marshal(fetchRecord{Head: records.Rev(head), FetchedAt: now})
	_ = r.git.WriteSideFile(r.remoteStateFile(".json"), data, false) // advisory: the age of an offline view
}

// LastFetched is when the server's head was last seen (zero: never).
func (r *Remote) LastFetched() time.Time { return r.lastFetched() }

// lastFetched is when the server's head was last seen (zero: never).
func (r *Remote) lastFetched() time.Time {
	data, err := r.git.ReadSideFile(r.remoteStateFile(".json"))
	if err != nil || data == nil {
		return time.Time{}
	}
	var rec fetchRecord
	if json.Unmarshal(data, &rec) != nil {
		return time.Time{}
	}
	return rec.FetchedAt
}

// Sync progress: the last offline commit sync has dealt with (applied,
// replayed or reported refused). Offline commits up to it are not pending.
func (r *Remote) readSyncMarker() gitstore.Hash {
	data, err := r.git.ReadSideFile(r.remoteStateFile(".synced"))
	if err != nil {
		return gitstore.ZeroHash
	}
	return gitstore.ParseHash(strings.TrimSpace(string(data)))
}

func (r *Remote) writeSyncMarker(h gitstore.Hash) error {
	return r.git.WriteSideFile(r.remoteStateFile(".synced"), []byte(h.String()+"\n"), true)
}

func (r *Remote) clearSyncMarker() {
	_ = r.git.RemoveSideFile(r.remoteStateFile(".synced"))
}

// offlineCommit is a commit made with --offline.
type offlineCommit struct {
	hash gitstore.Hash
	msg  string
}

// offlinePending returns the offline commits on the local ref that sync has
// not dealt with, oldest first, and the local head.
func (r *Remote) offlinePending() ([]offlineCommit, gitstore.Hash, error) {
	head, err := r.git.Head()
	if err != nil {
		return nil, head, err
	}
	done := r.readSyncMarker()
	var out []offlineCommit
	err = r.git.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if c.Hash == done || trailerValue(c.Message, TrailerOffline) == "" {
			return false, nil
		}
		out = append(out, offlineCommit{hash: c.Hash, msg: c.Message})
		return true, nil
	})
	if err == nil && len(out) > 0 {
		out, err = r.notOnServer(out)
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
func (r *Remote) notOnServer(cands []offlineCommit) ([]offlineCommit, error) {
	server, err := r.git.ReadRef(r.git.TrackingRef(r.name))
	if err != nil || server.IsZero() {
		return cands, nil // never fetched: nothing is known to be there
	}
	oldest, err := r.git.Depth(cands[len(cands)-1].hash)
	if err != nil {
		return nil, err
	}
	top, err := r.git.Depth(server)
	if err != nil {
		return nil, err
	}
	if top < oldest {
		return cands, nil
	}
	there := map[gitstore.Hash]bool{}
	steps := top - oldest + 1
	err = r.git.Log(server, func(c gitstore.CommitMeta) (bool, error) {
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

// Info describes, in results of a store with a remote, how fresh the view
// was: the JSON fields remote, offline, view_fetched_at, offline_pending
// and (reads) checked_at.
type Info struct {
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

// Fill sets the JSON fields of the view in a result's envelope m.
func (ri *Info) Fill(m map[string]any) {
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

// Info describes the view a result was decided on (nil for a local
// store); checkedAt is the clock reading a read judged expiry with.
func (r *Remote) Info(checkedAt time.Time) *Info {
	if r.name == "" {
		return nil
	}
	ri := &Info{Name: r.name, Offline: r.offline, CheckedAt: checkedAt}
	if r.offline {
		ri.FetchedAt = r.lastFetched()
	} else {
		ri.FetchedAt = r.sh.getView().fetchedAt
	}
	if pending, _, err := r.offlinePending(); err == nil {
		ri.Pending = mutations(pending)
	}
	return ri
}

// PublishOrAdopt connects the local store to the remote for init: a
// remote that holds the state ref is adopted (the local ref takes its
// value; a local history that is not part of it is kept under
// refs/loopx/backup/); a remote that lacks it gets the local history, if
// any, pushed (published). Neither side having a state ref is
// ActionInitCommit: init's own commit decides (InitAction).
func (r *Remote) PublishOrAdopt(ctx context.Context, adopt bool) (action string, err error) {
	unlock, err := r.git.Lock(ctx, true)
	if err != nil {
		return "", err
	}
	defer unlock()
	// A publish that loses its compare-and-swap (someone published
	// meanwhile) fetches again and adopts theirs, after a backoff in
	// slots of its own round time, as a transaction's retries.
	policy := gitstore.DefaultRetry
	policy.MaxAttempts, policy.Timeout = remoteAttempts, remoteTimeout
	ctx, cancel := policy.Bound(ctx)
	defer cancel()
	clk := r.git.Clock()
	for attempt := 1; ; attempt++ {
		began := clk.Now()
		remoteHead, err := r.git.Fetch(ctx, r.name)
		if err != nil {
			return "", err
		}
		r.noteFetched(remoteHead)
		local, err := r.git.Head()
		if err != nil {
			return "", err
		}
		switch {
		case remoteHead.IsZero() && local.IsZero():
			return ActionInitCommit, nil // init's own commit publishes it (see InitAction)
		case remoteHead.IsZero():
			err := r.git.Push(ctx, r.name, gitstore.ZeroHash, local)
			if errors.Is(err, gitstore.ErrConflict) {
				// Someone published meanwhile: adopt theirs.
				if policy.Exhausted(attempt) {
					return "", fmt.Errorf("remote %s: %w", r.name, gitstore.ErrConflict)
				}
				if werr := policy.WithBase(clk.Since(began)).Wait(ctx, clk, attempt); werr != nil {
					return "", fmt.Errorf("remote %s: %w (after %w)", r.name, werr, err)
				}
				continue
			}
			if err != nil {
				return "", err
			}
			r.noteFetched(local)
			return "published", nil
		case local == remoteHead:
			r.learnDecider(ctx)
			return "up_to_date", nil
		default:
			if known := r.localStoreID(); known != "" && !adopt {
				served, err := r.storeIDAt(remoteHead)
				if err != nil {
					return "", err
				}
				if served != "" && served != known {
					return "", errStoreMismatch(r.name, known, served)
				}
			}
			r.advanceLocal(remoteHead, true)
			r.sh.mu.Lock()
			r.sh.knownRead = false // the adopted store is the one this clone uses now
			r.sh.mu.Unlock()
			r.learnDecider(ctx)
			return "adopted", nil
		}
	}
}

// learnDecider lists the server's refs once, which tells the clone
// whether the server decides requests (gitstore/request.go): a clone that
// adopted a store sends its first request to a deciding server, instead
// of racing its compare-and-swap against the server's decisions. Best
// effort: the next listing or push tells it too.
func (r *Remote) learnDecider(ctx context.Context) {
	_, _ = r.git.LsRemote(ctx, r.name)
}

// storeIDAt reads the store id of the store at commit h.
func (r *Remote) storeIDAt(h gitstore.Hash) (string, error) {
	sn, err := r.git.Snapshot(h)
	if err != nil {
		return "", err
	}
	return records.StoreID(sn)
}

// ActionInitCommit is PublishOrAdopt's answer when neither side had a
// state ref: init's commit decides.
const ActionInitCommit = "init-commit"

// InitAction is the remote_action init reports: when neither side had a
// state ref, init's own commit published it (applied), unless another
// machine published first (init then found it: adopted).
func InitAction(action string, applied bool) string {
	if action != ActionInitCommit {
		return action
	}
	if applied {
		return "published"
	}
	return "adopted"
}
