package lease

import "time"

// Lookups shared by every decision. Each turns "absent" into the contract's
// refusal code, and passes corrupt_record through unchanged.

// RequireStore refuses an uninitialized store, or one of a newer format.
func RequireStore(v *View) (*StoreMeta, error) {
	m, err := v.Meta()
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, Errorf(CodeStoreNotInitialized, "no loopx store here: run `loopx init`")
	}
	if m.FormatVersion > FormatVersion {
		return nil, Errorf(CodeStoreFormatUnsupported, "store format %d is newer than this loopx understands (%d): upgrade loopx", m.FormatVersion, FormatVersion)
	}
	return m, nil
}

// RequireGoal returns the goal or goal_not_found.
func RequireGoal(v *View, goal string) (*Goal, error) {
	if err := CheckGoalID(goal); err != nil {
		return nil, err
	}
	if _, err := RequireStore(v); err != nil {
		return nil, err
	}
	g, err := v.Goal(goal)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, Errorf(CodeGoalNotFound, "goal %s not found", goal)
	}
	return g, nil
}

// RequireActiveGoal also refuses an archived goal (for mutations).
func RequireActiveGoal(v *View, goal string) (*Goal, error) {
	g, err := RequireGoal(v, goal)
	if err != nil {
		return nil, err
	}
	if g.Status == GoalArchived {
		return nil, Errorf(CodeGoalArchived, "goal %s is archived", goal)
	}
	return g, nil
}

// RequireTodo returns the todo or todo_not_found.
func RequireTodo(v *View, goal, todo string) (*Todo, error) {
	if err := CheckTodoID(todo); err != nil {
		return nil, err
	}
	t, err := v.Todo(goal, todo)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, Errorf(CodeTodoNotFound, "todo %s not found in goal %s", todo, goal)
	}
	return t, nil
}

// RequireAgent returns a registered agent or agent_not_registered. field names
// the flag being decoded (agent id, owner, new owner).
func RequireAgent(v *View, goal, field, agent string) (*Agent, error) {
	if err := CheckAgentID(field, agent); err != nil {
		return nil, err
	}
	a, err := v.Agent(goal, agent)
	if err != nil {
		return nil, err
	}
	if !a.Registered() {
		return nil, Errorf(CodeAgentNotRegistered, "agent %s is not registered in goal %s", agent, goal).With("agent_id", agent)
	}
	return a, nil
}

// Now returns the decision time: the machine's clock, never earlier than the
// time recorded in the head, truncated to seconds (Git's resolution).
func Now(clock, head time.Time) time.Time {
	clock = clock.UTC().Truncate(time.Second)
	if head.After(clock) {
		return head.UTC().Truncate(time.Second)
	}
	return clock
}
