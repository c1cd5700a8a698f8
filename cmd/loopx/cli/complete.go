package cli

// Shell completion that knows the store: `loopx completion bash|zsh|fish`
// completes goal, todo and agent ids read from the current store (through
// the Go API: ListGoals, ListTodos, ListAgents) and the values of the enum
// flags. The completions are registered by flag name during the rails walk
// (installRails), so a flag named --todo-id on a command added later
// completes todo ids too.

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// idFlags maps a flag name to the kind of id it takes.
var idFlags = map[string]string{
	"goal-id":        "goal",
	"todo-id":        "todo",
	"depends-on":     "todo",
	"by":             "todo",
	"agent-id":       "agent",
	"owner":          "agent",
	"new-owner":      "agent",
	"claimed-by":     "agent",
	"bound-agent":    "agent",
	"excluded-agent": "agent",
	"exclude-agent":  "agent",
	"scope-agent-id": "agent",
}

// newIDFlags are the flags that name something new: existing ids are no help.
var newIDFlags = map[string]string{
	"goal create":    "goal-id",
	"todo add":       "todo-id",
	"agent register": "agent-id",
}

// enumFlags are the flags that take one of a few values.
var enumFlags = map[string][]string{
	"handoff-mode": {lease.HandoffSoftClaim, lease.HandoffHardLease},
	"priority":     lease.Priorities,
	"format":       {"text", "json"},
	"status":       {lease.TodoOpen, lease.TodoDone, lease.TodoSuperseded},
	"role":         {lease.RoleAgent, lease.RoleOrchestrator},
}

// registerCompletions registers the completion of c's own flags.
func registerCompletions(e *env, c *cobra.Command) {
	seen := map[string]bool{}
	register := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		var fn cobra.CompletionFunc
		switch {
		case idFlags[name] != "":
			fn = e.completeIDs(name, idFlags[name])
		case enumFlags[name] != nil:
			fn = cobra.FixedCompletions(enumFlags[name], cobra.ShellCompDirectiveNoFileComp)
		case name == "lifecycle-authority":
			fn = completeList(lease.LifecycleAuthorities)
		default:
			return
		}
		_ = c.RegisterFlagCompletionFunc(name, fn)
	}
	c.PersistentFlags().VisitAll(func(f *pflag.Flag) { register(f.Name) })
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { register(f.Name) })
}

// completeList completes a comma-separated list of values, each once.
func completeList(values []string) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		used := strings.Split(done, ",")
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, last) && !slices.Contains(used, v) {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// completeIDs completes the ids of one kind from the store the command
// line points at (its --repo, --registry and --goal-id, as typed so far).
func (e *env) completeIDs(flag, kind string) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if newIDFlags[cmdKey(c)] == flag {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := e.open()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer s.Close()
		var out []cobra.Completion
		add := func(id, desc string) {
			if strings.HasPrefix(id, toComplete) {
				out = append(out, cobra.CompletionWithDesc(id, oneLine(desc)))
			}
		}
		goals := []string{e.goal}
		if kind == "goal" || e.goal == "" {
			// Without --goal-id: the default goal when there is one, else every goal.
			goals = nil
			for _, g := range itemsOf("goals")(s.ListGoals()) {
				if kind == "goal" {
					add(str(g["goal_id"]), str(g["status"])+" · "+str(g["title"]))
				} else if str(g["status"]) == lease.GoalActive {
					goals = append(goals, str(g["goal_id"]))
				}
			}
			if kind != "goal" {
				if _, err := s.ShowGoal(""); err == nil {
					goals = []string{""}
				}
			}
		}
		for _, g := range goals {
			switch kind {
			case "todo":
				for _, t := range itemsOf("todos")(s.ListTodos(loopx.TodoFilter{Goal: g})) {
					add(str(t["todo_id"]), str(t["status"])+" · "+str(t["text"]))
				}
			case "agent":
				for _, a := range itemsOf("agents")(s.ListAgents(g)) {
					if str(a["status"]) == lease.AgentRegistered {
						add(str(a["agent_id"]), str(a["role"]))
					}
				}
			}
		}
		slices.SortStableFunc(out, strings.Compare)
		return slices.Compact(out), cobra.ShellCompDirectiveNoFileComp
	}
}

// itemsOf reads the list field of a result as JSON objects (the result's
// JSON is the contract, so this reads what any program would read).
func itemsOf(field string) func(loopx.Reply, error) []map[string]any {
	return func(res loopx.Reply, err error) []map[string]any {
		if err != nil {
			return nil
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return nil
		}
		var whole map[string]json.RawMessage
		var out []map[string]any
		if json.Unmarshal(raw, &whole) != nil || json.Unmarshal(whole[field], &out) != nil {
			return nil
		}
		return out
	}
}
