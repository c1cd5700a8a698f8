package lease

// task-lease transfer, optionally moving the todo's claim with the lease
// (--transfer-claim).
//
// Decisions (where contract section 5 is silent):
//   - Check order: request fields (expected version required; then new
//     owner, new key, TTL) → goal exists → receipt replay → goal active →
//     --transfer-claim needs a hard_lease goal (invalid_request) → todo exists
//     → lease active and unexpired (lease_not_active) → exact proof → todo not
//     archived and open → sender registered (agent_not_registered, field
//     "owner") → receiver registered (field "new owner"), not excluded, bound
//     agent → claim: with --transfer-claim the sender must hold the effective
//     claim (not_claim_owner), without it the receiver must be allowed by the
//     effective claim (claim_conflict) → new key differs from the current one
//     and from every earlier holder's key (idempotency_key_reuse) → write
//     scopes (below) → generation exhaustion.
//   - A transfer starts a new execution, so the kept scopes are checked
//     against the other todos' effective leases like an acquire
//     (write_scope_conflict). This can only trigger when the lease was
//     ineffective for a while (e.g. its sender was excluded) and another
//     todo took an overlapping scope meanwhile; it keeps "no two effective
//     leases overlap" true.
//   - The sender only needs to be registered (contract table): an excluded
//     sender may still hand its unexpired lease to an eligible receiver.
//   - --transfer-claim: the sender holds the claim as claimed_by or as its
//     scope agent. The claim becomes claimed_by = receiver with no scope
//     agent, claimed_at = now and, when the claim had a TTL, a fresh expiry
//     of the same length; updated_by is the sender. When the receiver already
//     is claimed_by with no scope agent (e.g. a same-agent new execution),
//     the todo is not rewritten and todo_changed is false. The bound agent is
//     never rewritten. Without the flag the todo is never written.
//   - The audit trail says the claim moved (Loopx-Claim-Moved: true, "(claim
//     moved)" in the subject) exactly when todo_changed is true: a same-agent
//     new execution does not fabricate a claim edit (seed 000).
//     loopx.task-lease.transfer-claim/v1 said so whenever --transfer-claim
//     was given; its recorded commits are re-decided by that rule.
//   - Transfer to the same owner with a new key is allowed (a new execution
//     of the same agent).

import "time"

// TransferRequest hands the current execution over to a new owner and key.
type TransferRequest struct {
	Goal              string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo              string `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Owner             string `json:"owner,omitempty" desc:"current lease owner, the acting agent (default: the goal's only agent)"`
	IdempotencyKey    string `json:"idempotency_key,omitempty" desc:"the current execution key" required:"true"`
	ExpectedVersion   *int64 `json:"expected_version,omitempty" desc:"the current lease version" required:"true"`
	NewOwner          string `json:"new_owner,omitempty" desc:"the receiving agent" required:"true"`
	NewIdempotencyKey string `json:"new_idempotency_key,omitempty" desc:"the receiver's new execution key" required:"true"`
	TTLSeconds        int64  `json:"ttl_seconds,omitempty" desc:"the receiver's time to live, 1..86400 seconds" required:"true"`
	// TransferClaim moves the claim in the same commit. It is not a field
	// of the wire: it selects its own schema (task-lease.transfer-claim),
	// so a runtime that does not know it refuses the request whole.
	TransferClaim bool `json:"-"`
	rules              // 1: the rules of loopx.task-lease.transfer-claim/v1 (re-verifying its commits)
}

// Transfer decides a task-lease transfer.
func Transfer(v *View, req TransferRequest, now time.Time) (*Outcome, error) {
	if err := checkProofRequest(req.Goal, req.Todo, req.Owner, req.IdempotencyKey); err != nil {
		return nil, err
	}
	expected, err := requireExpectedVersion("transfer", req.ExpectedVersion)
	if err != nil {
		return nil, err
	}
	if err := CheckAgentID("new owner", req.NewOwner); err != nil {
		return nil, err
	}
	if err := CheckIdempotencyKey("new idempotency key", req.NewIdempotencyKey); err != nil {
		return nil, err
	}
	if err := CheckTTL(req.TTLSeconds); err != nil {
		return nil, err
	}
	g, err := RequireGoal(v, req.Goal)
	if err != nil {
		return nil, err
	}
	id := MaintenanceReceiptID(OpLeaseTransfer, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, expected)
	digest := maintenanceDigest(id, req.TTLSeconds, req.NewOwner, req.NewIdempotencyKey, req.TransferClaim)
	rec, err := findOperationReceipt(v, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, id, digest, expected)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		return replayOutcome(v, rec, now)
	}

	if g.Status != GoalActive {
		return nil, Errorf(CodeGoalArchived, "goal %s is archived", g.ID)
	}
	if req.TransferClaim && g.HandoffMode != HandoffHardLease {
		return nil, Errorf(CodeInvalidRequest, "--transfer-claim needs a hard_lease goal; goal %s is %s: transfer the lease alone and hand the claim over with todo update", g.ID, g.HandoffMode).
			With("handoff_mode", g.HandoffMode)
	}
	t, l, err := currentExecution(v, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, expected, now)
	if err != nil {
		return nil, err
	}
	receiver, err := RequireAgent(v, req.Goal, "new owner", req.NewOwner)
	if err != nil {
		return nil, err
	}
	if err := executionEligibility(t, req.NewOwner, !req.TransferClaim, now); err != nil {
		return nil, err
	}
	if req.TransferClaim && !HoldsClaim(t, req.Owner, now) {
		claimant := EffectiveClaimant(t, now)
		msg := "todo " + t.ID + " is not claimed"
		if claimant != "" {
			msg = "todo " + t.ID + " is claimed by " + claimant
		}
		return nil, Errorf(CodeNotClaimOwner, "%s: --transfer-claim needs the sender %s to hold the claim", msg, req.Owner).
			With("claimed_by", claimant)
	}
	if keySeen(l, req.NewIdempotencyKey) {
		return nil, keyReuse("new idempotency key", req.NewIdempotencyKey)
	}
	conflicts, err := ScopeConflicts(v, req.Goal, req.Todo, normalizeScopeSet(l.WriteScopes), now)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		return nil, scopeConflictError(conflicts)
	}
	if l.Version >= MaxGeneration || l.Epoch >= MaxGeneration {
		return nil, generationExhausted(req.Todo)
	}

	// The claim first, so the lease view below sees it.
	todoChanged := false
	if req.TransferClaim && (t.ClaimedBy != req.NewOwner || t.ClaimScopeAgentID != "") {
		at := now
		t.ClaimedBy, t.ClaimScopeAgentID, t.ClaimedAt = req.NewOwner, "", &at
		t.ClaimExpiresAt = nil
		if t.ClaimTTLMinutes > 0 {
			exp := now.Add(time.Duration(t.ClaimTTLMinutes) * time.Minute)
			t.ClaimExpiresAt = &exp
		}
		t.UpdatedBy, t.UpdatedAt = req.Owner, now
		v.PutTodo(req.Goal, t)
		todoChanged = true
	}

	scopes := l.WriteScopes
	endCurrentHolder(l, now, EndTransferred)
	nl := startExecution(l, req.Todo, req.NewOwner, req.NewIdempotencyKey, req.TTLSeconds, now)
	nl.WriteScopes = scopes
	nl.OwnerRegistration = receiver.Registration
	v.PutLease(req.Goal, nl)
	exp := expected
	r := &Receipt{ID: v.hashForm()(id), Operation: OpLeaseTransfer, GoalID: req.Goal, TodoID: req.Todo,
		Owner: req.Owner, IdempotencyKey: req.IdempotencyKey, ExpectedVersion: &exp,
		RequestDigest: v.hashForm()(digest), Status: StatusApplied}
	if req.TransferClaim {
		r.TransferClaim, r.ClaimedBy, r.TodoChanged = true, t.ClaimedBy, todoChanged
	}
	writeReceipt(v, r, nl, now)
	o, err := appliedOutcome(v, r, nl, true, now)
	if err != nil {
		return nil, err
	}
	// The audit trail names the receiver and whether the claim moved: only
	// when the todo was rewritten (transfer-claim/v1 said it moved whenever
	// it was asked to, also when the receiver held it already).
	o.NewOwner, o.ClaimMoved = req.NewOwner, todoChanged
	if req.version == 1 {
		o.ClaimMoved = req.TransferClaim
	}
	if req.TransferClaim {
		data := o.Data.(LeaseResult)
		tc, by, changed := true, t.ClaimedBy, todoChanged
		data.TransferClaim, data.ClaimedBy, data.TodoChanged = &tc, &by, &changed
		o.Data = data
	}
	return o, nil
}
