package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Requests decided by the server.
//
// Through a busy server most of a compare-and-swap writer's round trips
// are lost races: each writer decides on the head it fetched, and all but
// one of the writers that decided on the same head push in vain. A server
// whose pre-receive hook runs loopx can decide instead: the client pushes
// its request (a commit of its own, on no parent, whose message is the
// request) to a ref of its own under RequestsPrefix; the hook decides it
// on the server's head under the server's writer fence, commits the
// decision on the store's ref itself, and refuses the request's ref (so
// it is never created), telling the client on its error channel what it
// did: one "loopx-decided: <reply>" line, which git relays as
// "remote: loopx-decided: ...". Requests are decided one at a time, in
// the order they reach the fence, and none is lost to a race.
//
// A client learns that a server decides from the server itself: the
// server holds the decider ref (DeciderRef, written by `server-hook
// install --decide`), which every listing of the server's ref lists too
// (`init --remote`, the polls of `run` and of waits), and its hook says
// DeciderAnnouncement on every push to the store's ref that it accepts.
// The clone remembers what it last heard (a side file per remote and ref,
// DeciderKnown). A request push that a server accepts (the hook is gone:
// the ref was created) is undone at once, the memory dropped, and the
// caller falls back to compare-and-swap.

// RequestsPrefix is where requests are pushed: RequestsPrefix + the
// store's ref without "refs/" + "/" + the request's id.
const RequestsPrefix = "refs/loopx/requests/"

// DecidedPrefix starts the server's reply line to a request push.
const DecidedPrefix = "loopx-decided: "

// DeciderAnnouncement is what a deciding server's hook says on an
// accepted push to the store's ref.
const DeciderAnnouncement = "loopx-decider: requests to this ref are decided here"

// DeciderRefPrefix is where a deciding server says so: DeciderRefPrefix +
// the store's ref without "refs/".
const DeciderRefPrefix = "refs/loopx/deciders/"

// DeciderRef is the ref a server holds when its hook decides requests to
// the store's ref.
func (s *Store) DeciderRef() string {
	return DeciderRefPrefix + strings.TrimPrefix(s.ref, "refs/")
}

// SetDecider writes (on) or deletes (off) the store's decider ref in this
// repository: a server's, whose hook decides requests. Its commit holds
// nothing but a message saying so.
func (s *Store) SetDecider(on bool) error {
	ref := s.DeciderRef()
	cur, err := readRef(s.commonDir, ref)
	if err != nil {
		cur = ZeroHash
	}
	want := ZeroHash
	if on {
		msg := "loopx: requests pushed to " + RequestsPrefix + strings.TrimPrefix(s.ref, "refs/") + "/<id> are decided by this server's pre-receive hook\n"
		if want, err = s.WriteCommit(ZeroHash, nil, CommitInfo{Message: msg, AuthorName: "loopx", AuthorEmail: "loopx@localhost",
			CommitterName: "loopx", CommitterEmail: "loopx@localhost", When: time.Unix(0, 0).UTC()}); err != nil {
			return err
		}
	}
	if cur == want {
		return nil
	}
	return s.UpdateRef(ref, cur, want)
}

// RequestRef is the ref a request with the given id is pushed to.
func (s *Store) RequestRef(id string) string {
	return RequestsPrefix + strings.TrimPrefix(s.ref, "refs/") + "/" + id
}

// ParseRequestRef splits a request ref into the store's ref it is for and
// the request's id.
func ParseRequestRef(ref string) (storeRef, id string, ok bool) {
	rest, ok := strings.CutPrefix(ref, RequestsPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return "refs/" + rest[:i], rest[i+1:], true
}

// RequestReply is what a request push learned.
type RequestReply struct {
	// Answered: the server decided (Reply is its reply line, without
	// DecidedPrefix). Otherwise no server decided: the caller falls back
	// to a compare-and-swap push.
	Answered bool
	Reply    string
}

// ErrNoDecider is returned by PushRequest when the server did not decide
// the request (no deciding hook answered): the caller falls back.
var ErrNoDecider = errors.New("the server does not decide requests")

// PushRequest pushes body as a request for the server to decide (see the
// top of this file) and returns the server's reply line. A server that
// does not decide gives ErrNoDecider (its memory in this clone is
// dropped); a server that cannot be reached, or whose answer was lost,
// gives that error: the outcome is then unknown, and a retry finds its
// receipt as after any lost push.
func (s *Store) PushRequest(ctx context.Context, remote string, body []byte) (string, error) {
	target, err := s.wireTarget(remote)
	if err != nil {
		return "", err
	}
	now := s.clock.Now()
	sum := sha256.Sum256(append(fmt.Appendf(nil, "%d\x00", now.UnixNano()), body...))
	id := hex.EncodeToString(sum[:12])
	c, err := s.WriteCommit(ZeroHash, nil, CommitInfo{Message: string(body), AuthorName: "loopx", AuthorEmail: "loopx@localhost",
		CommitterName: "loopx", CommitterEmail: "loopx@localhost", When: now})
	if err != nil {
		return "", err
	}
	ref := s.RequestRef(id)
	out, err := s.wireGit(ctx, "push", "--porcelain", "--no-verify", "--no-follow-tags", "--recurse-submodules=no",
		target, c.String()+":"+ref)
	if err != nil {
		return "", noGit(remote, err)
	}
	for _, l := range strings.Split(out.stderr, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "remote:"); ok {
			if reply, ok := strings.CutPrefix(strings.TrimSpace(rest), DecidedPrefix); ok {
				return strings.TrimSpace(reply), nil
			}
		}
	}
	if flag, _, ok := pushStatus(out.stdout, ref); ok {
		s.forgetDecider(remote)
		if flag != '!' {
			// Created: no hook decided. Take the ref back (best effort:
			// a request ref decides nothing by itself).
			_, _ = s.wireGit(ctx, "push", "--porcelain", "--no-verify", "--force-with-lease="+ref+":"+c.String(), target, ":"+ref)
		}
		return "", fmt.Errorf("gitstore: remote %s: %w", redactURL(remote), ErrNoDecider)
	}
	// No status for the ref: git stopped before or while talking to the
	// server; the request may or may not have been decided.
	kind := wireFailureOf(out.stderr, false)
	if kind.rejected() || kind == wireUnreachable {
		return "", s.wireError(ctx, remote, target, "push", out, false)
	}
	msg := gitSaid(out.stderr)
	if msg == "" {
		msg = fmt.Sprintf("git push exited with status %d", out.code)
	}
	return "", fmt.Errorf("gitstore: remote %s: request sent, outcome unknown (%s): %w", redactURL(remote), msg, ErrRemoteUnavailable)
}

// deciderFile names the side file remembering that remote decides
// requests to the store's ref.
func (s *Store) deciderFile(remote string) string {
	sum := sha256.Sum256([]byte(remote + "\x00" + s.ref))
	return "loopx-decider/" + hex.EncodeToString(sum[:8])
}

// deciderMemory is how long a clone trusts a server's last announcement
// without hearing it again: a server whose hook stopped deciding costs
// one request push (undone) before the clone notices anyway.
const deciderMemory = 24 * time.Hour

// DeciderKnown reports whether remote announced, on a push of this clone
// not older than a day, that it decides requests to the store's ref.
func (s *Store) DeciderKnown(remote string) bool {
	data, _ := s.ReadSideFile(s.deciderFile(remote))
	var ms int64
	if n, err := fmt.Sscanf(string(data), "%d\n", &ms); err != nil || n != 1 {
		return false
	}
	age := s.clock.Since(time.UnixMilli(ms))
	return age >= -time.Minute && age < deciderMemory
}

// noteDecider remembers that remote said it decides (best effort: it is
// advice).
func (s *Store) noteDecider(remote string) {
	if data, _ := s.ReadSideFile(s.deciderFile(remote)); data != nil {
		var ms int64
		if n, err := fmt.Sscanf(string(data), "%d\n", &ms); err == nil && n == 1 {
			if age := s.clock.Since(time.UnixMilli(ms)); age >= 0 && age < time.Hour {
				return // heard within the hour: not written again on every poll
			}
		}
	}
	_ = s.WriteSideFile(s.deciderFile(remote), fmt.Appendf(nil, "%d\n", s.clock.Now().UnixMilli()), false)
}

func (s *Store) forgetDecider(remote string) {
	_ = s.RemoveSideFile(s.deciderFile(remote))
}

// Reproduce builds the commits of p on parent (its own and the one Next
// chains on it) and, when they are exactly first and head (the commits
// a server made deciding the same request: request.go), writes their
// objects here and returns true, so they need not be fetched. Nothing is
// written otherwise. No ref moves.
func (s *Store) Reproduce(parent Hash, p *Proposal, first, head Hash) (bool, error) {
	pr, err := s.prepareProposal(parent, p)
	if err != nil {
		return false, err
	}
	if pr.first != first || pr.head != head {
		return false, nil
	}
	if err := s.writePrepared(pr); err != nil {
		return false, err
	}
	return true, nil
}

// SetTracking records h as remote's last known value of the store's ref
// (advisory: see TrackingRef).
func (s *Store) SetTracking(remote string, h Hash) { s.setTracking(remote, h) }
