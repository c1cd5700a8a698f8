package lease

// todo claim (contract sections 4 and 6), and the result shape every todo
// mutation shares.
//
// Decisions written down here:
//   - --claimed-by defaults to the actor and must equal it (invalid_request
//     otherwise), unless the actor delegates with --scope-agent-id. Only a
//     registered orchestrator may delegate (authority_required otherwise).
//     A delegating claim records claim_scope_agent_id = the scope agent and
//     claimed_by = --claimed-by, which must be the orchestrator itself or
//     the scope agent (invalid_request otherwise); both claimed_by and the
//     scope agent then hold the claim ("either may act").
//   - The actor, the claimant and the scope agent must be registered and not
//     excluded; on a bound todo the bound agent must be the claimant or the
//     scope agent (bound_agent_mismatch).
//   - An effective claim can only be re-claimed by one of its holders, for
//     the same claimed_by; anything else is claim_conflict (detail
//     claimed_by). The scope agent of a delegated claim naming itself is
//     claim_conflict too: a delegated claim stays the orchestrator's, and
//     moving it is a reassignment (todo update --claimed-by, update.go).
//   - A re-claim by the holder without --claim-ttl-minutes keeps the claim's
//     TTL and expiry (contract section 6); one with a TTL sets a fresh expiry
//     (now + TTL: a heartbeat), keeping claimed_at; a new scope agent
//     replaces the old. A re-claim that leaves the claim as it was (the same
//     TTL in the same second included) is no_change: nothing is written.
//     (loopx.todo.claim/v1 dropped the TTL of a re-claim without one and
//     wrote every re-claim with a TTL; its recorded commits are re-decided
//     by those rules, see operation.go.)
//   - An expired claim is not effective: any eligible agent claims the todo
//     with an ordinary claim commit. The result reports
//     previous_claim_expired, previous_claimed_by and
//     previous_claim_expires_at; the commit's todo diff keeps them in history.
//   - A claim never makes another agent's effective lease ineffective: an
//     effective lease whose owner is neither the new claimant nor the new
//     scope agent is todo_lease_conflict (detail lease_owner).
//   - hard_lease goals: a claim change (claimant or scope agent changes,
//     including clearing) requires the actor to hold the todo's active
//     lease WHEN the todo has one (status active, unexpired); an active
//     lease owned by another agent is todo_lease_conflict. A todo without an
//     active lease can be claimed as in soft_claim (the claim then allows
//     the claimant's acquire); claim with --task-lease-idempotency-key does
//     both in one commit.
//   - --claim-ttl-minutes: 0 = no expiry, 1..525600 (one year);
//     anything else is invalid_ttl.
//   - Claim + acquire (--task-lease-idempotency-key K --ttl-seconds N): the
//     claimed todo is written, then Acquire runs on the same View with owner
//     = the actor, no expected version and the todo's required write scopes.
//     If Acquire refuses, nothing is written. The lease owner must hold the
//     new claim (so a delegating claim whose claimant is the scope agent
//     cannot acquire for the orchestrator: invalid_request). Status: applied
//     when the claim or the lease changed; replayed when the claim was
//     unchanged and Acquire replayed; else no_change.

import (
	"maps"
	"time"
)

// MaxClaimTTLMinutes bounds --claim-ttl-minutes (one year).
const MaxClaimTTLMinutes = 525600

// TodoResult is the Data of the todo mutations (claim, update, complete,
// supersede, ready --claim).
type TodoResult struct {
	GoalID string `json:"goal_id"`
	TodoID string `json:"todo_id,omitempty"`
	// TodoStatus repeats todo.status ("status" belongs to the envelope).
	TodoStatus string `json:"todo_status,omitempty"`
	// ClaimedBy is the effective claim after the operation (omitted: none).
	ClaimedBy string    `json:"claimed_by,omitempty"`
	Todo      *TodoView `json:"todo"`
	// Lease is the todo's lease when the operation acquired, verified or
	// released one.
	Lease *LeaseView `json:"lease,omitempty"`
	// Claim takeovers and claim clears of an expired claim.
	PreviousClaimExpired   bool       `json:"previous_claim_expired,omitempty"`
	PreviousClaimedBy      string     `json:"previous_claimed_by,omitempty"`
	PreviousClaimExpiresAt *time.Time `json:"previous_claim_expires_at,omitempty"`
	// Changes lists what an update changed (text, priority, excluded_agents,
	// claim, note).
	Changes []string `json:"changes,omitempty"`
	// LeaseReleased is set when completion/supersede ended the lease.
	LeaseReleased bool `json:"lease_released,omitempty"`
	// Claimed is set by ready --claim: whether a todo was claimed (false
	// when no todo was ready).
	Claimed *bool `json:"claimed,omitempty"`
}

// ClaimRequest claims a todo.
type ClaimRequest struct {
	Goal  string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo  string `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Actor string `json:"agent_id,omitempty" desc:"acting agent (default: claimed_by, or the goal's only agent)"`
	// ClaimedBy defaults to Actor.
	ClaimedBy string `json:"claimed_by,omitempty" desc:"claim owner (default: the acting agent)"`
	// ClaimTTLMinutes 0 means no expiry.
	ClaimTTLMinutes int64 `json:"claim_ttl_minutes,omitempty" desc:"the claim expires after this many minutes (0: never)"`
	// ScopeAgent is --scope-agent-id (orchestrator delegation).
	ScopeAgent string `json:"scope_agent_id,omitempty" desc:"orchestrators: the agent the claim is delegated to"`
	// LeaseKey and LeaseTTLSeconds (--task-lease-idempotency-key K
	// --ttl-seconds N) also acquire the lease in the same commit.
	LeaseKey        string `json:"task_lease_idempotency_key,omitempty" desc:"also acquire the task lease with this execution key"`
	LeaseTTLSeconds int64  `json:"ttl_seconds,omitempty" desc:"with task_lease_idempotency_key: the lease TTL in seconds"`
	rules                  // 1: the rules of loopx.todo.claim/v1 (re-verifying its commits)
}

// atomically runs decide on v and drops its writes when it fails, so a
// refused request leaves the View as it was.
func atomically(v *View, decide func() (*Outcome, error)) (*Outcome, error) {
	saved := maps.Clone(v.writes)
	o, err := decide()
	if err != nil {
		v.writes = saved
		return nil, err
	}
	return o, nil
}

func timePtr(t time.Time) *time.Time { return &t }

// Claim decides `todo claim`.
func Claim(v *View, req ClaimRequest, now time.Time) (*Outcome, error) {
	return atomically(v, func() (*Outcome, error) { return claim(v, req, now) })
}

func checkClaimRequest(req *ClaimRequest) error {
	if err := CheckGoalID(req.Goal); err != nil {
		return err
	}
	if err := CheckTodoID(req.Todo); err != nil {
		return err
	}
	if err := CheckAgentID("agent id", req.Actor); err != nil {
		return err
	}
	if req.ClaimedBy == "" {
		req.ClaimedBy = req.Actor
	}
	if err := CheckAgentID("claimed by", req.ClaimedBy); err != nil {
		return err
	}
	if req.ScopeAgent != "" {
		if err := CheckAgentID("scope agent id", req.ScopeAgent); err != nil {
			return err
		}
	}
	if req.ClaimTTLMinutes < 0 || req.ClaimTTLMinutes > MaxClaimTTLMinutes {
		return Errorf(CodeInvalidTTL, "claim ttl %d minutes is out of range 0..%d", req.ClaimTTLMinutes, MaxClaimTTLMinutes)
	}
	if req.LeaseKey != "" {
		if err := CheckIdempotencyKey("task lease idempotency key", req.LeaseKey); err != nil {
			return err
		}
		if err := CheckTTL(req.LeaseTTLSeconds); err != nil {
			return err
		}
	} else if req.LeaseTTLSeconds != 0 {
		return Errorf(CodeInvalidRequest, "--ttl-seconds needs --task-lease-idempotency-key (claim and acquire)")
	}
	return nil
}

func claim(v *View, req ClaimRequest, now time.Time) (*Outcome, error) {
	if err := checkClaimRequest(&req); err != nil {
		return nil, err
	}
	g, err := RequireActiveGoal(v, req.Goal)
	if err != nil {
		return nil, err
	}
	actor, err := RequireAgent(v, req.Goal, "agent id", req.Actor)
	if err != nil {
		return nil, err
	}
	claimedBy, scope := req.ClaimedBy, req.ScopeAgent
	if scope == "" {
		if claimedBy != req.Actor {
			return nil, Errorf(CodeInvalidRequest, "--claimed-by %s must equal the acting agent %s (an orchestrator delegates with --scope-agent-id)", claimedBy, req.Actor)
		}
	} else {
		if actor.Role != RoleOrchestrator {
			return nil, Errorf(CodeAuthorityRequired, "only an orchestrator can delegate a claim with --scope-agent-id; %s is a %s", req.Actor, actor.Role)
		}
		if claimedBy != req.Actor && claimedBy != scope {
			return nil, Errorf(CodeInvalidRequest, "a delegating claim's --claimed-by must be the orchestrator %s or the scope agent %s, not %s", req.Actor, scope, claimedBy)
		}
	}
	if req.LeaseKey != "" && claimedBy != req.Actor && scope != req.Actor {
		return nil, Errorf(CodeInvalidRequest, "claim and acquire: the lease owner %s must hold the new claim", req.Actor)
	}
	t, err := RequireTodo(v, req.Goal, req.Todo)
	if err != nil {
		return nil, err
	}
	if err := requireOpenTodo(t); err != nil {
		return nil, err
	}
	if Excluded(t, req.Actor) {
		return nil, excludedError(t, req.Actor)
	}
	if err := checkClaimant(v, req.Goal, t, claimedBy, scope); err != nil {
		return nil, err
	}
	cur := EffectiveClaimant(t, now)
	if cur != "" && (cur != claimedBy || !HoldsClaim(t, req.Actor, now)) {
		if cur != req.Actor && HoldsClaim(t, req.Actor, now) {
			return nil, Errorf(CodeClaimConflict, "todo %s is claimed by %s and delegated to %s: a scope agent acts on the todo but never takes its claim (moving it is a reassignment: todo update --claimed-by by an orchestrator with reassign authority)",
				t.ID, t.ClaimedBy, t.ClaimScopeAgentID).With("claimed_by", t.ClaimedBy)
		}
		return nil, Errorf(CodeClaimConflict, "todo %s is claimed by %s", t.ID, t.ClaimedBy).With("claimed_by", t.ClaimedBy)
	}
	changesHolders := cur != claimedBy || t.ClaimScopeAgentID != scope
	l, err := v.Lease(req.Goal, t.ID)
	if err != nil {
		return nil, err
	}
	if err := checkClaimLease(v, g, t, l, req.Actor, claimedBy, scope, changesHolders, now); err != nil {
		return nil, err
	}

	nt := *t
	res := &TodoResult{}
	changed := false
	if cur == "" {
		if t.ClaimedBy != "" {
			res.PreviousClaimExpired, res.PreviousClaimedBy = true, t.ClaimedBy
			res.PreviousClaimExpiresAt = t.ClaimExpiresAt
		}
		nt.ClaimedBy, nt.ClaimScopeAgentID = claimedBy, scope
		nt.ClaimedAt = timePtr(now)
		setClaimTTL(&nt, req.ClaimTTLMinutes, now)
		changed = true
	} else if req.version == 1 {
		// claim/v1: a re-claim without a TTL dropped the claim's TTL, and
		// one with a TTL was written even when it changed nothing.
		if t.ClaimScopeAgentID != scope || t.ClaimTTLMinutes != req.ClaimTTLMinutes || req.ClaimTTLMinutes > 0 {
			nt.ClaimScopeAgentID = scope
			if nt.ClaimedAt == nil {
				nt.ClaimedAt = timePtr(now)
			}
			setClaimTTL(&nt, req.ClaimTTLMinutes, now)
			changed = true
		}
	} else {
		// The holder re-claims: without a TTL the claim keeps its TTL and
		// expiry; an explicit TTL sets a fresh expiry (now + TTL). Only a
		// claim that differs afterwards is written.
		nt.ClaimScopeAgentID = scope
		if nt.ClaimedAt == nil {
			nt.ClaimedAt = timePtr(now)
		}
		if req.ClaimTTLMinutes > 0 {
			setClaimTTL(&nt, req.ClaimTTLMinutes, now)
		}
		changed = !sameClaim(&nt, t)
	}
	if changed {
		nt.UpdatedBy, nt.UpdatedAt = req.Actor, now
		v.PutTodo(req.Goal, &nt)
	}
	o := &Outcome{Operation: OpTodoClaim, Status: StatusNoChange, Goal: req.Goal, Todo: t.ID, Actor: req.Actor}
	if changed {
		o.Status, o.Write = StatusApplied, true
		if res.PreviousClaimExpired && res.PreviousClaimedBy != claimedBy {
			// Another agent's expired claim taken over: its own entry in
			// the audit trail, naming the previous holder.
			o.Audit, o.PreviousHolder = AuditClaimTakeover, res.PreviousClaimedBy
		}
	}
	if req.LeaseKey != "" {
		acq, err := Acquire(v, AcquireRequest{Goal: req.Goal, Todo: t.ID, Owner: req.Actor, IdempotencyKey: req.LeaseKey,
			TTLSeconds: req.LeaseTTLSeconds, WriteScopes: nt.RequiredWriteScopes}, now)
		if err != nil {
			return nil, err
		}
		o.Version, o.Epoch, o.ReceiptID = acq.Version, acq.Epoch, acq.ReceiptID
		if !changed {
			o.Status, o.Write, o.ReplayOf = acq.Status, acq.Write, acq.ReplayOf
		}
	}
	o.BoardChanged = o.Write
	if err := fillTodoResult(v, res, req.Goal, &nt, req.LeaseKey != "", now); err != nil {
		return nil, err
	}
	o.Data = res
	return o, nil
}

// setClaimTTL sets the claim's TTL and expiry (none when minutes is 0).
func setClaimTTL(t *Todo, minutes int64, now time.Time) {
	t.ClaimTTLMinutes = minutes
	t.ClaimExpiresAt = nil
	if minutes > 0 {
		t.ClaimExpiresAt = timePtr(now.Add(time.Duration(minutes) * time.Minute))
	}
}

// sameClaim reports whether a and b hold the same claim: claimant, scope
// agent, claimed_at, TTL and expiry.
func sameClaim(a, b *Todo) bool {
	return a.ClaimedBy == b.ClaimedBy && a.ClaimScopeAgentID == b.ClaimScopeAgentID &&
		a.ClaimTTLMinutes == b.ClaimTTLMinutes && sameTime(a.ClaimedAt, b.ClaimedAt) && sameTime(a.ClaimExpiresAt, b.ClaimExpiresAt)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// clearClaim removes every claim field.
func clearClaim(t *Todo) {
	t.ClaimedBy, t.ClaimScopeAgentID, t.ClaimTTLMinutes = "", "", 0
	t.ClaimedAt, t.ClaimExpiresAt = nil, nil
}

// requireOpenTodo refuses an archived (todo_archived) or closed
// (todo_not_open) todo.
func requireOpenTodo(t *Todo) error {
	if t.Archived {
		return Errorf(CodeTodoArchived, "todo %s is archived", t.ID)
	}
	if t.Status != TodoOpen {
		return Errorf(CodeTodoNotOpen, "todo %s is %s, not open", t.ID, t.Status)
	}
	return nil
}

// checkClaimant checks that a new claim (claimedBy, optional scope agent)
// goes to registered, non-excluded agents and honours the bound agent.
func checkClaimant(v *View, goal string, t *Todo, claimedBy, scope string) error {
	for _, a := range []string{claimedBy, scope} {
		if a == "" {
			continue
		}
		if _, err := RequireAgent(v, goal, "claimed by", a); err != nil {
			return err
		}
		if Excluded(t, a) {
			return excludedError(t, a)
		}
	}
	if t.BoundAgent != "" && t.BoundAgent != claimedBy && t.BoundAgent != scope {
		return boundMismatch(t)
	}
	return nil
}

// checkClaimLease applies the lease rules of a claim change by actor to
// (claimedBy, scope) ("" = cleared): another agent's effective lease is never
// made ineffective, and in hard_lease goals a change of holders needs the
// actor to own the todo's active lease when there is one.
func checkClaimLease(v *View, g *Goal, t *Todo, l *Lease, actor, claimedBy, scope string, changesHolders bool, now time.Time) error {
	if l == nil {
		return nil
	}
	effective, err := leaseEffectiveIn(v, g.ID, t, l, now)
	if err != nil {
		return err
	}
	if effective && claimedBy != "" && l.Owner != claimedBy && l.Owner != scope {
		return todoLeaseConflict(t, l)
	}
	if changesHolders && g.HandoffMode == HandoffHardLease && liveLeaseFacts(l, now) && l.Owner != actor {
		return todoLeaseConflict(t, l).With("handoff_mode", HandoffHardLease)
	}
	return nil
}

// fillTodoResult completes res with the todo t (as written) and, when
// withLease, the todo's current lease.
func fillTodoResult(v *View, res *TodoResult, goal string, t *Todo, withLease bool, now time.Time) error {
	tv, err := ViewTodo(v, goal, t, now, false)
	if err != nil {
		return err
	}
	res.GoalID, res.TodoID, res.TodoStatus = goal, t.ID, t.Status
	res.ClaimedBy = EffectiveClaimant(t, now)
	res.Todo = &tv
	if withLease {
		l, err := v.Lease(goal, t.ID)
		if err != nil {
			return err
		}
		if l != nil {
			lv, err := ViewLease(v, goal, l, now)
			if err != nil {
				return err
			}
			res.Lease = &lv
		}
	}
	return nil
}
