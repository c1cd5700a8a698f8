package lease

// Mutation authority over a todo (contract section 6) and the lease fence of
// todo mutations (contract section 4: update/complete/supersede).
//
// Decisions written down here:
//   - Actions are the lifecycle authorities: complete, update, supersede,
//     reassign. "reassign" is what a non-holder needs to clear or move
//     another agent's claim (update --clear-claim / --claimed-by), or to
//     give an unclaimed todo's claim to an agent other than itself.
//   - Order of the checks: registered (agent_not_registered), not excluded
//     (agent_excluded: never overridden, not even by an orchestrator), then
//     the claim.
//   - Claimed todo (effective claim): the claim owner and its scope agent
//     may act. Otherwise a registered orchestrator whose lifecycle_authority
//     includes the action may act, giving --authority-reason when its
//     registration requires_reason. An orchestrator lacking the action, or
//     the reason, gets authority_required; any other agent gets
//     not_claim_owner. Both carry claimed_by.
//   - Unclaimed todo (no claim, or an expired one): any registered,
//     non-excluded agent; a bound todo only its bound agent
//     (bound_agent_mismatch, detail bound_agent), or an orchestrator whose
//     lifecycle authority covers the action (same reason rule).
//   - Lease fence: when the todo has an EFFECTIVE lease, the mutation must
//     carry the exact proof of that lease with owner = the actor
//     (lease_fence_required when missing; version_mismatch /
//     lease_proof_mismatch from CheckProof). A proof given when there is no
//     effective lease is still checked exactly against the current lease
//     (a caller that believes it holds an execution it does not hold is told
//     so, never silently ignored); a proof of an expired or claim-conflicting
//     lease that matches exactly is accepted, and completion then ends it.

import (
	"slices"
	"time"
)

// Lifecycle actions checked by Authorize.
const (
	ActionComplete  = "complete"
	ActionUpdate    = "update"
	ActionSupersede = "supersede"
	ActionReassign  = "reassign"
)

// Proof is the lease proof of a todo mutation, passed with
// --task-lease-idempotency-key K --task-lease-expected-version V; its owner
// is the acting agent.
type Proof struct {
	IdempotencyKey  string `json:"idempotency_key" desc:"the current execution key" required:"true"`
	ExpectedVersion int64  `json:"expected_version" desc:"the current lease version" required:"true"`
}

// checkProofShape validates the proof flags before any state is read.
func checkProofShape(p *Proof) error {
	if p == nil {
		return nil
	}
	if err := CheckIdempotencyKey("task lease idempotency key", p.IdempotencyKey); err != nil {
		return err
	}
	if p.ExpectedVersion < 0 || p.ExpectedVersion > MaxGeneration {
		return Errorf(CodeInvalidRequest, "task lease expected version %d is out of range 0..%d", p.ExpectedVersion, MaxGeneration)
	}
	return nil
}

// Authorize decides whether actor may perform action (complete, update,
// supersede, reassign) on todo t of goal g at now. reason is the
// --authority-reason given (needed when an orchestrator acts through its
// lifecycle authority and its registration requires a reason).
func Authorize(v *View, g *Goal, t *Todo, actor, action, reason string, now time.Time) error {
	if !slices.Contains(LifecycleAuthorities, action) {
		return Errorf(CodeInvalidRequest, "unknown lifecycle action %q", action)
	}
	a, err := RequireAgent(v, g.ID, "agent id", actor)
	if err != nil {
		return err
	}
	if Excluded(t, actor) {
		return excludedError(t, actor)
	}
	if ClaimEffective(t, now) {
		if HoldsClaim(t, actor, now) {
			return nil
		}
		if a.Role == RoleOrchestrator {
			if err := orchestratorAuthority(a, t, action, reason); err != nil {
				return err.With("claimed_by", t.ClaimedBy)
			}
			return nil
		}
		return notClaimOwner(t, actor, action)
	}
	if t.BoundAgent != "" && t.BoundAgent != actor {
		if a.Role == RoleOrchestrator && slices.Contains(a.LifecycleAuthority, action) {
			if err := orchestratorAuthority(a, t, action, reason); err != nil {
				return err
			}
			return nil
		}
		return boundMismatch(t)
	}
	return nil
}

// orchestratorAuthority checks a registered orchestrator's lifecycle
// authority for action, and the reason when its registration requires one.
func orchestratorAuthority(a *Agent, t *Todo, action, reason string) *Error {
	if a.Role != RoleOrchestrator || !slices.Contains(a.LifecycleAuthority, action) {
		return Errorf(CodeAuthorityRequired, "agent %s has no %s authority over todo %s", a.ID, action, t.ID).
			With("action", action)
	}
	if a.RequiresReason && reason == "" {
		return Errorf(CodeAuthorityRequired, "orchestrator %s must give --authority-reason to %s todo %s", a.ID, action, t.ID).
			With("action", action)
	}
	return nil
}

func excludedError(t *Todo, agent string) *Error {
	return Errorf(CodeAgentExcluded, "agent %s is excluded from todo %s", agent, t.ID).With("agent_id", agent)
}

func boundMismatch(t *Todo) *Error {
	return Errorf(CodeBoundAgentMismatch, "todo %s is bound to agent %s", t.ID, t.BoundAgent).With("bound_agent", t.BoundAgent)
}

func notClaimOwner(t *Todo, actor, action string) *Error {
	return Errorf(CodeNotClaimOwner, "todo %s is claimed by %s: %s cannot %s it", t.ID, t.ClaimedBy, actor, action).
		With("claimed_by", t.ClaimedBy)
}

// todoLeaseConflict refuses a claim change against another agent's lease.
func todoLeaseConflict(t *Todo, l *Lease) *Error {
	return Errorf(CodeTodoLeaseConflict, "todo %s has an active task lease held by %s", t.ID, l.Owner).With("lease_owner", l.Owner)
}

// leaseEffectiveIn loads l's owner registration and applies LeaseEffective.
func leaseEffectiveIn(v *View, goal string, t *Todo, l *Lease, now time.Time) (bool, error) {
	if l == nil || l.Status != LeaseActive || !now.Before(l.ExpiresAt) {
		return false, nil
	}
	owner, err := v.Agent(goal, l.Owner)
	if err != nil {
		return false, err
	}
	return LeaseEffective(l, t, owner, now), nil
}

// checkTodoFence applies the lease fence of a todo mutation by actor. It
// returns the todo's lease (nil when none) and whether p verified it.
func checkTodoFence(v *View, goal string, t *Todo, actor string, p *Proof, now time.Time) (*Lease, bool, error) {
	l, err := v.Lease(goal, t.ID)
	if err != nil {
		return nil, false, err
	}
	effective, err := leaseEffectiveIn(v, goal, t, l, now)
	if err != nil {
		return nil, false, err
	}
	if p == nil {
		if effective {
			return nil, false, Errorf(CodeLeaseFenceRequired,
				"todo %s has an effective task lease held by %s: pass --task-lease-idempotency-key and --task-lease-expected-version of that lease", t.ID, l.Owner).
				With("lease_owner", l.Owner)
		}
		return l, false, nil
	}
	if err := CheckProof(l, actor, p.IdempotencyKey, p.ExpectedVersion, v.Revision); err != nil {
		return nil, false, err
	}
	return l, true, nil
}
