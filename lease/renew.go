package lease

// task-lease renew.
//
// Decisions: check order is request fields (the expected version is
// required: version_required) → goal exists → receipt replay → goal active →
// todo exists → lease active and unexpired (lease_not_active, also when the
// todo has no lease) → exact proof (version_mismatch, lease_proof_mismatch) →
// todo not archived and open → owner registered, not excluded, bound agent,
// claim (an owner whose claim moved away holds no effective lease, so it
// cannot renew: claim_conflict) → generation exhaustion. Renewal does not
// re-check write scopes (it starts no new execution). The board shows an
// active lease's TTL (ExecutionTTL) but not its expiry, so a renewal changes
// the board (BoardChanged) only when it asks for another TTL than the
// execution has.

import "time"

// RenewRequest extends the current execution's expiry.
type RenewRequest struct {
	Goal            string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo            string `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Owner           string `json:"owner,omitempty" desc:"lease owner, the acting agent (default: the goal's only agent)"`
	IdempotencyKey  string `json:"idempotency_key,omitempty" desc:"the current execution key" required:"true"`
	ExpectedVersion *int64 `json:"expected_version,omitempty" desc:"the current lease version" required:"true"`
	TTLSeconds      int64  `json:"ttl_seconds,omitempty" desc:"new time to live from now, 1..86400 seconds" required:"true"`
}

// Renew decides a task-lease renew.
func Renew(v *View, req RenewRequest, now time.Time) (*Outcome, error) {
	if err := checkProofRequest(req.Goal, req.Todo, req.Owner, req.IdempotencyKey); err != nil {
		return nil, err
	}
	expected, err := requireExpectedVersion("renew", req.ExpectedVersion)
	if err != nil {
		return nil, err
	}
	if err := CheckTTL(req.TTLSeconds); err != nil {
		return nil, err
	}
	g, err := RequireGoal(v, req.Goal)
	if err != nil {
		return nil, err
	}
	id := MaintenanceReceiptID(OpLeaseRenew, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, expected)
	digest := maintenanceDigest(id, req.TTLSeconds, "", "", false)
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
	t, l, err := currentExecution(v, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, expected, now)
	if err != nil {
		return nil, err
	}
	if err := executionEligibility(t, req.Owner, true, now); err != nil {
		return nil, err
	}
	if l.Version >= MaxGeneration {
		return nil, generationExhausted(req.Todo)
	}

	ttlChanged := ExecutionTTL(l) != time.Duration(req.TTLSeconds)*time.Second
	at := now
	l.Version++
	l.RenewedAt = &at
	l.ExpiresAt = now.Add(time.Duration(req.TTLSeconds) * time.Second)
	v.PutLease(req.Goal, l)
	exp := expected
	r := writeReceipt(v, &Receipt{ID: v.hashForm()(id), Operation: OpLeaseRenew, GoalID: req.Goal, TodoID: req.Todo,
		Owner: req.Owner, IdempotencyKey: req.IdempotencyKey, ExpectedVersion: &exp,
		RequestDigest: v.hashForm()(digest), Status: StatusApplied}, l, now)
	return appliedOutcome(v, r, l, ttlChanged, now)
}

// ExecutionTTL is the time to live of l's current execution as last granted:
// expires_at minus the later of acquired_at and renewed_at. A renewal for as
// many seconds keeps it; the board shows it beside the execution's start.
func ExecutionTTL(l *Lease) time.Duration {
	start := l.AcquiredAt
	if l.RenewedAt != nil && l.RenewedAt.After(start) {
		start = *l.RenewedAt
	}
	return l.ExpiresAt.Sub(start)
}

// checkProofRequest validates the identifiers every proof-bearing request
// carries, each naming its own field.
func checkProofRequest(goal, todo, owner, key string) error {
	if err := CheckGoalID(goal); err != nil {
		return err
	}
	if err := CheckTodoID(todo); err != nil {
		return err
	}
	if err := CheckAgentID("owner", owner); err != nil {
		return err
	}
	return CheckIdempotencyKey("idempotency key", key)
}

// currentExecution is the admission every operation that continues an
// execution shares (renew, transfer): the todo exists, its lease is active
// and unexpired, the proof is exact, the todo is open, and the owner is still
// registered under the registration the execution was granted under (a new
// registration never revives an old execution, see LeaseEffective).
func currentExecution(v *View, goal, todo, owner, key string, expected int64, now time.Time) (*Todo, *Lease, error) {
	t, err := RequireTodo(v, goal, todo)
	if err != nil {
		return nil, nil, err
	}
	l, err := v.Lease(goal, todo)
	if err != nil {
		return nil, nil, err
	}
	if err := requireLiveLease(l, todo, now); err != nil {
		return nil, nil, err
	}
	if err := CheckProof(l, owner, key, expected, v.Revision); err != nil {
		return nil, nil, err
	}
	if err := requireWorkableTodo(t); err != nil {
		return nil, nil, err
	}
	a, err := RequireAgent(v, goal, "owner", owner)
	if err != nil {
		return nil, nil, err
	}
	if a.Registration != l.OwnerRegistration {
		return nil, nil, Errorf(CodeLeaseNotActive, "%s registered again after this execution was granted: acquire a new execution", owner)
	}
	return t, l, nil
}
