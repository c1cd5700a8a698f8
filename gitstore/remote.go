package gitstore

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Remotes.
//
// A store may share its ref with a Git server (any transport go-git speaks:
// a path or file://, git://, http(s)://, ssh). The server is the authority;
// the local ref mirrors it. The primitives here are deliberately small:
//
//   - Fetch reads the server's value of the ref (one ref advertisement),
//     downloads only the objects the store lacks (wants = that value, haves =
//     the tracking ref and the local ref; no thin packs), writes them as
//     fsynced loose objects (large packs are kept as packs) and records the
//     value in a private tracking ref, TrackingRef(remote). It compares
//     hashes itself; no refspec, no go-git reference bookkeeping.
//   - WriteCommit writes a commit on a given parent without moving any ref.
//   - Push sends exactly the objects of the commits between old and new
//     (trees diffed against their parents, so the cost does not grow with
//     history) and one update command "old new ref". The server checks the
//     old value under its own ref lock: a true compare-and-swap. Never a
//     force push.
//   - UpdateRef moves any ref with git's lock protocol (the local ref, the
//     tracking ref, backups).
//
// Errors: ErrRemoteUnavailable (cannot reach the server, the transfer was
// cut off, the server failed to store the push, or the outcome of a push is
// unknown), ErrRemoteRejected (the server refused: permissions, hooks,
// missing repository), ErrConflict (the server's ref is not at old, or the
// server could not lock it because another push held its lock), ErrNoRemote
// (no such remote configured), ErrIO (the local repository could not be
// written). Only ErrRemoteRejected and ErrNoRemote are decisions: the
// others pass, and the same request succeeds on a retry.

var (
	// ErrRemoteUnavailable is returned (wrapped) when the remote cannot be
	// reached, or when a push was sent and its outcome is unknown.
	ErrRemoteUnavailable = errors.New("remote unavailable")
	// ErrRemoteRejected is returned (wrapped, with the server's message)
	// when the remote refused a request for a reason other than a lost
	// compare-and-swap: permissions, a hook, a missing repository.
	ErrRemoteRejected = errors.New("remote rejected the request")
	// ErrNoRemote is returned (wrapped) when the named remote is not
	// configured in the repository.
	ErrNoRemote = errors.New("remote not configured")
)

// loosePackLimit is the object count above which a fetched pack is kept
// as a pack instead of being exploded into loose objects (git's
// fetch.unpackLimit plays the same role).
var loosePackLimit = 1000

// TrackingRef returns the private ref holding the last known value of the
// store's ref on remote: refs/loopx/remotes/<remote>/<ref without refs/>.
func (s *Store) TrackingRef(remote string) string {
	return "refs/loopx/remotes/" + remoteKey(remote) + "/" + strings.TrimPrefix(s.ref, "refs/")
}

// remoteKey is remote as one ref component: a remote name as is, a URL or
// path given instead of a name as "url-<hash>".
func remoteKey(remote string) string {
	if isRemoteName(remote) {
		return remote
	}
	sum := sha1.Sum([]byte(remote))
	return fmt.Sprintf("url-%x", sum[:6])
}

func isRemoteName(remote string) bool {
	if remote == "" || strings.HasPrefix(remote, ".") || strings.HasSuffix(remote, ".lock") {
		return false
	}
	for _, c := range remote {
		ok := c == '-' || c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// looksLikeURL reports whether remote is a URL or a path rather than the
// name of a configured remote.
func looksLikeURL(remote string) bool {
	return strings.Contains(remote, "://") || strings.HasPrefix(remote, "/") || strings.HasPrefix(remote, "./") ||
		strings.HasPrefix(remote, "../") || (strings.Contains(remote, ":") && strings.Contains(remote, "@"))
}

// RemoteURL returns the URL of remote: remote.<name>.url from the
// repository's configuration, or remote itself when it is a URL or a path.
// A relative path is resolved against the top of the working tree (the git
// dir for a bare repository), as git does.
func (s *Store) RemoteURL(remote string) (string, error) {
	url := ""
	if remote == "" {
		return "", fmt.Errorf("gitstore: no remote named: %w", ErrNoRemote)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", errClosed
	}
	cfg, err := s.repo.Config()
	s.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("gitstore: read config: %w", err)
	}
	if rc, ok := cfg.Remotes[remote]; ok && len(rc.URLs) > 0 {
		url = rc.URLs[0]
	} else if looksLikeURL(remote) {
		url = remote
	} else {
		return "", fmt.Errorf("gitstore: remote %q is not configured (git remote add %s URL): %w", remote, remote, ErrNoRemote)
	}
	if isLocalPath(url) && !filepath.IsAbs(url) {
		base := s.workDir
		if base == "" {
			base = s.gitDir
		}
		url = filepath.Join(base, url)
	}
	return url, nil
}

func isLocalPath(url string) bool {
	if strings.Contains(url, "://") {
		return false
	}
	// scp-like "host:path" (but not a Windows drive letter).
	if i := strings.IndexByte(url, ':'); i > 1 && !strings.ContainsAny(url[:i], "/") {
		return false
	}
	return true
}

// session opens a transport session to remote.
func (s *Store) endpoint(remote string) (transport.Transport, *transport.Endpoint, error) {
	url, err := s.RemoteURL(remote)
	if err != nil {
		return nil, nil, err
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, nil, fmt.Errorf("gitstore: remote %s: bad URL %q: %v: %w", remote, url, err, ErrRemoteRejected)
	}
	t, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, fmt.Errorf("gitstore: remote %s: %v: %w", remote, err, ErrRemoteRejected)
	}
	return t, ep, nil
}

// classify wraps a transport error as ErrRemoteRejected (the server answered
// and refused) or ErrRemoteUnavailable (everything else: it could not be
// reached or the conversation broke).
func classify(remote, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrRemoteUnavailable) || errors.Is(err, ErrRemoteRejected) || errors.Is(err, ErrNoRemote) {
		return err
	}
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound),
		errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod),
		errors.As(err, new(*pktline.ErrorLine)):
		return fmt.Errorf("gitstore: remote %s: %s: %v: %w", remote, what, err, ErrRemoteRejected)
	}
	// Everything else (refused or reset connections, timeouts, broken
	// conversations, servers answering 5xx) may pass: retry later.
	return fmt.Errorf("gitstore: remote %s: %s: %v: %w", remote, what, err, ErrRemoteUnavailable)
}

// advertised returns the value of the store's ref in a ref advertisement.
func (s *Store) advertised(ar *packp.AdvRefs) Hash {
	if ar == nil {
		return ZeroHash
	}
	return ar.References[s.ref]
}

// LsRemote returns the remote's value of the store's ref (ZeroHash if it
// lacks it) without downloading anything.
func (s *Store) LsRemote(ctx context.Context, remote string) (Hash, error) {
	t, ep, err := s.endpoint(remote)
	if err != nil {
		return ZeroHash, err
	}
	sess, err := t.NewUploadPackSession(ep, nil)
	if err != nil {
		return ZeroHash, classify(remote, "connect", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return ZeroHash, nil
	}
	if err != nil {
		return ZeroHash, classify(remote, "list refs", err)
	}
	return s.advertised(ar), nil
}

// Fetch reads the remote's value of the store's ref, downloads the objects
// the store lacks, records the value in TrackingRef(remote) and returns it
// (ZeroHash when the remote lacks the ref). It does not move the store's
// ref. The objects are durable (fsynced) when it returns.
func (s *Store) Fetch(ctx context.Context, remote string) (Hash, error) {
	tracking := s.TrackingRef(remote)
	oldTracking, _ := readRef(s.commonDir, tracking)
	t, ep, err := s.endpoint(remote)
	if err != nil {
		return ZeroHash, err
	}
	sess, err := t.NewUploadPackSession(ep, nil)
	if err != nil {
		return ZeroHash, classify(remote, "connect", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	var head Hash
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
	case err != nil:
		return ZeroHash, classify(remote, "list refs", err)
	default:
		head = s.advertised(ar)
	}
	if !head.IsZero() && !s.hasCommit(head) {
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		// Self-contained packs only: every delta base is in the pack.
		req.Capabilities.Delete(capability.ThinPack)
		if ar.Capabilities.Supports(capability.NoProgress) {
			req.Capabilities.Set(capability.NoProgress)
		}
		req.Wants = []Hash{head}
		local, _ := s.Head()
		for _, h := range []Hash{oldTracking, local} {
			if !h.IsZero() && h != head && s.hasCommit(h) {
				req.Haves = append(req.Haves, h)
			}
		}
		resp, err := sess.UploadPack(ctx, req)
		if err != nil {
			return ZeroHash, classify(remote, "fetch", err)
		}
		var r io.Reader = resp
		switch {
		case req.Capabilities.Supports(capability.Sideband64k):
			r = sideband.NewDemuxer(sideband.Sideband64k, resp)
		case req.Capabilities.Supports(capability.Sideband):
			r = sideband.NewDemuxer(sideband.Sideband, resp)
		}
		data, err := io.ReadAll(r)
		resp.Close()
		if err != nil {
			return ZeroHash, classify(remote, "fetch", err)
		}
		if err := s.storePack(data); err != nil {
			if errors.Is(err, ErrIO) {
				return ZeroHash, err
			}
			// Not a local failure: what arrived is not a whole pack (the
			// server or the connection died mid-transfer).
			return ZeroHash, fmt.Errorf("gitstore: remote %s: fetch cut off (%v): %w", remote, err, ErrRemoteUnavailable)
		}
		if !s.hasCommit(head) {
			return ZeroHash, fmt.Errorf("gitstore: remote %s: fetched pack lacks %s: %w", remote, head, ErrRemoteUnavailable)
		}
	}
	// The tracking ref is advisory (the value that matters is returned);
	// a concurrent fetch may have moved it meanwhile: then leave it.
	if head != oldTracking {
		if err := s.updateRef(tracking, oldTracking, head, false); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrBusy) {
			return ZeroHash, err
		}
	}
	return head, nil
}

// hasCommit reports whether commit h can be read.
func (s *Store) hasCommit(h Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.odb.has(h) {
		return true
	}
	_, err := s.readCommit(h)
	return err == nil
}

// storePack makes the objects of a (self-contained) pack durable in the
// store: as loose objects, or for a large pack as a pack and its index.
func (s *Store) storePack(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if len(data) < 12+20 || string(data[:4]) != "PACK" {
		return fmt.Errorf("gitstore: fetched data is not a pack: %w", ErrRemoteUnavailable)
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	if count > loosePackLimit {
		return s.storeAsPack(data)
	}
	mem := memory.NewStorage()
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(bytes.NewReader(data)), mem)
	if err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	if _, err := p.Parse(); err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	objs := make([]newObject, 0, len(mem.ObjectStorage.Objects))
	for h, o := range mem.ObjectStorage.Objects {
		content, err := readEncoded(o)
		if err != nil {
			return fmt.Errorf("gitstore: fetched object %s: %w", h, err)
		}
		objs = append(objs, newObject{hash: h, typ: o.Type(), data: content})
	}
	// Blobs, then trees, then commits: a crash half-way leaves no commit
	// whose objects are missing (the commit is fetched again).
	rank := func(t plumbing.ObjectType) int {
		switch t {
		case plumbing.BlobObject:
			return 0
		case plumbing.TreeObject:
			return 1
		case plumbing.CommitObject:
			return 2
		}
		return 3
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i].typ) < rank(objs[j].typ) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := injected("fetch-objects", "write", filepath.Join(s.commonDir, "objects")); err != nil {
		return ioError(err)
	}
	return s.odb.write(objs)
}

// storeAsPack keeps a large fetched pack as a pack, with the index built
// here, written like a commit's pack (installPack: loopx temporary names,
// fsynced, renamed). An error that is not ErrIO means data is not a whole,
// self-contained pack.
func (s *Store) storeAsPack(data []byte) error {
	w := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(bytes.NewReader(data)), w)
	if err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	sum, err := p.Parse()
	if err != nil {
		return fmt.Errorf("gitstore: parse fetched pack: %w", err)
	}
	idx, err := w.Index()
	if err != nil {
		return fmt.Errorf("gitstore: index fetched pack: %w", err)
	}
	var ib bytes.Buffer
	if _, err := idxfile.NewEncoder(&ib).Encode(idx); err != nil {
		return fmt.Errorf("gitstore: index fetched pack: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := injected("fetch-objects", "write", filepath.Join(s.commonDir, "objects", "pack")); err != nil {
		return ioError(err)
	}
	if err := s.odb.installPack(sum, data, ib.Bytes()); err != nil {
		return fmt.Errorf("gitstore: write fetched pack: %w", err)
	}
	s.odb.refresh()
	return nil
}

// Push asks remote to move the store's ref from old (ZeroHash: absent) to
// new, sending the objects of the commits after old on new's first-parent
// chain. The server checks old under its ref lock: if the ref is elsewhere
// the error wraps ErrConflict. A refusal for another reason (hook,
// permissions) wraps ErrRemoteRejected with the server's message. If the
// connection breaks after the update was sent, Push asks the server where
// the ref is: at new it succeeds, elsewhere it reports ErrConflict (the
// caller re-reads and re-decides, which finds its own receipt if the update
// did land); if the server cannot be asked, the error wraps
// ErrRemoteUnavailable (outcome unknown). On success the tracking ref is
// set to new.
func (s *Store) Push(ctx context.Context, remote string, old, new Hash) error {
	if new.IsZero() {
		return fmt.Errorf("gitstore: push: refusing to delete %s", s.ref)
	}
	objs, err := s.objectsToPush(old, new)
	if err != nil {
		return err
	}
	pack, _, _, err := encodePack(objs)
	if err != nil {
		return err
	}
	t, ep, err := s.endpoint(remote)
	if err != nil {
		return err
	}
	sess, err := t.NewReceivePackSession(ep, nil)
	if err != nil {
		return classify(remote, "connect", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return classify(remote, "list refs", err)
	}
	if ar == nil {
		ar = packp.NewAdvRefs()
	}
	if cur := s.advertised(ar); cur != old {
		return fmt.Errorf("gitstore: remote %s: %s is %s, expected %s: %w", remote, s.ref, shortHash(cur), shortHash(old), ErrConflict)
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	var progress bytes.Buffer
	if ar.Capabilities.Supports(capability.Sideband64k) {
		req.Capabilities.Set(capability.Sideband64k)
		req.Progress = &progress
	} else if ar.Capabilities.Supports(capability.Sideband) {
		req.Capabilities.Set(capability.Sideband)
		req.Progress = &progress
	}
	req.Commands = []*packp.Command{{Name: plumbing.ReferenceName(s.ref), Old: old, New: new}}
	req.Packfile = io.NopCloser(bytes.NewReader(pack))
	hook("push-sending")
	rs, err := sess.ReceivePack(ctx, req)
	if rs != nil && rs.Error() == nil {
		// The server reported the update done (a close error after that
		// does not matter).
		s.setTracking(remote, new)
		return nil
	}
	if err == nil {
		err = errors.New("no status report")
	}
	msg := strings.TrimSpace(err.Error())
	if remoteMsg := serverMessages(progress.String()); remoteMsg != "" {
		msg += " (" + remoteMsg + ")"
	}
	hook("push-answered")
	refused := rs != nil // the server answered with a status
	kind := pushFailureOf(msg)
	if refused && kind == pushLockFailed {
		// The server says it did not apply the update: a lost
		// compare-and-swap. Asking where the ref is now would cost a
		// connection per lost race (a third of a loser's round trips
		// through a busy server); the next attempt fetches it anyway.
		if strings.Contains(msg, "File exists") {
			// The lock file itself is there: a concurrent push's, or one
			// a killed git process left (which only the server's operator
			// can remove). The retry policy tells them apart by time.
			return fmt.Errorf("gitstore: remote %s could not update %s: %s: %w (%w)", remote, s.ref, msg, ErrConflict, errServerLock)
		}
		return fmt.Errorf("gitstore: remote %s could not update %s: %s: %w", remote, s.ref, msg, ErrConflict)
	}
	// Where is the ref now? That tells a lost compare-and-swap from a
	// refusal, and resolves a broken connection.
	cur, lerr := s.LsRemote(ctx, remote)
	switch {
	case refused && kind == pushNotStored && (lerr != nil || cur != new):
		return fmt.Errorf("gitstore: remote %s could not store the update: %s: %w", remote, msg, ErrRemoteUnavailable)
	case lerr != nil && refused:
		return fmt.Errorf("gitstore: remote %s refused the update: %s: %w", remote, msg, ErrRemoteRejected)
	case lerr != nil:
		return fmt.Errorf("gitstore: remote %s: push sent, outcome unknown (%s; %v): %w", remote, msg, lerr, ErrRemoteUnavailable)
	case cur == new:
		// The server holds this very commit, but did not say this push
		// installed it: another client may have pushed the identical
		// commit (the same request decided on the same head in the same
		// second). Never report that as this caller's application: the
		// caller decides again on the server's head, which answers with
		// the replay.
		s.setTracking(remote, new)
		return fmt.Errorf("gitstore: remote %s: %s is already at %s, not installed by this push: %w", remote, s.ref, shortHash(new), ErrConflict)
	case cur != old:
		return fmt.Errorf("gitstore: remote %s: %s moved to %s: %w", remote, s.ref, shortHash(cur), ErrConflict)
	case refused:
		return fmt.Errorf("gitstore: remote %s refused the update: %s: %w", remote, msg, ErrRemoteRejected)
	default:
		// Not applied (the ref is still at old) and no answer: the
		// update may still be in flight. Re-deciding is safe either way:
		// the server's compare-and-swap lets at most one of them land.
		return fmt.Errorf("gitstore: remote %s: push interrupted (%s): %w", remote, msg, ErrConflict)
	}
}

// errServerLock marks a lost push whose server found its ref's lock file
// in place.
var errServerLock = errors.New("the server's ref lock file exists")

// ErrServerLocked is returned (wrapped) when the server's ref lock file
// stayed in place across serverLockWait of retries: most likely left by a
// git process that died on the server. Retry later; the server's operator
// can remove it.
var ErrServerLocked = errors.New("the server's ref lock file stays in place")

// serverLockWait is how long pushes may keep finding the server's ref lock
// file in place before it is taken for a stale one (a concurrent push
// holds it for milliseconds).
var serverLockWait = 10 * time.Second

// Why a server that answered did not apply a push, from its status and
// messages (git receive-pack's wording).
const (
	pushRefused    = iota // a decision: a hook, permissions, a policy
	pushLockFailed        // its ref lock was held, or the old value moved
	pushNotStored         // it could not store the objects (disk, unpacker)
)

func pushFailureOf(msg string) int {
	m := strings.ToLower(msg)
	for _, s := range []string{"cannot lock ref", "failed to lock", "failed to update ref", "stale info", "incorrect old value"} {
		if strings.Contains(m, s) {
			return pushLockFailed
		}
	}
	for _, s := range []string{"unpack error", "unpacker error", "abnormal exit", "no space left", "quota exceeded", "input/output error"} {
		if strings.Contains(m, s) {
			return pushNotStored
		}
	}
	return pushRefused
}

// serverMessages turns sideband progress into one line ("remote: ..." lines
// a hook printed).
func serverMessages(s string) string {
	var lines []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

func (s *Store) setTracking(remote string, h Hash) {
	tracking := s.TrackingRef(remote)
	for i := 0; i < 3; i++ {
		cur, err := readRef(s.commonDir, tracking)
		if err != nil || cur == h {
			return
		}
		if err := s.updateRef(tracking, cur, h, false); !errors.Is(err, ErrConflict) {
			return
		}
	}
}

// objectsToPush lists the objects a server holding old lacks to hold new:
// for each commit after old on new's first-parent chain, the commit and the
// trees and blobs that differ from its parent's. With old == ZeroHash the
// whole first-parent history is sent.
func (s *Store) objectsToPush(old, new Hash) ([]newObject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	var out []newObject
	seen := map[Hash]bool{}
	add := func(h Hash) (bool, error) {
		if seen[h] {
			return false, nil
		}
		seen[h] = true
		t, data, err := s.odb.read(h)
		if err != nil {
			return false, err
		}
		out = append(out, newObject{hash: h, typ: t, data: data})
		return true, nil
	}
	for h := new; h != old; {
		if h.IsZero() {
			return nil, fmt.Errorf("gitstore: push: %s does not descend from %s", shortHash(new), shortHash(old))
		}
		c, err := s.readCommit(h)
		if err != nil {
			return nil, err
		}
		if _, err := add(h); err != nil {
			return nil, err
		}
		var parentTree Hash
		var parent Hash
		if len(c.parents) > 0 {
			parent = c.parents[0]
			if !parent.IsZero() {
				pc, err := s.readCommit(parent)
				if err != nil {
					return nil, err
				}
				parentTree = pc.tree
			}
		}
		if err := s.treeDiffObjects(c.tree, parentTree, add); err != nil {
			return nil, err
		}
		h = parent
	}
	return out, nil
}

// treeDiffObjects adds tree h and every tree and blob under it that is not
// at the same path, with the same name, under base. Callers hold s.mu.
func (s *Store) treeDiffObjects(h, base Hash, add func(Hash) (bool, error)) error {
	if h == base {
		return nil
	}
	if h == emptyTree {
		_, err := add(h)
		return err
	}
	if fresh, err := add(h); err != nil || !fresh {
		return err
	}
	t, err := s.loadTree(h)
	if err != nil {
		return err
	}
	var bt *tree
	if !base.IsZero() {
		if bt, err = s.loadTree(base); err != nil {
			return err
		}
	}
	for _, e := range t.entries {
		var be *treeEntry
		if bt != nil {
			if i := bt.find(e.name); i >= 0 {
				be = &bt.entries[i]
			}
		}
		if be != nil && be.hash == e.hash && be.mode == e.mode {
			continue
		}
		switch {
		case e.isDir():
			var sub Hash
			if be != nil && be.isDir() {
				sub = be.hash
			}
			if err := s.treeDiffObjects(e.hash, sub, add); err != nil {
				return err
			}
		case e.mode == modeGitlink:
			// A submodule commit lives in another repository.
		default:
			if _, err := add(e.hash); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteCommit writes a commit whose parent is parent (none if ZeroHash) and
// whose tree is parent's tree with changes applied, like Commit, but moves
// no ref: the caller publishes it (Push) and then moves refs (UpdateRef).
// The objects are fsynced when it returns. Callers hold the exclusive
// fence; the commit counts towards the next automatic GC.
func (s *Store) WriteCommit(parent Hash, changes []Change, info CommitInfo) (Hash, error) {
	if err := validateChanges(changes); err != nil {
		return ZeroHash, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	pend := newPendingObjects()
	commitHash, err := s.buildCommit(pend, parent, changes, info)
	if err != nil {
		return ZeroHash, err
	}
	if err := s.odb.writePacked(pend.objs); err != nil {
		return ZeroHash, fmt.Errorf("gitstore: write objects: %w", err)
	}
	s.noteCommits(1)
	return commitHash, nil
}

// UpdateRef moves ref (a full name under refs/) from expected to new with
// git's lock protocol (see refs.go); new == ZeroHash deletes the loose ref.
// It fails with ErrConflict if the ref does not hold expected (ZeroHash:
// absent). It does not take the writer fence.
func (s *Store) UpdateRef(ref string, expected, new Hash) error {
	return s.updateRef(ref, expected, new, true)
}

// updateRef is UpdateRef; durable=false skips the fsyncs, for advisory
// refs (the tracking ref: after a crash it may show an older value, whose
// objects are still there).
func (s *Store) updateRef(ref string, expected, new Hash, durable bool) error {
	if err := checkRefName(ref); err != nil {
		return err
	}
	refPath := filepath.Join(s.commonDir, filepath.FromSlash(ref))
	lockPath := refPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(refPath), 0o777); err != nil {
		return fmt.Errorf("gitstore: %w", ioError(err))
	}
	twin, f, err := s.createTwin(new)
	if err != nil {
		return err
	}
	defer os.Remove(twin)
	if durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gitstore: %w", ioError(err))
	}
	if err := s.acquireRefLock(twin, lockPath, []byte(new.String()+"\n")); err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			os.Remove(lockPath)
		}
	}()
	cur, err := readRef(s.commonDir, ref)
	if err != nil {
		return err
	}
	if cur != expected {
		return fmt.Errorf("gitstore: %s is %s, expected %s: %w", ref, shortHash(cur), shortHash(expected), ErrConflict)
	}
	if new.IsZero() {
		if err := os.Remove(refPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("gitstore: %w", ioError(err))
		}
		return nil
	}
	if err := os.Rename(lockPath, refPath); err != nil {
		return fmt.Errorf("gitstore: %w", ioError(err))
	}
	locked = false
	if !durable {
		return nil
	}
	return ioError(syncDir(filepath.Dir(refPath)))
}

// ReadRef returns the value of any ref (ZeroHash if absent).
func (s *Store) ReadRef(ref string) (Hash, error) {
	if err := checkRefName(ref); err != nil {
		return ZeroHash, err
	}
	return readRef(s.commonDir, ref)
}

// IsAncestor reports whether anc is on desc's first-parent chain (desc
// itself included), looking at most limit commits back. ZeroHash is an
// ancestor of everything.
func (s *Store) IsAncestor(anc, desc Hash, limit int) (bool, error) {
	if anc.IsZero() || anc == desc {
		return true, nil
	}
	found := false
	n := 0
	err := s.Log(desc, func(c CommitMeta) (bool, error) {
		n++
		if c.Hash == anc {
			found = true
			return false, nil
		}
		return n < limit, nil
	})
	return found, err
}
