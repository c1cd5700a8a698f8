package gitstore

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Remotes.
//
// A store may share its ref with a Git server: any remote `git fetch` and
// `git push` reach from this repository (a path or file://, git://,
// http(s)://, ssh, with git's configuration and credentials: wire.go). The
// server is the authority; the local ref mirrors it. The primitives here
// are deliberately small:
//
//   - Fetch reads the server's value of the ref (one ref listing),
//     downloads only the objects the store lacks (the haves limited to the
//     tracking ref and the local ref), makes them durable (fsynced objects
//     and directories) and records the value in a private tracking ref,
//     TrackingRef(remote). It compares hashes itself; no refspec moves a
//     ref.
//   - WriteCommit writes a commit on a given parent without moving any ref.
//   - Push sends the objects of the commits between old and new and one
//     update command "old new ref". The server checks the old value under
//     its own ref lock: a true compare-and-swap. Never a force push.
//   - UpdateRef moves any ref with git's lock protocol (the local ref, the
//     tracking ref, backups).
//
// Errors: ErrRemoteUnavailable (cannot reach the server, the transfer was
// cut off, the server failed to store the push, or the outcome of a push is
// unknown), ErrRemoteRejected (the server or git's setup refused: a login
// the server does not accept, an unknown host key, permissions, hooks, a
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
// as a pack instead of being exploded into loose objects (git fetch's
// fetch.unpackLimit, which loopx sets to it). Each loose object is a file
// loopx fsyncs before moving it in; a kept pack is two. A clone that
// follows a busy server fetches other agents' commits all the time (64
// agents through one server: one idle holder made 141 fsyncs in 3 s), so
// more than about two mutations' objects are kept as a pack; the packs a
// fetch keeps are counted with loopx's own (notePack), and the automatic
// GC merges them past maxOwnPacks.
var loosePackLimit = 32

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
// name of a configured remote: a scheme, a path, or git's scp-like
// "[user@]host:path" (a host alias of the ssh config, or a prefix that
// url.<base>.insteadOf rewrites, such as "forge:team/repo.git"). git
// refuses ':' in remote names.
func looksLikeURL(remote string) bool {
	return strings.Contains(remote, ":") || strings.HasPrefix(remote, "/") || strings.HasPrefix(remote, "./") ||
		strings.HasPrefix(remote, "../")
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
	} else if u := s.configuredURL(remote); u != "" {
		url = u // configured outside the repository's own file (~/.gitconfig, an include)
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

// configuredURL asks git for remote.<name>.url, as git reads its whole
// configuration ("" when unset).
func (s *Store) configuredURL(name string) string {
	if !isRemoteName(name) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := s.wireGit(ctx, "config", "--get", "remote."+name+".url")
	if err != nil || out.code != 0 {
		return ""
	}
	return strings.TrimSpace(out.stdout)
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

// LsRemote returns the remote's value of the store's ref (ZeroHash if it
// lacks it) without downloading anything.
func (s *Store) LsRemote(ctx context.Context, remote string) (Hash, error) {
	target, err := s.wireTarget(remote)
	if err != nil {
		return ZeroHash, err
	}
	return s.gitLsRemote(ctx, remote, target)
}

// Fetch reads the remote's value of the store's ref, downloads the objects
// the store lacks, records the value in TrackingRef(remote) and returns it
// (ZeroHash when the remote lacks the ref). It does not move the store's
// ref. The objects are durable (fsynced) when it returns.
func (s *Store) Fetch(ctx context.Context, remote string) (Hash, error) {
	tracking := s.TrackingRef(remote)
	oldTracking, _ := readRef(s.commonDir, tracking)
	local, _ := s.Head()
	haves := []Hash{oldTracking, local}
	target, err := s.wireTarget(remote)
	if err != nil {
		return ZeroHash, err
	}
	head, err := s.gitFetch(ctx, remote, target, haves)
	if err != nil {
		return ZeroHash, err
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

// pushReply is what a push attempt learned, when it did not fail before
// sending anything.
type pushReply struct {
	applied  bool   // the server reported the update done
	upToDate bool   // the server already held new: not installed by this push
	stale    bool   // not sent: the server's ref is not at old
	answered bool   // the server answered with a refusal for the ref
	msg      string // why not, with the server's messages
	server   string // what the server said on an applied push
}

// Push asks remote to move the store's ref from old (ZeroHash: absent) to
// new, sending the objects of the commits after old on new's first-parent
// chain. The server checks old under its ref lock: if the ref is elsewhere
// the error wraps ErrConflict. A refusal for another reason (hook,
// permissions, a login the server does not accept) wraps ErrRemoteRejected
// with the server's message. If the connection breaks after the update was
// sent, Push asks the server where the ref is: at new it succeeds,
// elsewhere it reports ErrConflict (the caller re-reads and re-decides,
// which finds its own receipt if the update did land); if the server
// cannot be asked, the error wraps ErrRemoteUnavailable (outcome unknown).
// On success the tracking ref is set to new.
func (s *Store) Push(ctx context.Context, remote string, old, new Hash) error {
	if new.IsZero() {
		return fmt.Errorf("gitstore: push: refusing to delete %s", s.ref)
	}
	target, err := s.wireTarget(remote)
	if err != nil {
		return err
	}
	rep, err := s.gitPush(ctx, remote, target, old, new)
	if err != nil {
		return err
	}
	name := redactURL(remote) // for messages
	switch {
	case rep.applied:
		s.setTracking(remote, new)
		if strings.Contains(rep.server, DeciderAnnouncement) {
			s.noteDecider(remote)
		} else {
			s.forgetDecider(remote)
		}
		return nil
	case rep.upToDate:
		// The server holds this very commit, but did not get it from
		// this push: another client pushed the identical commit (the same
		// request decided on the same head in the same second). Never
		// report that as this caller's application: the caller decides
		// again on the server's head, which answers with the replay.
		s.setTracking(remote, new)
		return fmt.Errorf("gitstore: remote %s: %s is already at %s, not installed by this push: %w", name, s.ref, shortHash(new), ErrConflict)
	case rep.stale:
		return fmt.Errorf("gitstore: remote %s: %s moved (%s): %w", name, s.ref, rep.msg, ErrConflict)
	}
	msg := rep.msg
	hook("push-answered")
	refused := rep.answered // the server answered with a status
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
			return fmt.Errorf("gitstore: remote %s could not update %s: %s: %w (%w)", name, s.ref, msg, ErrConflict, errServerLock)
		}
		return fmt.Errorf("gitstore: remote %s could not update %s: %s: %w", name, s.ref, msg, ErrConflict)
	}
	// Where is the ref now? That tells a lost compare-and-swap from a
	// refusal, and resolves a broken connection.
	cur, lerr := s.LsRemote(ctx, remote)
	switch {
	case refused && kind == pushNotStored && (lerr != nil || cur != new):
		return fmt.Errorf("gitstore: remote %s could not store the update: %s: %w", name, msg, ErrRemoteUnavailable)
	case lerr != nil && refused:
		return fmt.Errorf("gitstore: remote %s refused the update: %s: %w", name, msg, ErrRemoteRejected)
	case lerr != nil:
		return fmt.Errorf("gitstore: remote %s: push sent, outcome unknown (%s; %v): %w", name, msg, lerr, ErrRemoteUnavailable)
	case cur == new:
		// As rep.upToDate: the server holds this commit and did not say
		// this push installed it.
		s.setTracking(remote, new)
		return fmt.Errorf("gitstore: remote %s: %s is already at %s, not installed by this push: %w", name, s.ref, shortHash(new), ErrConflict)
	case cur != old:
		return fmt.Errorf("gitstore: remote %s: %s moved to %s: %w", name, s.ref, shortHash(cur), ErrConflict)
	case refused:
		return fmt.Errorf("gitstore: remote %s refused the update: %s: %w", name, msg, ErrRemoteRejected)
	default:
		// Not applied (the ref is still at old) and no answer: the
		// update may still be in flight. Re-deciding is safe either way:
		// the server's compare-and-swap lets at most one of them land.
		return fmt.Errorf("gitstore: remote %s: push interrupted (%s): %w", name, msg, ErrConflict)
	}
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

// errServerLock marks a lost push whose server found its ref's lock file
// in place.
var errServerLock = errors.New("the server's ref lock file exists")

// ErrServerLocked is returned (wrapped) when the server's ref lock file
// stayed in place across Options.ServerLockWait of retries: most likely left by a
// git process that died on the server. Retry later; the server's operator
// can remove it.
var ErrServerLocked = errors.New("the server's ref lock file stays in place")

// DefaultServerLockWait is how long pushes may keep finding the server's
// ref lock file in place before it is taken for a stale one (a concurrent
// push holds it for milliseconds): Options.ServerLockWait.
const DefaultServerLockWait = 10 * time.Second

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
