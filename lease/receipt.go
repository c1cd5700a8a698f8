package lease

// Receipts of the task-lease operations: identities, request digests, replay
// lookups and the result shape the operations share.
//
// Decisions written down here (contract section 5 leaves them open):
//   - A receipt id is the hex SHA-256 of a length-prefixed encoding of the
//     operation's identity, tagged with a format label. The acquire identity
//     is (goal, todo, owner, key) and carries the operation name, so an
//     acquire receipt never collides with a renew/transfer/release receipt
//     of the same owner and key. Maintenance identities add the expected
//     version.
//   - The request digest is the hex SHA-256 of the receipt id and the bound
//     request fields: acquire adds the expected version ("none" when
//     omitted, which differs from 0), TTL and the sorted, de-duplicated scope
//     set; renew/transfer/release add TTL, receiver, receiver key and the
//     transfer-claim flag (empty/zero when the operation has none).
//   - From store format 4 on, a receipt keeps its id and its request
//     digest as their first 24 hex digits (96 bits, as retired keys are
//     hashed): a lease record carries a few receipts and every state commit
//     of a lease operation names one (Loopx-Receipt), and 80 random hex
//     digits less per operation is most of what its history can lose. The
//     full hashes are always computed; a stored id or digest matches when
//     it is the full one or, 24 digits long, its prefix (sameHash), so the
//     receipts written before the upgrade keep answering their retries.
//     Collisions stay out of reach: ids are compared within one todo's
//     receipts, digests within one identity.
//   - The lease stored in a receipt is a snapshot without the holder history
//     and the retired keys (they live in the lease record and would make
//     receipts grow).
//   - Replays are looked up before any admission check, so they survive
//     later changes (historical replay). They only need the goal to exist
//     (an archived goal still answers a replay).

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"
)

// Holder end reasons recorded by the lease operations.
const (
	EndReleased    = "released"
	EndTransferred = "transferred"
	EndExpired     = "expired"
	// EndTakenOver ends an unexpired execution that had stopped being
	// effective (owner unregistered or excluded, claim moved) when a new
	// execution takes the lease over.
	EndTakenOver = "taken_over"
)

// LeaseResult is the Data of every task-lease outcome.
type LeaseResult struct {
	GoalID string `json:"goal_id"`
	TodoID string `json:"todo_id"`
	// Lease is the todo's CURRENT lease (after the operation; for a replay,
	// as it is now). nil (JSON null) when the todo never had one.
	Lease *LeaseView `json:"lease"`
	// OriginalReceipt is set on replays: the stored, historical decision.
	OriginalReceipt *Receipt `json:"original_receipt,omitempty"`
	// Transfer with --transfer-claim only.
	TransferClaim *bool   `json:"transfer_claim,omitempty"`
	ClaimedBy     *string `json:"claimed_by,omitempty"`
	TodoChanged   *bool   `json:"todo_changed,omitempty"`
	// Conflicts is reserved for results that report scope conflicts; refusals
	// carry them in the error details instead.
	Conflicts []ScopeConflict `json:"conflicts,omitempty"`
}

// hashFields hashes a label and fields with an unambiguous encoding: each
// field is written as its byte length, ':', the bytes and ';'.
func hashFields(label string, fields ...string) string {
	h := sha256.New()
	for _, f := range append([]string{label}, fields...) {
		h.Write([]byte(strconv.Itoa(len(f)) + ":" + f + ";"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func optVersion(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

// ShortHashDigits is the length of a receipt id or request digest as a
// store of format 4 keeps it.
const ShortHashDigits = 24

// SameHash reports whether stored, a receipt id or request digest as a
// record or a commit keeps it, is full (a 64-digit hash) or its short form.
func SameHash(stored, full string) bool { return sameHash(stored, full) }

func sameHash(stored, full string) bool {
	return stored == full || len(stored) == ShortHashDigits && len(full) == 64 && full[:ShortHashDigits] == stored
}

// hashForm is how the view's store keeps receipt ids and digests: whole,
// or from format 4 on their first ShortHashDigits digits.
func (v *View) hashForm() func(string) string {
	if m, err := v.Meta(); err == nil && m != nil && m.FormatVersion >= 4 {
		return func(h string) string { return h[:min(len(h), ShortHashDigits)] }
	}
	return func(h string) string { return h }
}

// AcquireReceiptID is the receipt id of an acquire identity (goal, todo,
// owner, key).
func AcquireReceiptID(goal, todo, owner, key string) string {
	return hashFields("loopx.task-lease.identity.v1", OpLeaseAcquire, goal, todo, owner, key)
}

// MaintenanceReceiptID is the receipt id of a renew/transfer/release
// identity (operation, goal, todo, owner, key, expected version).
func MaintenanceReceiptID(op, goal, todo, owner, key string, expectedVersion int64) string {
	return hashFields("loopx.task-lease.identity.v1", op, goal, todo, owner, key, strconv.FormatInt(expectedVersion, 10))
}

// acquireDigest binds the acquire request: expected version, TTL, scope set.
func acquireDigest(id string, expected *int64, ttl int64, scopes []string) string {
	fields := []string{id, optVersion(expected), strconv.FormatInt(ttl, 10), strconv.Itoa(len(scopes))}
	return hashFields("loopx.task-lease.digest.v1", append(fields, scopes...)...)
}

// maintenanceDigest binds a renew/transfer/release request.
func maintenanceDigest(id string, ttl int64, newOwner, newKey string, transferClaim bool) string {
	return hashFields("loopx.task-lease.digest.v1", id, strconv.FormatInt(ttl, 10), newOwner, newKey, strconv.FormatBool(transferClaim))
}

// normalizeScopeSet returns the sorted, de-duplicated scopes (never nil).
func normalizeScopeSet(scopes []string) []string {
	out := append([]string{}, scopes...)
	slices.Sort(out)
	return slices.Compact(out)
}

// cloneLeaseRecord returns a deep copy of l (nil for nil).
func cloneLeaseRecord(l *Lease) *Lease {
	if l == nil {
		return nil
	}
	c := *l
	c.WriteScopes = append([]string{}, l.WriteScopes...)
	if l.RenewedAt != nil {
		t := *l.RenewedAt
		c.RenewedAt = &t
	}
	if l.ReleasedAt != nil {
		t := *l.ReleasedAt
		c.ReleasedAt = &t
	}
	c.Holders = nil
	for _, h := range l.Holders {
		if h.EndedAt != nil {
			t := *h.EndedAt
			h.EndedAt = &t
		}
		c.Holders = append(c.Holders, h)
	}
	c.Receipts = cloneReceipts(l.Receipts)
	return &c
}

// cloneReceipts returns a deep copy of rs.
func cloneReceipts(rs []Receipt) []Receipt {
	if rs == nil {
		return nil
	}
	out := make([]Receipt, len(rs))
	for i, r := range rs {
		if r.ExpectedVersion != nil {
			v := *r.ExpectedVersion
			r.ExpectedVersion = &v
		}
		if r.Lease != nil {
			r.Lease = r.Lease.Clone()
		}
		out[i] = r
	}
	return out
}

// receiptSnapshot is the lease as stored in a receipt: no holder history,
// retired sets or receipts.
func receiptSnapshot(l *Lease) *Lease {
	c := cloneLeaseRecord(l)
	if c != nil {
		c.Holders, c.RetiredKeys, c.Receipts, c.RetiredAcquires = nil, "", nil, ""
	}
	return c
}

// writeReceipt stores the receipt of a decision made on v at now: in the
// lease record l (after the decision; written here), or, when the todo has
// no lease, as a receipt file (retention.go).
func writeReceipt(v *View, r *Receipt, l *Lease, now time.Time) *Receipt {
	r.DecidedAt = now
	r.DecidedOn = v.Revision
	r.Lease = receiptSnapshot(l)
	if l == nil || r.Status == StatusNoChange {
		// No lease record to keep it, or one it must not touch.
		v.PutReceipt(r.GoalID, r)
		return r
	}
	keepReceipt(l, r)
	v.PutLease(r.GoalID, l)
	return r
}

// keySeen reports whether key was ever used by an execution of l: the
// current one or a retired one (the key of an earlier holder, or one of
// those that left the record: holders.go). A new
// execution (acquire, takeover, transfer receiver) never reuses such a key.
func keySeen(l *Lease, key string) bool {
	if l == nil {
		return false
	}
	if l.IdempotencyKey == key {
		return true
	}
	for _, h := range l.Holders {
		if h.IdempotencyKey == key {
			return true
		}
	}
	return keyRetired(l.RetiredKeys, key)
}

// keyReuse is the idempotency_key_reuse refusal of a retired key.
func keyReuse(field, key string) *Error {
	return Errorf(CodeIdempotencyKeyReuse, "%s %q was already used by an execution of this todo: a new execution needs a new key", field, key).
		With("idempotency_key", key)
}

// replayOutcome is the answer to a replay: the stored receipt and the
// current lease; nothing is written.
func replayOutcome(v *View, r *Receipt, now time.Time) (*Outcome, error) {
	cur, err := v.Lease(r.GoalID, r.TodoID)
	if err != nil {
		return nil, err
	}
	lv, err := leaseViewPtr(v, r.GoalID, cur, now)
	if err != nil {
		return nil, err
	}
	data := LeaseResult{GoalID: r.GoalID, TodoID: r.TodoID, Lease: lv, OriginalReceipt: r}
	if r.Operation == OpLeaseTransfer && r.TransferClaim {
		tc, by, changed := r.TransferClaim, r.ClaimedBy, r.TodoChanged
		data.TransferClaim, data.ClaimedBy, data.TodoChanged = &tc, &by, &changed
	}
	o := &Outcome{Operation: r.Operation, Status: StatusReplayed, Goal: r.GoalID, Todo: r.TodoID,
		Actor: r.Owner, ReceiptID: r.ID, ReplayOf: r.DecidedOn, Data: data}
	if cur != nil {
		o.Version, o.Epoch = cur.Version, cur.Epoch
	}
	return o, nil
}

// appliedOutcome is the answer to a decision that wrote l and receipt r.
func appliedOutcome(v *View, r *Receipt, l *Lease, boardChanged bool, now time.Time) (*Outcome, error) {
	lv, err := leaseViewPtr(v, r.GoalID, l, now)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: r.Operation, Status: r.Status, Goal: r.GoalID, Todo: r.TodoID,
		Actor: r.Owner, ReceiptID: r.ID, Write: true, BoardChanged: boardChanged,
		Data: LeaseResult{GoalID: r.GoalID, TodoID: r.TodoID, Lease: lv}}
	if l != nil {
		o.Version, o.Epoch = l.Version, l.Epoch
	}
	return o, nil
}

// checkExpectedVersion refuses an expected version outside 0..2^53-1.
func checkExpectedVersion(v int64) error {
	if v < 0 || v > MaxGeneration {
		return Errorf(CodeInvalidRequest, "expected version %d is out of range 0..%d", v, MaxGeneration)
	}
	return nil
}

// requireExpectedVersion returns version_required when it is missing.
func requireExpectedVersion(op string, v *int64) (int64, error) {
	if v == nil {
		return 0, Errorf(CodeVersionRequired, "%s needs --expected-version (the current lease version from task-lease inspect)", op)
	}
	return *v, checkExpectedVersion(*v)
}

// executionEligibility checks agent against the todo's exclusion list,
// bound agent and (when checkClaim) its effective claim.
func executionEligibility(t *Todo, agent string, checkClaim bool, now time.Time) error {
	if Excluded(t, agent) {
		return Errorf(CodeAgentExcluded, "agent %s is excluded from todo %s", agent, t.ID).With("agent_id", agent)
	}
	if t.BoundAgent != "" && t.BoundAgent != agent {
		return Errorf(CodeBoundAgentMismatch, "todo %s is bound to agent %s", t.ID, t.BoundAgent).With("bound_agent", t.BoundAgent)
	}
	if checkClaim && ClaimEffective(t, now) && !HoldsClaim(t, agent, now) {
		return Errorf(CodeClaimConflict, "todo %s is claimed by %s", t.ID, t.ClaimedBy).With("claimed_by", t.ClaimedBy)
	}
	return nil
}

// requireWorkableTodo refuses an archived or closed todo.
func requireWorkableTodo(t *Todo) error {
	if t.Archived {
		return Errorf(CodeTodoArchived, "todo %s is archived", t.ID)
	}
	if t.Status != TodoOpen {
		return Errorf(CodeTodoNotOpen, "todo %s is %s, not open", t.ID, t.Status).With("status", t.Status)
	}
	return nil
}

// requireLiveLease returns lease_not_active unless l is active and unexpired.
func requireLiveLease(l *Lease, todo string, now time.Time) error {
	switch {
	case l == nil:
		return Errorf(CodeLeaseNotActive, "todo %s has no task lease", todo)
	case l.Status != LeaseActive:
		return Errorf(CodeLeaseNotActive, "the task lease of todo %s is %s", todo, l.Status).With("status", l.Status)
	case !now.Before(l.ExpiresAt):
		return Errorf(CodeLeaseNotActive, "the task lease of todo %s expired at %s", todo, l.ExpiresAt.UTC().Format(time.RFC3339)).
			With("expires_at", l.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// generationExhausted refuses a bump past 2^53-1.
func generationExhausted(todo string) *Error {
	return Errorf(CodeLeaseGenerationExhausted, "the task lease of todo %s reached the largest version/epoch (2^53-1)", todo)
}
