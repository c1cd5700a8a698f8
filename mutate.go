package loopx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// The path of one mutation:
//
//	read → decide → propose → report
//
// Apply runs the call's decision in one compare-and-swap transaction of the
// store's repository (whose authority is the local ref or the server's):
// on the snapshot of the head, the operation's resolver fills in the
// defaults, the pure decision decides, and the proposal is the decision's
// writes with the commit message that records the canonical request; the
// board of the goal rides on it as a chained commit (board.go). A lost
// compare-and-swap decides again on the new head (gitstore). The report
// says what happened in the contract's envelope.

// Read runs a read-only decision on the authority's head (a command's read
// path): decide returns the command's payload.
func Read[T any](s *Store, op string, decide func(v *lease.View, now time.Time) (T, error)) (*Result[T], error) {
	head, err := s.repo.Head(context.Background())
	if err != nil {
		return nil, storeerr.Map(err)
	}
	sn, err := s.repo.Snapshot(head)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	v := s.viewOf(sn)
	clock := s.opts.now()
	now := lease.Now(clock, sn.Time())
	data, err := decide(v, now)
	s.derived.MaybePrune() // a long-lived reader follows every version too
	if err != nil {
		return nil, storeerr.Map(err)
	}
	res := &Result[T]{Envelope: Envelope{Operation: op, CurrentRevision: records.Rev(head)}, Data: data}
	if meta, err := v.Meta(); err == nil {
		// A head dated beyond the skew bound: expiry is judged at the
		// head's time, not this machine's; say so.
		res.ClockSkew = lease.SkewOf(clock, sn.Time(), lease.MaxClockSkew(meta))
	}
	s.annotate(&res.Envelope, now)
	return res, nil
}

// payloadOf is the payload of a decision's outcome as its operation's own
// type. The operation table decides every mutation through one signature,
// whose outcome holds the payload as any (lease.Outcome.Data); this is the
// one place it is given its type back, and a payload of another type is an
// error, never a guess.
func payloadOf[T any](o *lease.Outcome) (T, error) {
	switch d := o.Data.(type) {
	case T:
		return d, nil
	case *T:
		if d != nil {
			return *d, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("loopx: %s decided a %T payload, not a %T: a bug in loopx", o.Operation, o.Data, zero)
}

// outcomeOf runs a read-only lease decision that answers with an outcome,
// and takes its payload.
func outcomeOf[T any](decide func() (*lease.Outcome, error)) (T, error) {
	o, err := decide()
	if err != nil {
		var zero T
		return zero, err
	}
	return payloadOf[T](o)
}

// applyAs applies call and gives its result the payload type T of the
// call's operation (see payloadOf).
func applyAs[T any](s *Store, call lease.Call) (*Result[T], error) {
	res, out, err := s.apply(call, true)
	if err != nil {
		return nil, err
	}
	data, err := payloadOf[T](out)
	if err != nil {
		return nil, err
	}
	return &Result[T]{Envelope: res.Envelope, Data: data}, nil
}

// Apply decides one request (a lease.Call: see lease.CallOf and
// lease.DecodeRequest) as its command does, and commits it. Its payload is
// the operation's (the typed methods, Acquire, Claim..., give it its type).
func (s *Store) Apply(call lease.Call) (*Result[any], error) {
	res, _, err := s.apply(call, true)
	return res, err
}

// ApplyJSON decodes one request in the wire schema (contract section 7)
// strictly (at most 1 MiB: lease.DecodeWireRequest) and applies it.
func (s *Store) ApplyJSON(data []byte) (*Result[any], error) {
	call, err := lease.DecodeWireRequest(data)
	if err != nil {
		return nil, err
	}
	return s.Apply(call)
}

// errUpgradeFirst stops a decision on a store of an older format: the
// format upgrade is committed first, as a recorded commit of its own.
var errUpgradeFirst = errors.New("the store's format must be upgraded first")

// attempt is one decision of a transaction.
type attempt struct {
	out      *lease.Outcome
	board    *boardPlan
	proposal *gitstore.Proposal
	err      error
	at       time.Time // the decision's time (zero: refused before it was known)
}

// apply runs call's transaction, and returns its result and the decision's
// outcome; upgrade lets it first upgrade a store of an older format (once).
func (s *Store) apply(call lease.Call, upgrade bool) (*Result[any], *lease.Outcome, error) {
	res, out, _, _, err := s.applyTx(call, upgrade)
	return res, out, err
}

// applyTx is apply, and says how its transaction went and the time of its
// last decision (decided.go).
func (s *Store) applyTx(call lease.Call, upgrade bool) (*Result[any], *lease.Outcome, gitstore.TxResult, time.Time, error) {
	if err := s.remote.CheckOfflineWork(); err != nil {
		return nil, nil, gitstore.TxResult{}, time.Time{}, err
	}
	start := clock.Or(s.opts.Clock).Now()
	last, tx, ok, said := s.applyByServer(call)
	if !ok {
		tx, err := s.repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
			last = s.decide(sn, call, time.Time{})
			return last.proposal, last.err
		})
		if errors.Is(err, errUpgradeFirst) && upgrade {
			if _, _, err := s.apply(lease.CallOf(lease.UpgradeRequest{FormatVersion: lease.FormatVersion, StoreID: s.opts.newStoreID()}), false); err != nil {
				return nil, nil, tx, last.at, err
			}
			return s.applyTx(call, false)
		}
		if err != nil {
			err = s.annotateErr(storeerr.Map(err))
			s.txStats(call, tx, start, "", err, said)
			return nil, nil, tx, last.at, err
		}
		return s.finish(call, last, tx, start, said)
	}
	if last.err != nil { // the server's refusal, decided again here
		err := s.annotateErr(storeerr.Map(last.err))
		s.txStats(call, tx, start, "", err, serverSaid{})
		return nil, nil, tx, last.at, err
	}
	return s.finish(call, last, tx, start, serverSaid{})
}

// finish reports a transaction that decided.
func (s *Store) finish(call lease.Call, last attempt, tx gitstore.TxResult, start time.Time, said serverSaid) (*Result[any], *lease.Outcome, gitstore.TxResult, time.Time, error) {
	if last.out.Write && s.opts.AfterCommit != nil {
		s.opts.AfterCommit()
	}
	s.derived.MaybePrune()
	s.txStats(call, tx, start, last.out.Status, nil, said)
	return s.report(last, tx), last.out, tx, last.at, nil
}

// TxStats is how one mutation's transaction went (Options.TxStats).
type TxStats struct {
	// Attempts counts its decisions (0: it failed before deciding, e.g.
	// the writer fence or the remote could not be reached); LostRaces the
	// compare-and-swaps it lost to other writers.
	Attempts  int `json:"attempts"`
	LostRaces int `json:"lost_races"`
	// Operation is the operation's name (task-lease.renew, ...).
	Operation string `json:"operation"`
	// Status is the answer's status (applied, replayed, no_change), or
	// empty for a refusal or failure, whose contract code Code is.
	Status string     `json:"status,omitempty"`
	Code   lease.Code `json:"code,omitempty"`
	// MS is how long the transaction took, in milliseconds to a tenth, on
	// the store's clock (Options.Clock): reading the head, deciding,
	// committing and, with a remote, fetching and pushing, retries
	// included; not the process's start.
	MS float64 `json:"ms"`
	// DecidedBy is "server" when the server decided the request
	// (decided.go), else empty: decided here.
	DecidedBy string `json:"decided_by,omitempty"`
	// ServerSaid is, when a server that decides did not (and the request
	// was decided here instead), what it answered: "unchanged", a
	// refusal's code, or "no_answer".
	ServerSaid string `json:"server_said,omitempty"`
	// ServerMessage is then a refusal's message (its first line), which
	// says what failed on the server when the code is store_io.
	ServerMessage string `json:"server_message,omitempty"`
	// Reproduced: the server's commits were made again here from the
	// same decision instead of being fetched (decided.go).
	Reproduced bool `json:"reproduced,omitempty"`
	// ServerMS is, when the server was asked, how long it took to answer
	// (the request's push and the hook's decision); ServerDecideMS how
	// long of that the hook said it took to decide and commit, its
	// writer fence's wait included. The rest of MS is this clone's own
	// work (reading, fetching, making the commits again).
	ServerMS       float64 `json:"server_ms,omitempty"`
	ServerDecideMS float64 `json:"server_decide_ms,omitempty"`
}

// msOf is d in milliseconds to a tenth.
func msOf(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*10) / 10
}

// txStats reports a transaction to Options.TxStats, when set. An upgrade
// run first on the way is reported by itself, as its own transaction.
func (s *Store) txStats(call lease.Call, tx gitstore.TxResult, start time.Time, status string, err error, said serverSaid) {
	if s.opts.TxStats == nil {
		return
	}
	st := TxStats{Attempts: tx.Attempts, LostRaces: tx.Conflicts, Operation: call.Op.Name, Status: status, MS: msOf(clock.Or(s.opts.Clock).Since(start)),
		ServerMS: msOf(tx.Asked), ServerDecideMS: msOf(tx.ServerDecided)}
	if tx.ByServer {
		st.DecidedBy = "server"
		st.Reproduced = tx.Reproduced
	}
	st.ServerSaid, st.ServerMessage = said.What, said.Message
	if err != nil {
		st.Code = lease.CodeStoreIO
		if le, ok := lease.AsError(err); ok {
			st.Code = le.Code
		}
	}
	s.opts.TxStats(st)
}

// decide makes one decision of call on a snapshot; at, when set, is the
// time of a decision already made (by the server: decided.go), which is
// then made again as it was, not at this machine's clock.
func (s *Store) decide(sn *gitstore.Snapshot, call lease.Call, at time.Time) attempt {
	a, v := s.decideState(sn, call, at)
	if a.proposal != nil {
		a.board, a.proposal.Next = s.planBoard(sn, v, a.out, a.at)
	}
	return a
}

// decideState is decide without the board: the state commit's proposal
// and the view with the decision's writes (for planBoard).
func (s *Store) decideState(sn *gitstore.Snapshot, call lease.Call, at time.Time) (attempt, *lease.View) {
	c := call.Current() // a request of an older schema version: today's rules
	v := s.viewOf(sn)
	meta, _ := v.Meta() // a corrupt meta is reported by the decision
	if c.Op.Name != lease.OpStoreUpgrade && meta != nil && meta.FormatVersion < lease.FormatVersion {
		return attempt{err: errUpgradeFirst}, v
	}
	if err := s.remote.CheckIdentity(v); err != nil {
		return attempt{err: err}, v
	}
	clock := s.opts.now()
	now := lease.Now(clock, sn.Time())
	if !at.IsZero() {
		now = at
	} else if c.Op.Rewinds {
		// clock-reset is decided at the real clock, whatever LOOPX_NOW
		// says (contract section 8): a reset dated in the past would
		// expire leases that are live by real time.
		now = s.opts.systemNow().UTC().Truncate(time.Second)
	} else if err := lease.CheckClock(clock, sn.Time(), lease.MaxClockSkew(meta)); err != nil {
		return attempt{err: err}, v
	}
	if err := c.Resolve(v, lease.Defaults{Goal: s.defaultGoal}, now); err != nil {
		return attempt{err: err, at: now}, v
	}
	o, err := c.Decide(v, now)
	if err != nil {
		return attempt{err: err, at: now}, v
	}
	a := attempt{out: o, at: now}
	if !o.Write {
		return a, v
	}
	if !s.unrecorded {
		req, err := c.Encode()
		if err != nil {
			return attempt{err: err, at: now}, v
		}
		o.Request = string(req)
	}
	p := &gitstore.Proposal{Info: s.commitInfo(o.Actor, o.Message(), now)}
	// Who must sign is judged on the snapshot decided on (a fresh view:
	// without the decision's own writes).
	rule, err := lease.CommitSigner(s.viewOf(sn), c, o)
	if err != nil {
		return attempt{err: err, at: now}, v
	}
	if p.Info.Sign, err = s.keys.signer(rule); err != nil {
		return attempt{err: err, at: now}, v
	}
	for _, ch := range v.Changes() {
		p.Changes = append(p.Changes, gitstore.Change{Path: ch.Path, Data: ch.Data, Delete: ch.Data == nil})
	}
	// A record loopx would refuse to read (oversize) is never written.
	if err := lease.CheckRecordSizes(v.Changes()); err != nil {
		return attempt{err: err, at: now}, v
	}
	a.proposal = p
	return a, v
}

// report renders what one mutation did in the contract's envelope.
func (s *Store) report(a attempt, tx gitstore.TxResult) *Result[any] {
	out := a.out
	res := &Result[any]{Envelope: Envelope{Operation: out.Operation, Mutation: true, Status: out.Status,
		Attempts: tx.Attempts, LostRaces: tx.Conflicts}, Data: out.Data}
	switch {
	case out.Write:
		res.Revision = records.Rev(tx.State)
	case out.Status == lease.StatusReplayed && out.ReplayOf != "":
		// The receipt names the head it was decided on; its commit is
		// that head's child (a lost response finds it the same way).
		h, _ := s.repo.ChildOf(tx.Head, gitstore.ParseHash(out.ReplayOf))
		res.Revision = records.Rev(h)
	case out.Status == lease.StatusReplayed:
		res.Revision = s.lastApplied(tx.Head, out)
	default:
		res.Revision = records.Rev(tx.Head)
	}
	var head gitstore.Hash
	res.Projection, res.ProjectionError, head = s.finishBoard(a.board, out, tx)
	res.CurrentRevision = records.Rev(head)
	s.annotate(&res.Envelope, time.Time{})
	return res
}

// lastApplied finds the newest commit that applied the outcome's operation
// on its todo (replays without a receipt, e.g. a repeated completion).
func (s *Store) lastApplied(head gitstore.Hash, o *lease.Outcome) string {
	found := ""
	_ = s.repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		e, ok := lease.ParseMessage(c.Message)
		if ok && e.Operation == o.Operation && e.Goal == o.Goal && e.Todo == o.Todo && e.Status == lease.StatusApplied {
			found = c.Hash.String()
			return false, nil
		}
		return true, nil
	})
	return found
}
