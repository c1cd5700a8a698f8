package loopx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// Mutations decided by the server (gitstore/request.go for the transport,
// docs/REMOTE.md "Decided by the server" for the protocol).
//
//	client: push the request → the server's hook decides it on the
//	        server's head under the server's fence, commits it (state and
//	        board) and replies "committed <base> <state> <head>" → fetch →
//	        decide the commit's recorded request again on <base> at the
//	        commit's time, as verify --history does, and check that it
//	        gives the commit's tree → report it as this client's own
//	        decision (attempts 1, no lost race).
//	server: DecideRequest applies the request as a local mutation
//	        (Store.apply on the server's repository: its writer fence, its
//	        clock, the same rules, the same two commits).
//
// A refusal or an answer that commits nothing (a replay, no change) is
// made again the same way: decided on <base> at the server's time, it
// gives this build's typed error or payload. Anything else falls back to
// the compare-and-swap transaction, which decides on the server's head
// itself: a server that does not decide, one that answered nothing (the
// connection dropped after it decided: the fallback finds the receipt, as
// after any lost push), a refusal made before the decision (a busy fence)
// or an answer that does not check out. A store that requires signatures
// is never decided by the server (it cannot sign for the agent): the
// server does not announce itself there and refuses its requests.
// TxStats says which path a mutation took (decided_by, server_said).

// decideRequest is the body of a request push: the canonical request and
// the client's default goal (Options.DefaultGoal, or the one its agent
// registered), which the request's resolution may need.
type decideRequest struct {
	Request     json.RawMessage `json:"request"`
	DefaultGoal string          `json:"default_goal,omitempty"`
}

// decideReply is the server's reply line.
type decideReply struct {
	// Status is "committed", "unchanged" (nothing to commit: a replay, no
	// change) or "refused" (Code and Message say why).
	Status  string     `json:"status"`
	Base    string     `json:"base,omitempty"`  // the head decided on
	State   string     `json:"state,omitempty"` // the state commit made
	Head    string     `json:"head,omitempty"`  // the head after the board
	At      string     `json:"at,omitempty"`    // the decision's time (RFC 3339)
	Code    lease.Code `json:"code,omitempty"`
	Message string     `json:"message,omitempty"`
	// MS is how long the server took to decide and commit it, its
	// writer fence's wait included (milliseconds).
	MS float64 `json:"ms,omitempty"`
}

// DecideRequest decides a request pushed to the server (body: its
// message) as a local mutation of this store, and returns the reply line
// the pushing client reads. It is what the server's hook runs
// (audit.ServerHookPreReceive); it never fails, a refusal is the reply.
func (s *Store) DecideRequest(body []byte) string {
	start := clock.Or(s.opts.Clock).Now()
	reply := func(r decideReply) string {
		r.MS = msOf(clock.Or(s.opts.Clock).Since(start))
		b, _ := json.Marshal(r)
		return string(b)
	}
	refused := RefusedReply
	var req decideRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return refused(lease.Errorf(lease.CodeInvalidRequest, "not a loopx request: %v", err))
	}
	call, err := lease.DecodeWireRequest(req.Request)
	if err != nil {
		return refused(err)
	}
	// The hook's process decides the requests of one push, one at a time:
	// the client's default goal stands in for this store's while its
	// request is decided.
	saved := s.defaultGoal
	s.defaultGoal = req.DefaultGoal
	defer func() { s.defaultGoal = saved }()
	res, out, tx, at, err := s.applyTx(call, true)
	when := ""
	if !at.IsZero() {
		when = at.UTC().Format(time.RFC3339)
	}
	if err != nil {
		var r decideReply
		_ = json.Unmarshal([]byte(refused(err)), &r)
		if !tx.Base.IsZero() {
			r.Base, r.At = tx.Base.String(), when
		}
		return reply(r)
	}
	if !out.Write {
		return reply(decideReply{Status: "unchanged", Base: tx.Base.String(), Head: res.CurrentRevision, At: when})
	}
	return reply(decideReply{Status: "committed", Base: tx.Base.String(), State: tx.State.String(), Head: res.CurrentRevision, At: when})
}

// RefusedReply is the reply line of a request the server refused (err
// carries its code).
func RefusedReply(err error) string {
	err = storeerr.Map(err)
	code := lease.CodeStoreIO
	if le, ok := lease.AsError(err); ok {
		code = le.Code
	}
	b, _ := json.Marshal(decideReply{Status: "refused", Code: code, Message: firstLine(err.Error())})
	return string(b)
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// applyByServer asks the server to decide call, when it announced that it
// decides (see the top of this file). ok false: take the compare-and-swap
// path.
//
// said is, when the server was asked and its answer is not used, what it
// answered (TxStats.ServerSaid, ServerMessage).
func (s *Store) applyByServer(call lease.Call) (a attempt, tx gitstore.TxResult, ok bool, said serverSaid) {
	if s.git == nil || !s.remote.Online() || s.unrecorded || call.Op.Name == lease.OpStoreUpgrade || !s.git.DeciderKnown(s.remote.Name()) {
		return a, tx, false, serverSaid{}
	}
	raw, err := call.Encode()
	if err != nil {
		return a, tx, false, serverSaid{}
	}
	body, err := json.Marshal(decideRequest{Request: raw, DefaultGoal: s.defaultGoal})
	if err != nil {
		return a, tx, false, serverSaid{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitstore.DefaultRetry.Timeout)
	defer cancel()
	// The clone's fetched packs and its commits made again add up as a
	// writer's would: the automatic GC when it is due (a transaction runs
	// it after committing).
	defer s.git.MaybeGC()
	asked := clock.Or(s.opts.Clock).Now()
	line, err := s.git.PushRequest(ctx, s.remote.Name(), body)
	tx.Asked = clock.Or(s.opts.Clock).Since(asked)
	if errors.Is(err, gitstore.ErrNoDecider) {
		return a, tx, false, serverSaid{What: "no_decider"}
	}
	if err != nil {
		return a, tx, false, serverSaid{What: "no_answer"}
	}
	var r decideReply
	if json.Unmarshal([]byte(line), &r) != nil {
		return a, tx, false, serverSaid{What: "no_answer"}
	}
	tx.ServerDecided = time.Duration(r.MS * float64(time.Millisecond))
	said = serverSaid{What: r.Status}
	if r.Status == "refused" {
		said = serverSaid{What: string(r.Code), Message: r.Message}
	}
	at, terr := time.Parse(time.RFC3339, r.At)
	base := gitstore.ParseHash(r.Base)
	if terr != nil || base.IsZero() {
		return a, tx, false, said
	}
	// decided is the transaction the server's decision was, as this
	// clone reports it.
	decided := func(head, state gitstore.Hash, reproduced bool) gitstore.TxResult {
		return gitstore.TxResult{Head: head, State: state, Base: base, Attempts: 1, ByServer: true,
			Reproduced: reproduced, Asked: tx.Asked, ServerDecided: tx.ServerDecided}
	}
	switch r.Status {
	case "committed":
		state, head := gitstore.ParseHash(r.State), gitstore.ParseHash(r.Head)
		if a, ok := s.reproduce(call, base, state, head, at); ok {
			return a, decided(head, state, true), true, serverSaid{}
		}
		if _, err := s.repo.Head(ctx); err != nil { // fetch: brings the commits
			return a, tx, false, said
		}
		if a, err = s.redecide(base, state, head); err != nil {
			return a, tx, false, said
		}
		return a, decided(head, state, false), true, serverSaid{}
	case "refused", "unchanged":
		// The same decision made here, on the head and at the time the
		// server decided it: the answer with this build's typed details.
		sn, err := s.repo.Snapshot(base)
		if err != nil {
			if _, err := s.repo.Head(ctx); err != nil { // fetch: brings the base
				return a, tx, false, said
			}
			if sn, err = s.repo.Snapshot(base); err != nil {
				return a, tx, false, said
			}
		}
		a = s.decide(sn, call, at)
		le, isLease := lease.AsError(a.err)
		switch {
		case r.Status == "refused" && (!isLease || le.Code != r.Code):
			return a, tx, false, said
		case r.Status == "unchanged" && (a.err != nil || a.out == nil || a.out.Write):
			return a, tx, false, said
		}
		// The head reported is the one decided on, which is here (a board
		// the server delivered on the way is fetched by the next read).
		return a, decided(base, gitstore.ZeroHash, false), true, serverSaid{}
	}
	return a, tx, false, said
}

// serverSaid is what a server that decides answered, when its answer was
// not used: its status or refusal's code, and a refusal's message.
type serverSaid struct{ What, Message string }

// reproduce makes the server's commits again here when the head they were
// decided on is here (no other writer came between this clone's last
// look at the server and the decision): the same decision, at the same
// time, gives byte for byte the same state and board commits, which are
// then written here and the local ref moved to them, without a fetch.
// Otherwise (the head is not here, or the commits differ) ok is false and
// the caller fetches them.
func (s *Store) reproduce(call lease.Call, base, state, head gitstore.Hash, at time.Time) (attempt, bool) {
	sn, err := s.repo.Snapshot(base)
	if err != nil {
		return attempt{}, false
	}
	a := s.decide(sn, call, at)
	if a.err != nil || a.proposal == nil {
		return attempt{}, false
	}
	if ok, err := s.git.Reproduce(base, a.proposal, state, head); err != nil || !ok {
		return attempt{}, false
	}
	s.remote.Published(head)
	return a, true
}

// errNotReproduced: a commit the server reported that this client does not
// decide the same way.
var errNotReproduced = errors.New("the server's commit is not what its request decides here")

// redecide decides again the request recorded on state, a commit on base,
// at its time, and checks that the decision gives its tree: the outcome is
// then the server's decision as this build's typed result. The board is
// not rendered (only the state tree is compared): the server's reply says
// whether it committed one (head past state: delivered); when it did not,
// the board is delivered as after a failed board step, which renders the
// head and commits only if its bytes changed (not_required otherwise).
// Rendering it here was 14% of a holder's CPU at 64 agents.
func (s *Store) redecide(base, state, head gitstore.Hash) (attempt, error) {
	var meta gitstore.CommitMeta
	found := false
	if err := s.repo.Log(state, func(c gitstore.CommitMeta) (bool, error) {
		meta, found = c, true
		return false, nil
	}); err != nil || !found {
		return attempt{}, fmt.Errorf("loopx: read %s: %w", state, errNotReproduced)
	}
	if meta.Parent != base {
		return attempt{}, errNotReproduced
	}
	rc, err := lease.ParseCommit(meta.Message)
	if err != nil || rc.Board {
		return attempt{}, errNotReproduced
	}
	sn, err := s.repo.Snapshot(base)
	if err != nil {
		return attempt{}, err
	}
	a, _ := s.decideState(sn, rc.Call, meta.When.UTC())
	if a.err != nil || a.proposal == nil {
		return attempt{}, errNotReproduced
	}
	tree, err := s.repo.TreeOf(base, a.proposal.Changes)
	if err != nil || tree != meta.Tree {
		return attempt{}, errNotReproduced
	}
	if o := a.out; o.Goal != "" && o.BoardChanged {
		a.board = &boardPlan{goal: o.Goal, chained: head != state}
	}
	return a, nil
}
