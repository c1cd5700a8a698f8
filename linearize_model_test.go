package loopx_test

// The sequential model of one todo's lease and claim that
// TestLinearizability checks real histories against with porcupine
// (github.com/anishathalye/porcupine). It is written from the contract
// (../shared/CONTRACT.md sections 4–6), not from lease/: it must be able to
// disagree with the code.
//
// Time. Decisions use the machine's clock in whole seconds, never earlier than
// the head's decision time. The harness records, for every attempt, the wall
// clock in whole seconds before the process starts (Lo) and after it exits
// (Hi); the decision time is an integer t in [max(Lo, floor), Hi], where floor
// is the latest decision time the model knows of (a decision linearized after
// another one read a head that carries the other's time). Expiry is judged at
// t, so the model is nondeterministic: a step tries every such t and keeps
// those whose decision matches the output. Leases therefore get short TTLs
// (1–30 s) and really expire during a run, and a renew racing its own
// expiry is legal whichever way the second falls. An applied result pins t
// exactly (acquired_at, renewed_at, released_at, the todo's updated_at).
//
// Unknown outcomes (exit 3, killed) accept any output: the next states are
// "it did not take effect" and "it was decided at some t in its window".
// Each attempt of a retried call is its own operation; a retry answered
// replayed is the call's output, and linearizes only after an earlier
// attempt (or another caller's identical request) took effect.
//
// A result must match the model exactly: status; the lease shown (owner, key,
// version, epoch, status, acquired/renewed/released/expires times,
// effective at t); for a replay the original receipt (status, decision time,
// lease snapshot) and the revision first applied; for claim and clear the
// effective claimant, claimed_at, claim_expires_at and updated_at.
//
// Refusals. Where several admission rules fail at once the contract does not
// say which code wins, so the model accepts any code of a rule that fails,
// and only those. Replays come first (the same identity with the same digest
// is a replay before any admission; another digest is
// idempotency_key_reuse).
//
// Scope. One goal in soft_claim mode; agents are registered once and never
// excluded; todos are never closed; each todo's write scopes are its own
// (w/<todo>/**), so no two todos conflict and the history partitions by todo.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// linInput is one attempt of one request.
type linInput struct {
	Todo string
	// Kind: acquire, renew, transfer, release, inspect, claim, clear.
	Kind string
	// Owner is the lease owner, or the acting agent of claim and clear. Key
	// is the idempotency key, the lease key of a claim that also acquires, or
	// the proof key of a clear ("" for none).
	Owner, Key string
	// EV is the expected version (acquire: only when HasEV; clear: the
	// proof's version, when Key is set).
	EV    int64
	HasEV bool
	// TTL is the lease TTL in seconds (acquire, renew, transfer, claim with
	// Key).
	TTL              int64
	Scope            string // acquire: "" (the todo's required scopes: none) or one write scope
	NewOwner, NewKey string // transfer
	ClaimTTLMin      int64  // claim: --claim-ttl-minutes (0: none)
	// Lo and Hi bound the decision time (unix seconds, see above).
	Lo, Hi int64
	// Call identifies the client call the attempt belongs to (for humans).
	Client, Call, Attempt int
}

// linLease is a lease as the model keeps it, and as results show it.
type linLease struct {
	Owner, Key                  string
	Version, Epoch              int64
	Active                      bool
	Expires                     int64
	Acquired, Renewed, Released int64 // unix seconds, 0 for null
	Scopes                      string
}

// linView is a lease in a result: the record plus whether it is effective.
type linView struct {
	linLease
	Effective bool
}

// linReceiptOut is a replay's original_receipt.
type linReceiptOut struct {
	Status   string
	Decided  int64
	HasLease bool
	Lease    linLease
}

// linOutput is what one attempt printed.
type linOutput struct {
	Unknown  bool   // exit 3, killed: may or may not have taken effect
	Code     string // exit 1: the refusal
	Status   string // applied | replayed | no_change ("" for inspect)
	Revision string
	Lease    *linView // nil: null or absent
	Orig     *linReceiptOut
	// Claim and clear: the effective claimant after the request and the
	// todo's claim fields and updated_at.
	ClaimedBy               string
	ClaimedAt, ClaimExpires int64
	UpdatedAt               int64
	Detail                  string // exit code and error message, for the visualization
}

// linReceipt is a receipt as the model keeps it.
type linReceipt struct {
	Digest   string
	Status   string // applied | no_change
	Decided  int64  // 0: not known to the model
	Revision string // "": not known to the model
	HasLease bool
	Lease    linLease
}

// linState is the state of one todo: its lease, its claim, the receipts of
// its lease requests and every key an execution of it used.
type linState struct {
	has       bool
	lease     linLease
	claimedBy string
	claimTTL  int64
	claimedAt int64
	claimExp  int64 // 0: no expiry
	floor     int64
	receipts  map[string]linReceipt // shared between states: copy on write
	seen      map[string]bool       // shared: copy on write
	rhash     uint64                // of receipts and seen, kept as they change
	hash      uint64
}

func (s *linState) clone() *linState {
	c := *s
	return &c
}

// linHash hashes strings and integers (FNV-1a).
type linHash uint64

func (h linHash) str(s string) linHash {
	if h == 0 {
		h = 14695981039346656037
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ linHash(s[i])) * 1099511628211
	}
	return (h ^ 0xff) * 1099511628211
}

func (h linHash) num(n int64) linHash { return h.str(strconv.FormatInt(n, 36)) }

func (h linHash) lease(l linLease) linHash {
	h = h.str(l.Owner).str(l.Key).num(l.Version).num(l.Epoch).num(l.Expires).num(l.Acquired).num(l.Renewed).num(l.Released).str(l.Scopes)
	if l.Active {
		h = h.str("active")
	}
	return h
}

func receiptHash(id string, r linReceipt) uint64 {
	h := linHash(0).str(id).str(r.Digest).str(r.Status).num(r.Decided).str(r.Revision)
	if r.HasLease {
		h = h.lease(r.Lease)
	}
	return uint64(h) * 0x9e3779b97f4a7c15
}

func (s *linState) finish() *linState {
	h := linHash(0).lease(s.lease).str(s.claimedBy).num(s.claimTTL).num(s.claimedAt).num(s.claimExp).num(s.floor)
	if s.has {
		h = h.str("has")
	}
	s.hash = uint64(h) ^ s.rhash
	return s
}

func linEqual(a, b any) bool {
	x, y := a.(*linState), b.(*linState)
	if x == y {
		return true
	}
	if x.hash != y.hash || x.rhash != y.rhash || x.has != y.has || x.lease != y.lease || x.claimedBy != y.claimedBy || x.claimTTL != y.claimTTL ||
		x.claimedAt != y.claimedAt || x.claimExp != y.claimExp || x.floor != y.floor {
		return false
	}
	return maps.Equal(x.receipts, y.receipts) && maps.Equal(x.seen, y.seen)
}

func (s *linState) claimant(t int64) string {
	if s.claimedBy != "" && (s.claimExp == 0 || t < s.claimExp) {
		return s.claimedBy
	}
	return ""
}

func (s *linState) live(t int64) bool { return s.has && s.lease.Active && t < s.lease.Expires }

// effective: active, unexpired, and the claim empty or the owner's (the
// owner is registered, not excluded and the todo open, always, here).
func (s *linState) effective(t int64) bool {
	c := s.claimant(t)
	return s.live(t) && (c == "" || c == s.lease.Owner)
}

func (s *linState) version() int64 {
	if !s.has {
		return 0
	}
	return s.lease.Version
}

func (s *linState) view(t int64) *linView {
	if !s.has {
		return nil
	}
	return &linView{linLease: s.lease, Effective: s.effective(t)}
}

// proofCodes are the refusals of an exact proof (owner, key, version) that
// does not match the current lease.
func (s *linState) proofCodes(owner, key string, ev int64) []string {
	var codes []string
	if ev != s.version() {
		codes = append(codes, "version_mismatch")
	}
	if !s.has || s.lease.Owner != owner || s.lease.Key != key {
		codes = append(codes, "lease_proof_mismatch")
	}
	return codes
}

// linVerdict is the model's decision of one request at one decision time.
type linVerdict struct {
	codes     []string // a refusal with one of these codes
	status    string
	next      *linState
	lease     *linView // the result's lease (nil: null/absent)
	orig      *linReceipt
	receiptID string // the receipt this decision wrote
	// claim and clear results; todoChanged: the todo was written (its
	// updated_at is the decision time)
	claim, todoChanged bool
}

func refuse(s *linState, codes ...string) linVerdict { return linVerdict{codes: codes, next: s} }

func (s *linState) withReceipt(id string, r linReceipt) *linState {
	n := s.clone()
	n.receipts = maps.Clone(s.receipts)
	if n.receipts == nil {
		n.receipts = map[string]linReceipt{}
	}
	if old, ok := n.receipts[id]; ok {
		n.rhash ^= receiptHash(id, old)
	}
	n.receipts[id] = r
	n.rhash ^= receiptHash(id, r)
	return n
}

// setRevision records the revision a new receipt was written at (known from
// the output only); n owns its receipts map.
func (n *linState) setRevision(id, rev string) {
	r := n.receipts[id]
	n.rhash ^= receiptHash(id, r)
	r.Revision = rev
	n.receipts[id] = r
	n.rhash ^= receiptHash(id, r)
}

func (s *linState) withSeen(key string) {
	if s.seen[key] {
		return
	}
	seen := maps.Clone(s.seen)
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[key] = true
	s.seen = seen
	s.rhash ^= uint64(linHash(0).str("key").str(key))
}

func snapshot(s *linState) (bool, linLease) { return s.has, s.lease }

// replay answers a request whose identity has a receipt.
func replay(s *linState, id string, r linReceipt, t int64) linVerdict {
	return linVerdict{status: "replayed", next: s, lease: s.view(t), orig: &r, receiptID: id}
}

func evString(in *linInput) string {
	if !in.HasEV {
		return "none"
	}
	return fmt.Sprint(in.EV)
}

// acquire decides a task-lease acquire (also the acquire half of a claim).
func (s *linState) acquire(owner, key string, hasEV bool, ev, ttl int64, scope string, t int64) linVerdict {
	id := "acquire|" + owner + "|" + key
	evs := "none"
	if hasEV {
		evs = fmt.Sprint(ev)
	}
	digest := fmt.Sprintf("%s|%d|%s", evs, ttl, scope)
	if r, ok := s.receipts[id]; ok {
		if r.Digest != digest {
			return refuse(s, "idempotency_key_reuse")
		}
		// A replay only while that execution is still the current one.
		if s.effective(t) && s.lease.Owner == owner && s.lease.Key == key && r.HasLease && s.lease.Epoch == r.Lease.Epoch {
			return replay(s, id, r, t)
		}
		return refuse(s, "execution_not_current")
	}
	var codes []string
	if c := s.claimant(t); c != "" && c != owner {
		codes = append(codes, "claim_conflict")
	}
	if s.effective(t) && (s.lease.Owner != owner || s.lease.Key != key) {
		codes = append(codes, "todo_lease_conflict")
	}
	if s.seen[key] {
		codes = append(codes, "idempotency_key_reuse")
	}
	if hasEV && ev != s.version() {
		codes = append(codes, "version_mismatch")
	}
	if len(codes) > 0 {
		return refuse(s, codes...)
	}
	l := linLease{Owner: owner, Key: key, Version: s.version() + 1, Epoch: s.lease.Epoch + 1, Active: true,
		Expires: t + ttl, Acquired: t, Scopes: scope}
	n := s.withReceipt(id, linReceipt{Digest: digest, Status: "applied", Decided: t, HasLease: true, Lease: l})
	n.has, n.lease = true, l
	n.withSeen(key)
	n.floor = max(n.floor, t)
	return linVerdict{status: "applied", next: n, lease: n.view(t), receiptID: id}
}

// decide decides in at decision time t.
func (s *linState) decide(in *linInput, t int64) linVerdict {
	switch in.Kind {
	case "inspect":
		return linVerdict{next: s, lease: s.view(t)}

	case "acquire":
		return s.acquire(in.Owner, in.Key, in.HasEV, in.EV, in.TTL, in.Scope, t)

	case "renew", "transfer", "release":
		id := fmt.Sprintf("%s|%s|%s|%d", in.Kind, in.Owner, in.Key, in.EV)
		digest := ""
		switch in.Kind {
		case "renew":
			digest = fmt.Sprint(in.TTL)
		case "transfer":
			digest = fmt.Sprintf("%d|%s|%s", in.TTL, in.NewOwner, in.NewKey)
		}
		if r, ok := s.receipts[id]; ok {
			if r.Digest != digest {
				return refuse(s, "idempotency_key_reuse")
			}
			return replay(s, id, r, t)
		}
		if in.Kind == "release" {
			return s.release(in, id, t)
		}
		var codes []string
		if !s.live(t) {
			codes = append(codes, "lease_not_active")
		}
		codes = append(codes, s.proofCodes(in.Owner, in.Key, in.EV)...)
		if in.Kind == "renew" {
			if c := s.claimant(t); c != "" && c != in.Owner {
				codes = append(codes, "claim_conflict")
			}
		} else {
			if c := s.claimant(t); c != "" && c != in.NewOwner {
				codes = append(codes, "claim_conflict")
			}
			if s.seen[in.NewKey] {
				codes = append(codes, "idempotency_key_reuse")
			}
		}
		if len(codes) > 0 {
			return refuse(s, codes...)
		}
		l := s.lease
		l.Version++
		l.Expires = t + in.TTL
		if in.Kind == "renew" {
			l.Renewed = t
		} else {
			l.Epoch++
			l.Owner, l.Key = in.NewOwner, in.NewKey
			l.Acquired, l.Renewed, l.Released = t, 0, 0
		}
		n := s.withReceipt(id, linReceipt{Digest: digest, Status: "applied", Decided: t, HasLease: true, Lease: l})
		n.lease = l
		if in.Kind == "transfer" {
			n.withSeen(in.NewKey)
		}
		n.floor = max(n.floor, t)
		return linVerdict{status: "applied", next: n, lease: n.view(t), receiptID: id}

	case "claim":
		c := s.claimant(t)
		if c != "" && c != in.Owner {
			return refuse(s, "claim_conflict")
		}
		if s.effective(t) && s.lease.Owner != in.Owner {
			return refuse(s, "todo_lease_conflict")
		}
		// A new claim takes the request's TTL (none: no expiry); the
		// holder's re-claim keeps its TTL and expiry unless it gives a TTL,
		// which sets a fresh expiry (todo.claim/v2), and changes nothing
		// when that is the expiry it has.
		changed := c == "" || (in.ClaimTTLMin > 0 && (s.claimTTL != in.ClaimTTLMin || s.claimExp != t+60*in.ClaimTTLMin))
		n := s
		if changed {
			n = s.clone()
			n.claimedBy = in.Owner
			if c == "" {
				n.claimedAt, n.claimTTL, n.claimExp = t, 0, 0
			}
			if in.ClaimTTLMin > 0 {
				n.claimTTL, n.claimExp = in.ClaimTTLMin, t+60*in.ClaimTTLMin
			}
			n.floor = max(n.floor, t)
		}
		v := linVerdict{status: "no_change", next: n, claim: true, todoChanged: changed}
		if changed {
			v.status = "applied"
		}
		if in.Key != "" {
			a := n.acquire(in.Owner, in.Key, false, 0, in.TTL, "", t)
			if len(a.codes) > 0 {
				return refuse(s, a.codes...)
			}
			v.next, v.receiptID, v.lease = a.next, a.receiptID, a.next.view(t)
			if !changed {
				v.status, v.orig = a.status, a.orig
			}
		}
		return v

	case "clear":
		var codes []string
		if c := s.claimant(t); c != "" && c != in.Owner {
			codes = append(codes, "not_claim_owner")
		}
		verified := in.Key != ""
		if in.Key == "" && s.effective(t) {
			codes = append(codes, "lease_fence_required")
		}
		if in.Key != "" {
			codes = append(codes, s.proofCodes(in.Owner, in.Key, in.EV)...)
		}
		if len(codes) > 0 {
			return refuse(s, codes...)
		}
		v := linVerdict{status: "no_change", next: s, claim: true}
		if s.claimedBy != "" {
			n := s.clone()
			n.claimedBy, n.claimTTL, n.claimedAt, n.claimExp = "", 0, 0, 0
			n.floor = max(n.floor, t)
			v.status, v.next, v.todoChanged = "applied", n, true
		}
		if verified {
			v.lease = v.next.view(t)
		}
		return v
	}
	panic("unknown kind " + in.Kind)
}

// release decides a task-lease release that is not a replay.
func (s *linState) release(in *linInput, id string, t int64) linVerdict {
	if !s.has {
		if in.EV != 0 {
			return refuse(s, "version_mismatch")
		}
		n := s.withReceipt(id, linReceipt{Status: "no_change"})
		return linVerdict{status: "no_change", next: n, receiptID: id}
	}
	if codes := s.proofCodes(in.Owner, in.Key, in.EV); len(codes) > 0 {
		return refuse(s, codes...)
	}
	if !s.lease.Active {
		n := s.withReceipt(id, linReceipt{Status: "no_change", HasLease: true, Lease: s.lease})
		return linVerdict{status: "no_change", next: n, lease: n.view(t), receiptID: id}
	}
	l := s.lease
	l.Active, l.Released = false, t
	n := s.withReceipt(id, linReceipt{Status: "applied", Decided: t, HasLease: true, Lease: l})
	n.lease = l
	n.floor = max(n.floor, t)
	return linVerdict{status: "applied", next: n, lease: n.view(t), receiptID: id}
}

// matches reports whether the verdict at decision time t gives output o.
func (v linVerdict) matches(in *linInput, o *linOutput, t int64) bool {
	if len(v.codes) > 0 {
		return o.Code != "" && slices.Contains(v.codes, o.Code)
	}
	if o.Code != "" || o.Status != v.status {
		return false
	}
	if (v.lease == nil) != (o.Lease == nil) || (v.lease != nil && *v.lease != *o.Lease) {
		return false
	}
	switch r := v.orig; {
	case r != nil && r.Revision != "" && o.Revision != r.Revision:
		return false // a replay reports the commit that first applied it
	case v.claim:
		// A claim's result has no original_receipt.
	case r != nil:
		if o.Orig == nil || o.Orig.Status != r.Status || (r.Decided != 0 && o.Orig.Decided != r.Decided) ||
			o.Orig.HasLease != r.HasLease || (r.HasLease && o.Orig.Lease != r.Lease) {
			return false
		}
	case o.Orig != nil:
		return false
	}
	if v.claim {
		n := v.next
		if o.ClaimedBy != n.claimant(t) || o.ClaimedAt != n.claimedAt || o.ClaimExpires != n.claimExp {
			return false
		}
		if v.todoChanged && o.UpdatedAt != t {
			return false
		}
	}
	return true
}

// linStep is the nondeterministic step: every state the request can leave
// behind when it produced o.
func linStep(state, input, output any) []any {
	s, in, o := state.(*linState), input.(*linInput), output.(*linOutput)
	var out []any
	if o.Unknown {
		out = append(out, s) // it did not take effect
	}
	for t := max(in.Lo, s.floor); t <= in.Hi; t++ {
		v := s.decide(in, t)
		switch {
		case o.Unknown:
			if v.next != s {
				out = append(out, v.next.finish())
			}
		case v.matches(in, o, t):
			n := v.next
			if n != s && v.receiptID != "" && v.orig == nil {
				// A new receipt: remember the revision it was written at,
				// which every replay of it must report.
				n.setRevision(v.receiptID, o.Revision)
			}
			if n != s {
				n.finish()
			}
			out = append(out, n)
		}
	}
	return out
}

func linModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			for _, op := range h {
				todo := op.Input.(*linInput).Todo
				by[todo] = append(by[todo], op)
			}
			todos := slices.Sorted(maps.Keys(by))
			out := make([][]porcupine.Operation, 0, len(todos))
			for _, td := range todos {
				out = append(out, by[td])
			}
			return out
		},
		Init:              func() []any { return []any{(&linState{}).finish()} },
		Step:              linStep,
		Equal:             linEqual,
		Hash:              func(s any) uint64 { return s.(*linState).hash },
		DescribeOperation: linDescribe,
		DescribeState:     linDescribeState,
	}
	return nm.ToModel()
}

func linDescribeLease(l *linView) string {
	if l == nil {
		return "none"
	}
	st := "released"
	if l.Active {
		st = fmt.Sprintf("active until %d", l.Expires%1000)
	}
	eff := ""
	if l.Effective {
		eff = " effective"
	}
	return fmt.Sprintf("%s/%s v%d e%d %s%s", l.Owner, l.Key, l.Version, l.Epoch, st, eff)
}

func linDescribe(input, output any) string {
	in, o := input.(*linInput), output.(*linOutput)
	var b strings.Builder
	fmt.Fprintf(&b, "c%d.%d#%d %s", in.Client, in.Call, in.Attempt, in.Kind)
	switch in.Kind {
	case "acquire":
		fmt.Fprintf(&b, " %s/%s ev=%s ttl=%d scope=%q", in.Owner, in.Key, evString(in), in.TTL, in.Scope)
	case "renew":
		fmt.Fprintf(&b, " %s/%s ev=%d ttl=%d", in.Owner, in.Key, in.EV, in.TTL)
	case "release":
		fmt.Fprintf(&b, " %s/%s ev=%d", in.Owner, in.Key, in.EV)
	case "transfer":
		fmt.Fprintf(&b, " %s/%s ev=%d → %s/%s ttl=%d", in.Owner, in.Key, in.EV, in.NewOwner, in.NewKey, in.TTL)
	case "claim":
		fmt.Fprintf(&b, " by %s ttl=%dm", in.Owner, in.ClaimTTLMin)
		if in.Key != "" {
			fmt.Fprintf(&b, " +lease %s ttl=%d", in.Key, in.TTL)
		}
	case "clear":
		fmt.Fprintf(&b, " by %s", in.Owner)
		if in.Key != "" {
			fmt.Fprintf(&b, " proof %s v%d", in.Key, in.EV)
		}
	}
	fmt.Fprintf(&b, " [t %d..%d] → ", in.Lo%1000, in.Hi%1000)
	switch {
	case o.Unknown:
		b.WriteString("unknown (" + o.Detail + ")")
	case o.Code != "":
		b.WriteString(o.Code)
	default:
		if o.Status != "" {
			b.WriteString(o.Status + " ")
		}
		b.WriteString(linDescribeLease(o.Lease))
		if in.Kind == "claim" || in.Kind == "clear" {
			fmt.Fprintf(&b, " claim=%q exp=%d", o.ClaimedBy, o.ClaimExpires%1000)
		}
		if o.Orig != nil {
			fmt.Fprintf(&b, " (orig %s at %d)", o.Orig.Status, o.Orig.Decided%1000)
		}
		if len(o.Revision) >= 8 {
			b.WriteString(" @" + o.Revision[:8])
		}
	}
	return b.String()
}

func linDescribeState(state any) string {
	s := state.(*linState)
	var l *linView
	if s.has {
		l = &linView{linLease: s.lease}
	}
	keys := slices.Sorted(maps.Keys(s.seen))
	return fmt.Sprintf("lease %s; claim %q exp %d; floor %d; %d receipts; keys %v",
		linDescribeLease(l), s.claimedBy, s.claimExp%1000, s.floor%1000, len(s.receipts), keys)
}

// TestLinearizeModel checks the model and the checker on hand-made
// histories of one todo (no processes): legal ones pass, and each kind of
// wrong answer is rejected.
func TestLinearizeModel(t *testing.T) {
	t.Parallel()
	const t0 = 1_000_000
	lease := func(owner, key string, v, e int64, active bool, exp, acq, ren, rel int64, eff bool) *linView {
		return &linView{linLease{Owner: owner, Key: key, Version: v, Epoch: e, Active: active, Expires: exp,
			Acquired: acq, Renewed: ren, Released: rel}, eff}
	}
	acq := func(owner, key string, ttl, lo, hi int64) *linInput {
		return &linInput{Todo: "todo_x", Kind: "acquire", Owner: owner, Key: key, TTL: ttl, Lo: lo, Hi: hi}
	}
	renew := func(owner, key string, ev, ttl, lo, hi int64) *linInput {
		return &linInput{Todo: "todo_x", Kind: "renew", Owner: owner, Key: key, EV: ev, TTL: ttl, Lo: lo, Hi: hi}
	}
	inspect := func(lo, hi int64) *linInput { return &linInput{Todo: "todo_x", Kind: "inspect", Lo: lo, Hi: hi} }
	ok := func(status string, l *linView, rev string) *linOutput {
		return &linOutput{Status: status, Lease: l, Revision: rev}
	}
	refused := func(code string) *linOutput { return &linOutput{Code: code} }
	unknown := &linOutput{Unknown: true}
	op := func(client int, call, ret int64, in *linInput, out *linOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	a1 := lease("a", "k1", 1, 1, true, t0+30, t0, 0, 0, true)
	replayed := func(l *linView, orig linLease, rev string) *linOutput {
		return &linOutput{Status: "replayed", Lease: l, Revision: rev, Orig: &linReceiptOut{Status: "applied", Decided: orig.Acquired, HasLease: true, Lease: orig}}
	}

	cases := []struct {
		name string
		ok   bool
		hist []porcupine.Operation
	}{
		{"acquire then conflict then renew", true, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 20, 30, acq("b", "k2", 30, t0, t0), refused("todo_lease_conflict")),
			op(0, 40, 50, renew("a", "k1", 1, 30, t0+1, t0+1), ok("applied", lease("a", "k1", 2, 1, true, t0+31, t0, t0+1, 0, true), "r2")),
		}},
		{"two acquires both applied", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 5, 15, acq("b", "k2", 30, t0, t0), ok("applied", lease("b", "k2", 1, 1, true, t0+30, t0, 0, 0, true), "r2")),
		}},
		{"the same request applied twice", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 5, 15, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
		}},
		{"the same request, one applied one replayed", true, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 5, 15, acq("a", "k1", 30, t0, t0), replayed(a1, a1.linLease, "r1")),
		}},
		{"a replay reporting another revision", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 20, 25, acq("a", "k1", 30, t0, t0), replayed(a1, a1.linLease, "r9")),
		}},
		{"renew that does not bump the version", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(0, 40, 50, renew("a", "k1", 1, 30, t0+1, t0+1), ok("applied", lease("a", "k1", 1, 1, true, t0+31, t0, t0+1, 0, true), "r2")),
		}},
		{"a stale read after a completed acquire", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 20, 30, inspect(t0, t0), ok("", nil, "")),
		}},
		{"a read concurrent with the acquire may miss it", true, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
			op(1, 5, 30, inspect(t0, t0), ok("", nil, "")),
		}},
		{"expiry: a takeover only once the lease expired", true, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 2, t0, t0), ok("applied", lease("a", "k1", 1, 1, true, t0+2, t0, 0, 0, true), "r1")),
			op(1, 20, 30, acq("b", "k2", 2, t0+1, t0+2), ok("applied", lease("b", "k2", 2, 2, true, t0+4, t0+2, 0, 0, true), "r2")),
		}},
		{"expiry: a takeover before the lease expired", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 2, t0, t0), ok("applied", lease("a", "k1", 1, 1, true, t0+2, t0, 0, 0, true), "r1")),
			op(1, 20, 30, acq("b", "k2", 2, t0+1, t0+1), ok("applied", lease("b", "k2", 2, 2, true, t0+3, t0+1, 0, 0, true), "r2")),
		}},
		{"a killed acquire that took effect, replayed by its retry", true, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), unknown),
			op(1, 12, 20, acq("b", "k2", 30, t0, t0), refused("todo_lease_conflict")),
			op(0, 15, 25, acq("a", "k1", 30, t0, t0), replayed(a1, a1.linLease, "r1")),
		}},
		{"a killed acquire that did not take effect", true, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), unknown),
			op(1, 12, 20, inspect(t0, t0), ok("", nil, "")),
			op(0, 15, 25, acq("a", "k1", 30, t0, t0), ok("applied", a1, "r1")),
		}},
		{"a refusal no rule explains", false, []porcupine.Operation{
			op(0, 0, 10, acq("a", "k1", 30, t0, t0), refused("todo_lease_conflict")),
		}},
	}
	model := linModel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(model, c.hist); got != c.ok {
				t.Fatalf("linearizable = %v, want %v", got, c.ok)
			}
		})
	}
}

// linSortedScopes is the model's form of a scope list.
func linSortedScopes(s []string) string {
	c := slices.Clone(s)
	sort.Strings(c)
	return strings.Join(slices.Compact(c), ",")
}
