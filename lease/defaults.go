package lease

// Defaults that keep the seeds' short command lines working (contract
// section 3). Anything ambiguous is refused with the invalid_* code of the
// missing field, never guessed.

// ResolveGoal picks the goal of a command: the explicit --goal-id, else the
// configured default (registry default_goal or LOOPX_GOAL), else the only
// active goal.
func ResolveGoal(v *View, explicit, configured string) (string, error) {
	switch {
	case explicit != "":
		return explicit, CheckGoalID(explicit)
	case configured != "":
		return configured, CheckGoalID(configured)
	}
	if _, err := RequireStore(v); err != nil {
		return "", err
	}
	goals, err := ActiveGoals(v)
	if err != nil {
		return "", err
	}
	switch len(goals) {
	case 1:
		return goals[0].ID, nil
	case 0:
		return "", Errorf(CodeInvalidGoalID, "goal id is required (--goal-id): the store has no active goal")
	}
	return "", Errorf(CodeInvalidGoalID, "goal id is required (--goal-id): the store has %d active goals", len(goals))
}

// ResolveActor picks the acting agent: the explicit --agent-id (or --owner),
// else the agent named by --claimed-by, else the goal's only registered agent.
func ResolveActor(v *View, goal, explicit, claimedBy string) (string, error) {
	switch {
	case explicit != "":
		return explicit, CheckAgentID("agent id", explicit)
	case claimedBy != "":
		return claimedBy, CheckAgentID("claimed by", claimedBy)
	}
	agents, err := RegisteredAgents(v, goal)
	if err != nil {
		return "", err
	}
	if len(agents) == 1 {
		return agents[0].ID, nil
	}
	return "", Errorf(CodeInvalidAgentID, "agent id is required (--agent-id): goal %s has %d registered agents", goal, len(agents))
}
