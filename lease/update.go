package lease

// todo update (contract sections 4 and 6).
//
// Decisions written down here:
//   - The todo must be open and not archived (todo_not_open /
//     todo_archived), for every field.
//   - An update that requests nothing is invalid_request; one whose values
//     all equal the current ones is no_change (nothing written).
//   - --text must be non-empty; --priority one of P0..P4 (invalid_request).
//   - --exclude-agent adds valid agent ids (registered or not) to
//     excluded_agents. Excluding the bound agent is invalid_request. An
//     exclusion clears nothing automatically: excluding an agent that holds
//     the claim after this update (claimant or scope agent) is
//     invalid_request unless the same update clears or reassigns the claim.
//     Excluding a lease owner makes its lease ineffective (contract section
//     5), but an effective lease still demands its proof first.
//   - --claimed-by names the acting agent (this is how the seed's `todo
//     update --claimed-by A --text T` names the actor; equal to the
//     effective claimant it changes nothing). Naming another agent is a
//     reassignment: invalid_request unless the actor is a registered
//     orchestrator, which also needs "reassign" authority (and its reason
//     when its registration requires one: authority_required). No holder
//     hands its claim over silently; it clears it (--clear-claim) and the
//     other agent claims. A claim change is a fresh claim (no TTL, no scope
//     agent): the new claimant must be registered, not excluded and allowed
//     by the bound agent.
//   - A delegated claim stays the orchestrator's (contract section 6): its
//     scope agent naming itself (--claimed-by S by S) takes the claim from
//     its claimant, which is a reassignment too: authority_required (details
//     claimed_by, action) unless the scope agent is itself a registered
//     orchestrator with reassign authority (and its reason when required).
//     Any update that moves an effective claim away from its claimant is
//     recorded as todo.reassign, also when the new claimant is the actor (an
//     orchestrator taking another agent's claim). loopx.todo.update/v1
//     applied both as plain updates; its recorded commits are re-decided by
//     that rule (operation.go).
//   - The audit trail names a claim change as its own operation, with the
//     previous holder (Loopx-Previous-Holder): todo.reassign (another
//     agent named), todo.clear-claim, todo.claim-takeover (an expired claim
//     replaced). The command's JSON "operation" stays todo.update.
//   - --clear-claim and --claimed-by together are invalid_request. Clearing
//     an expired claim is an ordinary update (the todo is unclaimed); the
//     result reports previous_claim_expired and previous_claimed_by.
//   - The claim rules of claim.go apply: another agent's effective lease is
//     never made ineffective (todo_lease_conflict); in hard_lease goals a
//     change of holders needs the actor to own the active lease if any.
//   - Authority: any field other than the claim needs "update"; a claim
//     change by a non-holder needs "reassign". Then the lease fence.
//   - Note facts are the facts after the update (see notes.go).

import (
	"slices"
	"time"
)

// UpdateRequest updates a todo.
type UpdateRequest struct {
	Goal            string   `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo            string   `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Actor           string   `json:"agent_id,omitempty" desc:"acting agent (default: claimed_by, or the goal's only agent)"`
	Text            *string  `json:"text,omitempty" desc:"new text"`
	Note            string   `json:"note,omitempty" desc:"continuation note (kept byte for byte)"`
	ClearClaim      bool     `json:"clear_claim,omitempty" desc:"remove the claim"`
	ClaimedBy       string   `json:"claimed_by,omitempty" desc:"the claim owner acting (or, for an orchestrator with reassign authority, the new claim owner)"`
	Priority        string   `json:"priority,omitempty" desc:"new priority P0..P4"`
	ExcludeAgents   []string `json:"exclude_agents,omitempty" desc:"agents to exclude from this todo"`
	AuthorityReason string   `json:"authority_reason,omitempty" desc:"why an orchestrator uses its lifecycle authority"`
	Proof           *Proof   `json:"task_lease,omitempty" desc:"the lease proof, required while the todo has an effective lease"`
	rules                    // 1: the rules of loopx.todo.update/v1 (re-verifying its commits)
}

// Update decides `todo update`.
func Update(v *View, req UpdateRequest, now time.Time) (*Outcome, error) {
	return withReason(atomically(v, func() (*Outcome, error) { return update(v, req, now) }))(req.AuthorityReason)
}

// withReason records an orchestrator's --authority-reason in the audit
// trail of a written outcome.
func withReason(o *Outcome, err error) func(reason string) (*Outcome, error) {
	return func(reason string) (*Outcome, error) {
		if err == nil && o.Write {
			o.AuthorityReason = reason
		}
		return o, err
	}
}

func checkUpdateRequest(req *UpdateRequest) error {
	if err := CheckGoalID(req.Goal); err != nil {
		return err
	}
	if err := CheckTodoID(req.Todo); err != nil {
		return err
	}
	if err := CheckAgentID("agent id", req.Actor); err != nil {
		return err
	}
	if req.Text != nil && *req.Text == "" {
		return Errorf(CodeInvalidRequest, "--text cannot be empty")
	}
	if req.Note != "" {
		if err := checkNoteText(req.Note); err != nil {
			return err
		}
	}
	if req.Priority != "" && !slices.Contains(Priorities, req.Priority) {
		return Errorf(CodeInvalidRequest, "priority %q: want one of %v", req.Priority, Priorities)
	}
	if req.ClearClaim && req.ClaimedBy != "" {
		return Errorf(CodeInvalidRequest, "--clear-claim and --claimed-by cannot be combined")
	}
	if req.ClaimedBy != "" {
		if err := CheckAgentID("claimed by", req.ClaimedBy); err != nil {
			return err
		}
	}
	for _, a := range req.ExcludeAgents {
		if err := CheckAgentID("excluded agent", a); err != nil {
			return err
		}
	}
	if err := checkProofShape(req.Proof); err != nil {
		return err
	}
	if req.Text == nil && req.Note == "" && !req.ClearClaim && req.ClaimedBy == "" && req.Priority == "" && len(req.ExcludeAgents) == 0 {
		return Errorf(CodeInvalidRequest, "nothing to update: give --text, --note, --priority, --exclude-agent, --claimed-by or --clear-claim")
	}
	return nil
}

func update(v *View, req UpdateRequest, now time.Time) (*Outcome, error) {
	if err := checkUpdateRequest(&req); err != nil {
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

	// What the request changes.
	cur := EffectiveClaimant(t, now)
	clearing := req.ClearClaim && t.ClaimedBy != ""
	setting := req.ClaimedBy != "" && req.ClaimedBy != cur
	claimChange := clearing || setting
	// reassigning: the claim goes to another agent than the one the request
	// names as acting, or away from its effective holder. A scope agent
	// naming itself takes its orchestrator's claim: a reassignment too
	// (update/v1 applied it as a plain update).
	reassigning := setting && (req.ClaimedBy != req.Actor || (cur != "" && req.version != 1))
	textChange := req.Text != nil && *req.Text != t.Text
	prioChange := req.Priority != "" && req.Priority != t.Priority
	var newExcluded []string
	for _, a := range req.ExcludeAgents {
		if !Excluded(t, a) && !slices.Contains(newExcluded, a) {
			newExcluded = append(newExcluded, a)
		}
	}
	otherFields := req.Text != nil || req.Note != "" || req.Priority != "" || len(req.ExcludeAgents) > 0

	if req.ClaimedBy != "" && req.ClaimedBy != req.Actor {
		// Claims change hands only on purpose: naming another agent is a
		// reassignment, which only a registered orchestrator with reassign
		// authority makes (never a silent hand-over by the holder).
		if actor.Role != RoleOrchestrator {
			return nil, Errorf(CodeInvalidRequest, "--claimed-by %s must equal the acting agent %s: moving a claim to another agent is a reassignment, which only a registered orchestrator with reassign authority makes", req.ClaimedBy, req.Actor).
				With("claimed_by", cur)
		}
		if err := orchestratorAuthority(actor, t, ActionReassign, req.AuthorityReason); err != nil {
			return nil, err.With("claimed_by", cur)
		}
	} else if reassigning && HoldsClaim(t, req.Actor, now) {
		// The scope agent of a delegated claim names itself: the claim
		// stays the orchestrator's unless an orchestrator with reassign
		// authority (the scope agent may be one) moves it.
		if actor.Role != RoleOrchestrator {
			return nil, Errorf(CodeAuthorityRequired, "todo %s is claimed by %s and delegated to %s: a scope agent acts on the todo but never takes its claim; moving it is a reassignment, which only a registered orchestrator with reassign authority makes", t.ID, cur, req.Actor).
				With("claimed_by", cur).With("action", ActionReassign)
		}
		if err := orchestratorAuthority(actor, t, ActionReassign, req.AuthorityReason); err != nil {
			return nil, err.With("claimed_by", cur)
		}
	}

	// Authority.
	if otherFields || (claimChange && cur == "" && (clearing || req.ClaimedBy == req.Actor)) {
		if err := Authorize(v, g, t, req.Actor, ActionUpdate, req.AuthorityReason, now); err != nil {
			return nil, err
		}
	}
	if claimChange && cur != "" && !HoldsClaim(t, req.Actor, now) {
		if err := Authorize(v, g, t, req.Actor, ActionReassign, req.AuthorityReason, now); err != nil {
			return nil, err
		}
	}

	// The todo after the update, checked before anything is written.
	nt := *t
	res := &TodoResult{}
	var changes []string
	if textChange {
		nt.Text = *req.Text
		changes = append(changes, "text")
	}
	if prioChange {
		nt.Priority = req.Priority
		changes = append(changes, "priority")
	}
	if claimChange {
		if cur == "" && t.ClaimedBy != "" {
			res.PreviousClaimExpired, res.PreviousClaimedBy = true, t.ClaimedBy
			res.PreviousClaimExpiresAt = t.ClaimExpiresAt
		} else if cur != "" {
			res.PreviousClaimedBy = cur
		}
		clearClaim(&nt)
		if setting {
			if err := checkClaimant(v, req.Goal, &nt, req.ClaimedBy, ""); err != nil {
				return nil, err
			}
			nt.ClaimedBy, nt.ClaimedAt = req.ClaimedBy, timePtr(now)
		}
		changes = append(changes, "claim")
	}
	if len(newExcluded) > 0 {
		for _, a := range newExcluded {
			if a == nt.BoundAgent {
				return nil, Errorf(CodeInvalidRequest, "cannot exclude agent %s: todo %s is bound to it", a, t.ID)
			}
			if ClaimEffective(&nt, now) && (a == nt.ClaimedBy || a == nt.ClaimScopeAgentID) {
				return nil, Errorf(CodeInvalidRequest, "cannot exclude agent %s while it holds the claim of todo %s: clear (--clear-claim) or reassign (--claimed-by) the claim in the same update", a, t.ID).
					With("claimed_by", nt.ClaimedBy)
			}
		}
		nt.ExcludedAgents = sortedSet(append(slices.Clone(t.ExcludedAgents), newExcluded...))
		changes = append(changes, "excluded_agents")
	}
	l, err := v.Lease(req.Goal, t.ID)
	if err != nil {
		return nil, err
	}
	if claimChange {
		if err := checkClaimLease(v, g, t, l, req.Actor, nt.ClaimedBy, "", true, now); err != nil {
			return nil, err
		}
	}
	l, verified, err := checkTodoFence(v, req.Goal, t, req.Actor, req.Proof, now)
	if err != nil {
		return nil, err
	}
	if req.Note != "" {
		nt.Notes = slices.Clone(t.Notes)
		if appendNote(&nt, l, req.Note, req.Actor, now) {
			changes = append(changes, "note")
		}
	}

	o := &Outcome{Operation: OpTodoUpdate, Status: StatusNoChange, Goal: req.Goal, Todo: t.ID, Actor: req.Actor}
	if len(changes) > 0 {
		nt.UpdatedBy, nt.UpdatedAt = req.Actor, now
		v.PutTodo(req.Goal, &nt)
		o.Status, o.Write, o.BoardChanged = StatusApplied, true, true
		res.Changes = changes
	}
	// A claim change is its own entry in the audit trail, naming the
	// previous holder: a reassignment, a cleared claim, or an expired claim
	// taken over.
	if claimChange && o.Write {
		o.PreviousHolder = res.PreviousClaimedBy
		switch {
		case reassigning:
			o.Audit = AuditReassign
		case clearing:
			o.Audit = AuditClearClaim
		case res.PreviousClaimExpired && res.PreviousClaimedBy != req.ClaimedBy:
			o.Audit = AuditClaimTakeover
		}
	}
	if err := fillTodoResult(v, res, req.Goal, &nt, verified, now); err != nil {
		return nil, err
	}
	o.Data = res
	return o, nil
}
