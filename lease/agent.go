package lease

import (
	"slices"
	"time"
)

// RegisterRequest registers an agent in a goal.
type RegisterRequest struct {
	Goal               string   `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Agent              string   `json:"agent_id,omitempty" desc:"agent id" required:"true"`
	Role               string   `json:"role,omitempty" desc:"agent or orchestrator (default agent)"`
	LifecycleAuthority []string `json:"lifecycle_authority,omitempty" desc:"orchestrators: some of complete, update, supersede, reassign"`
	RequiresReason     bool     `json:"requires_reason,omitempty" desc:"the orchestrator must give an authority reason when it uses its authority"`
}

// UnregisterRequest unregisters an agent.
type UnregisterRequest struct {
	Goal  string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Agent string `json:"agent_id,omitempty" desc:"the agent to unregister" required:"true"`
}

// AgentData is the result of agent commands.
type AgentData struct {
	GoalID  string `json:"goal_id"`
	AgentID string `json:"agent_id"`
	Agent   *Agent `json:"agent"`
}

// RegisterAgent registers an agent; a registered id is agent_exists, an
// unregistered one is registered again with the new facts.
func RegisterAgent(v *View, req RegisterRequest, now time.Time) (*Outcome, error) {
	if err := CheckAgentID("agent id", req.Agent); err != nil {
		return nil, err
	}
	if req.Role == "" {
		req.Role = RoleAgent
	}
	if req.Role != RoleAgent && req.Role != RoleOrchestrator {
		return nil, Errorf(CodeInvalidRequest, "role %q: want agent or orchestrator", req.Role)
	}
	for _, a := range req.LifecycleAuthority {
		if !slices.Contains(LifecycleAuthorities, a) {
			return nil, Errorf(CodeInvalidRequest, "lifecycle authority %q: want some of %v", a, LifecycleAuthorities)
		}
	}
	if len(req.LifecycleAuthority) > 0 && req.Role != RoleOrchestrator {
		return nil, Errorf(CodeInvalidRequest, "lifecycle authority is granted to orchestrators only (use --role orchestrator)")
	}
	if _, err := RequireActiveGoal(v, req.Goal); err != nil {
		return nil, err
	}
	old, err := v.Agent(req.Goal, req.Agent)
	if err != nil {
		return nil, err
	}
	if old.Registered() {
		return nil, Errorf(CodeAgentExists, "agent %s is already registered in goal %s", req.Agent, req.Goal).With("agent_id", req.Agent)
	}
	auth := slices.Clone(req.LifecycleAuthority)
	slices.Sort(auth)
	auth = slices.Compact(auth)
	a := &Agent{ID: req.Agent, Role: req.Role, LifecycleAuthority: auth, RequiresReason: req.RequiresReason,
		Status: AgentRegistered, Registration: 1, RegisteredAt: now, UpdatedAt: now}
	if old != nil {
		a.Registration = old.Registration + 1
	}
	v.PutAgent(req.Goal, a)
	return &Outcome{Operation: OpAgentRegister, Status: StatusApplied, Goal: req.Goal, Actor: req.Agent,
		Write: true, Data: AgentData{GoalID: req.Goal, AgentID: a.ID, Agent: a}}, nil
}

// UnregisterAgent marks a registered agent unregistered. Its leases stop
// being effective; its records stay for history.
func UnregisterAgent(v *View, req UnregisterRequest, now time.Time) (*Outcome, error) {
	goal, agent := req.Goal, req.Agent
	if err := CheckAgentID("agent id", agent); err != nil {
		return nil, err
	}
	if _, err := RequireActiveGoal(v, goal); err != nil {
		return nil, err
	}
	a, err := RequireAgent(v, goal, "agent id", agent)
	if err != nil {
		return nil, err
	}
	a.Status, a.UpdatedAt = AgentUnregistered, now
	v.PutAgent(goal, a)
	return &Outcome{Operation: OpAgentUnregister, Status: StatusApplied, Goal: goal, Actor: agent,
		Write: true, BoardChanged: true, Data: AgentData{GoalID: goal, AgentID: a.ID, Agent: a}}, nil
}

// RegisteredAgents lists the goal's registered agents.
func RegisteredAgents(v *View, goal string) ([]*Agent, error) {
	all, err := v.Agents(goal)
	if err != nil {
		return nil, err
	}
	var out []*Agent
	for _, a := range all {
		if a.Registered() {
			out = append(out, a)
		}
	}
	return out, nil
}
