package audit

// The server's decider (gitstore/request.go, decided.go in the root
// package): with `server-hook pre-receive --decide`, a push of request refs
// (gitstore.RequestsPrefix) is not a ref update to check but requests to
// decide. Each is decided on the server's head as a local mutation of the
// store (its writer fence, its clock, the same rules, the same two
// commits), its reply printed for the pushing client, and the push refused
// so the request's ref is never created. A push that mixes request refs
// with other refs is refused whole, deciding nothing. On an accepted push
// to a state ref, the hook announces that it decides
// (gitstore.DeciderAnnouncement), which is how clients learn it.

import (
	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// maxRequestCommit bounds the request commit the decider reads: the wire
// request's limit and room for its envelope.
const maxRequestCommit = lease.MaxRequestSize + 4096

// requestUpdates returns the updates of request refs.
func requestUpdates(ups []ReceiveUpdate) []ReceiveUpdate {
	var out []ReceiveUpdate
	for _, u := range ups {
		if _, _, ok := gitstore.ParseRequestRef(u.Ref); ok {
			out = append(out, u)
		}
	}
	return out
}

// decideRequests decides the requests of a push (see the file comment)
// into d.Decided, one reply line each, and returns the refusal that keeps
// their refs from being created.
func (a *Auditor) decideRequests(ups []ReceiveUpdate, d *ServerHookData) error {
	reqs := requestUpdates(ups)
	if len(reqs) != len(ups) {
		return lease.Errorf(lease.CodeRemoteRejected, "a push of loopx requests (%s) must hold nothing else: nothing was decided", gitstore.RequestsPrefix)
	}
	for _, u := range reqs {
		storeRef, _, _ := gitstore.ParseRequestRef(u.Ref)
		var reply string
		switch facts, err := a.git.ReadCommitFacts(u.New); {
		case storeRef != a.git.Ref():
			reply = loopx.RefusedReply(lease.Errorf(lease.CodeRemoteRejected, "this server decides requests to %s, not %s", a.git.Ref(), storeRef))
		case !u.Old.IsZero() || u.New.IsZero() || err != nil:
			reply = loopx.RefusedReply(lease.Errorf(lease.CodeInvalidRequest, "%s: a request is a new ref holding one commit", u.Ref))
		case len(facts.Message) > maxRequestCommit:
			reply = loopx.RefusedReply(lease.CheckRequestSize(len(facts.Message)))
		default:
			reply = a.s.DecideRequest([]byte(facts.Message))
		}
		d.Decided = append(d.Decided, reply)
	}
	return lease.Errorf(lease.CodeRemoteRejected, "loopx requests are decided here, their refs are not kept (%d decided)", len(reqs)).With("decided", d.Decided)
}

// decidable reports whether the store at head is one whose requests the
// server can decide: not one that requires signatures (the server cannot
// sign for an agent), so the hook does not announce itself there.
func (a *Auditor) decidable(head gitstore.Hash) bool {
	sn, err := a.repo.Snapshot(head)
	if err != nil {
		return false
	}
	m, err := a.derived.View(sn).Meta()
	return err == nil && m != nil && !m.RequireSignatures
}
