package lease

import (
	"slices"
	"time"
)

// Key rotation (contract section 7: identity proven by signature). An
// agent's signing key is replaced, or given to an agent that has none, by
// one audited commit, agent.rotate-key:
//   - by the agent itself: in a store that requires signatures its commit
//     is signed with the key it replaces (the key registered at the
//     commit's parent, like every commit; signature.go), so only the holder
//     of the old key can rotate it;
//   - or by a registered orchestrator of the goal (by_agent_id) whose lifecycle authority
//     includes "reassign" (the authority to move what belongs to one agent
//     to another), giving --authority-reason when its registration
//     requires one; its commit is signed with the orchestrator's own key.
//     This is how an agent that lost its key, or was registered before the
//     store required signatures, gets one.
//
// The agent must be registered; the new key must be an accepted signing
// key that no other agent id holds (CheckSigningKey, signingKeyFree). The
// same key again is no_change. The agent's registration and its leases are
// untouched.

// RotateKeyRequest replaces an agent's signing key.
type RotateKeyRequest struct {
	Goal       string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Agent      string `json:"agent_id,omitempty" desc:"the agent whose key is replaced" required:"true"`
	SigningKey string `json:"signing_key,omitempty" desc:"the new SSH public key (authorized_keys format)" required:"true"`
	// By is the orchestrator acting for the agent ("" or the agent itself:
	// the agent acts); by_agent_id on the wire, as for every agent
	// operation done by another agent.
	By              string `json:"by_agent_id,omitempty" desc:"an orchestrator with reassign authority acting for the agent (default: the agent itself)"`
	AuthorityReason string `json:"authority_reason,omitempty" desc:"why the orchestrator rotates the key (recorded; required when its registration requires a reason)"`
}

// RotateKeyData is the result of agent rotate-key.
type RotateKeyData struct {
	GoalID  string `json:"goal_id"`
	AgentID string `json:"agent_id"`
	// PreviousKey is the key replaced ("" when the agent had none).
	PreviousKey string `json:"previous_signing_key"`
	Agent       *Agent `json:"agent"`
}

func resolveRotateKey(v *View, d Defaults, now time.Time, r *RotateKeyRequest) error {
	if r.By == r.Agent {
		r.By = ""
	}
	if r.SigningKey != "" {
		// The recorded request keeps the key in its normal form.
		if norm, err := NormalizeSigningKey(r.SigningKey); err == nil {
			r.SigningKey = norm
		}
	}
	return resolveGoalField(v, d, &r.Goal)
}

// RotateKey replaces a registered agent's signing key (see above).
func RotateKey(v *View, req RotateKeyRequest, now time.Time) (*Outcome, error) {
	if err := CheckAgentID("agent id", req.Agent); err != nil {
		return nil, err
	}
	if req.By != "" {
		if err := CheckAgentID("by", req.By); err != nil {
			return nil, err
		}
	}
	if req.SigningKey == "" {
		return nil, Errorf(CodeInvalidRequest, "rotate-key needs --signing-key (the new public key)").With("field", "signing_key")
	}
	key, err := CheckSigningKey(req.SigningKey)
	if err != nil {
		return nil, err
	}
	if _, err := RequireActiveGoal(v, req.Goal); err != nil {
		return nil, err
	}
	a, err := RequireAgent(v, req.Goal, "agent id", req.Agent)
	if err != nil {
		return nil, err
	}
	actor := req.Agent
	if req.By != "" && req.By != req.Agent {
		actor = req.By
		m, err := RequireStore(v)
		if err != nil {
			return nil, err
		}
		if Governed(m) {
			// With admins, another agent's key is an admin's to rotate.
			if err := RequireAdmin(m, req.By, "rotating another agent's key"); err != nil {
				return nil, err
			}
		} else {
			o, err := RequireAgent(v, req.Goal, "by", req.By)
			if err != nil {
				return nil, err
			}
			if o.Role != RoleOrchestrator || !slices.Contains(o.LifecycleAuthority, ActionReassign) {
				return nil, Errorf(CodeAuthorityRequired, "agent %s may not rotate %s's key: an orchestrator with %s authority may", o.ID, a.ID, ActionReassign).With("agent_id", o.ID)
			}
			if o.RequiresReason && req.AuthorityReason == "" {
				return nil, Errorf(CodeAuthorityRequired, "orchestrator %s must give --authority-reason to rotate %s's key", o.ID, a.ID).With("agent_id", o.ID)
			}
		}
	}
	data := RotateKeyData{GoalID: req.Goal, AgentID: a.ID, PreviousKey: a.SigningKey, Agent: a}
	if a.SigningKey == key {
		return &Outcome{Operation: OpAgentRotateKey, Status: StatusNoChange, Goal: req.Goal, Actor: actor, Data: data}, nil
	}
	if err := signingKeyFree(v, a.ID, key); err != nil {
		return nil, err
	}
	up := *a
	up.SigningKey, up.UpdatedAt = key, now
	v.PutAgent(req.Goal, &up)
	data.Agent = &up
	return &Outcome{Operation: OpAgentRotateKey, Status: StatusApplied, Goal: req.Goal, Actor: actor, Write: true,
		AuthorityReason: req.AuthorityReason, Data: data}, nil
}
