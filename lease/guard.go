package lease

// loopx guard: the commit-time check of write scopes. A commit (or any list
// of repository paths) is refused when a path falls inside a write scope of
// another agent's effective task lease.
//
// Decisions (where the contract is silent):
//   - Every goal is checked (archived ones too: a lease's effectiveness does
//     not depend on its goal, and release still works in an archived goal),
//     because a working tree is shared by all goals of its store.
//   - Only effective leases block (LeaseEffective): expired, released,
//     unregistered, excluded and claim-conflicting holders never do.
//   - A scope covers the paths it matches (doublestar.Match's reading,
//     decided in linear time by glob.go) and everything below them, the
//     same reading ScopesOverlap uses: "src/**", "src/*" and a literal
//     "src" all cover "src/a.go".
//   - An agent's own lease passes: a path covered by an effective lease whose
//     owner is the checking agent (in any goal) is allowed, even when another
//     agent's effective lease also covers it. Two effective leases only share
//     a path when their scopes were acquired without overlapping (the
//     overlap scan is per goal) or in different goals; the holder that is
//     committing is the one whose work it is.
//   - The empty agent (no id configured) owns nothing: every effective lease
//     is another agent's.
//   - One violation is reported per (path, lease), naming the first covering
//     scope in sorted order; violations are sorted by path, goal, todo.

import (
	"slices"
	"strings"
	"time"
)

// GuardViolation is one path inside a write scope of another agent's
// effective lease.
type GuardViolation struct {
	Path      string    `json:"path" yaml:"path"`
	Goal      string    `json:"goal_id" yaml:"goal_id"`
	TodoID    string    `json:"todo_id" yaml:"todo_id"`
	Owner     string    `json:"owner" yaml:"owner"`
	Scope     string    `json:"scope" yaml:"scope"`
	ExpiresAt time.Time `json:"expires_at" yaml:"expires_at"`
}

// ScopeCovers reports whether write scope covers the repository path p
// (slash-separated, relative to the top of the working tree): p matches the
// scope, or lies below something that does (p matches scope + "/**"), as
// doublestar.Match reads them. It costs O(len(scope) × len(p)) whatever
// the scope (glob.go).
func ScopeCovers(scope, p string) bool {
	if scope == "" || p == "" {
		return false
	}
	return compiledScope(scope).covers(p)
}

// GuardGoals returns the goals whose lease folder holds any record, sorted,
// by listing folders only (nothing is decoded). An empty answer means no
// lease exists anywhere, so no path can be refused.
func GuardGoals(v *View) ([]string, error) {
	names, err := v.files.List(GoalsDir)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, n := range names {
		leases, err := v.files.List(LeasesDir(n))
		if err != nil {
			return nil, err
		}
		if len(leases) > 0 {
			set[n] = true
		}
	}
	for p, d := range v.writes {
		if rest, ok := strings.CutPrefix(p, GoalsDir+"/"); ok && d != nil {
			if parts := strings.SplitN(rest, "/", 3); len(parts) == 3 && parts[1] == "leases" {
				set[parts[0]] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// guardHit is one path covered by one lease, before effectiveness is known.
type guardHit struct {
	path, scope string
}

// GuardCheck returns the violations of paths for agent at now: for every
// goal, every effective lease (all lease records are scanned) whose owner is
// not agent and whose write scopes cover a path, unless an effective lease
// of agent itself covers that path. agent may be "" (owns nothing). Paths
// are repository paths relative to the top of the working tree.
func GuardCheck(v *View, goals []string, agent string, paths []string, now time.Time) ([]GuardViolation, error) {
	return GuardCheckLeases(v, goals, v.Leases, agent, paths, now)
}

// GuardCheckLeases is GuardCheck with the lease records of each goal given
// by leasesOf (which must return what v.Leases would: a caller judging many
// states reuses the records of a lease folder that did not change). The
// records are only read.
func GuardCheckLeases(v *View, goals []string, leasesOf func(goal string) ([]*Lease, error), agent string, paths []string, now time.Time) ([]GuardViolation, error) {
	if agent != "" {
		if err := CheckAgentID("agent id", agent); err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 || len(goals) == 0 {
		return nil, nil
	}
	var others []GuardViolation
	own := map[string]bool{}
	for _, goal := range goals {
		if err := CheckGoalID(goal); err != nil {
			return nil, err
		}
		leases, err := leasesOf(goal)
		if err != nil {
			return nil, err
		}
		for _, l := range leases {
			// Cheap refusals and the scope match first: the todo and the
			// owner are read only for leases that cover a path.
			if l.Status != LeaseActive || !now.Before(l.ExpiresAt) || len(l.WriteScopes) == 0 {
				continue
			}
			var hits []guardHit
			scopes := normalizeScopeSet(l.WriteScopes)
			for _, p := range paths {
				for _, sc := range scopes {
					if ScopeCovers(sc, p) {
						hits = append(hits, guardHit{p, sc})
						break
					}
				}
			}
			if len(hits) == 0 {
				continue
			}
			eff, err := leaseIsEffective(v, goal, l, now)
			if err != nil {
				return nil, err
			}
			if !eff {
				continue
			}
			for _, h := range hits {
				if agent != "" && l.Owner == agent {
					own[h.path] = true
					continue
				}
				others = append(others, GuardViolation{Path: h.path, Goal: goal, TodoID: l.TodoID,
					Owner: l.Owner, Scope: h.scope, ExpiresAt: l.ExpiresAt.UTC()})
			}
		}
	}
	var out []GuardViolation
	for _, g := range others {
		if !own[g.Path] {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b GuardViolation) int {
		for _, c := range []int{strings.Compare(a.Path, b.Path), strings.Compare(a.Goal, b.Goal),
			strings.Compare(a.TodoID, b.TodoID), strings.Compare(a.Scope, b.Scope)} {
			if c != 0 {
				return c
			}
		}
		return 0
	})
	return out, nil
}

// The push-time guard (`loopx guard check --range`, the pre-push hook)
// judges commits, each against the leases in force when it was made, as the
// agent that made it.
//
// Decisions (where the contract is silent):
//   - The committing agent is, in order: the commit's Loopx-Agent trailer;
//     else the configured agent (--agent-id, $LOOPX_AGENT_ID, `git config
//     loopx.agent`: who pushes from this clone); else the local part of the
//     author e-mail, when it names an agent registered (in any goal) in the
//     state the commit is judged against; else nobody, and every lease is
//     another agent's (as for the commit-time guard).
//   - The trailer is read from the message's last paragraph (never the
//     subject line), key case-insensitive as git reads trailers. Trailers
//     that name different agents, or a value that is not an agent id, are
//     invalid_agent_id: the commit is refused, not guessed at.
//   - The trailer is a claim, like the author line and the commit time:
//     the guard catches mistakes of cooperating agents (a commit that the
//     pre-commit hook never saw: --no-verify, an amend, a rebase), not a
//     committer who lies; signed commits and the server hook are for that.

// TrailerAgent is the commit trailer naming the agent that made a commit
// in the working repository.
const TrailerAgent = "Loopx-Agent"

// Sources of a commit's agent (CommitAgent).
const (
	AgentFromTrailer     = "trailer"
	AgentFromAuthorEmail = "author_email"
	AgentFromNone        = "none"
)

// CommitAgentTrailer returns the agent named by the Loopx-Agent trailers of
// a commit message; found is false when there is none.
func CommitAgentTrailer(msg string) (agent string, found bool, err error) {
	lines := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	start := len(lines)
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	if start == 0 {
		return "", false, nil // one paragraph: the subject, no trailers
	}
	for _, line := range lines[start:] {
		k, val, ok := strings.Cut(line, ":")
		// A line starting with blanks continues the trailer above it.
		if !ok || k == "" || k[0] == ' ' || k[0] == '\t' || !strings.EqualFold(strings.TrimRight(k, " \t"), TrailerAgent) {
			continue
		}
		val = strings.TrimSpace(val)
		if !ValidAgentID(val) {
			return "", false, Errorf(CodeInvalidAgentID, "the %s trailer %q is not a valid agent id", TrailerAgent, val)
		}
		if found && val != agent {
			return "", false, Errorf(CodeInvalidAgentID, "the %s trailers name two agents, %s and %s", TrailerAgent, agent, val)
		}
		agent, found = val, true
	}
	return agent, found, nil
}

// CommitAgent attributes a commit (its message and author e-mail) to an
// agent, in the order of the decisions above: the trailer, else configured
// (with configuredFrom as its source; "" when none is configured), else the
// author e-mail's local part when it is an agent registered in v (nil: no
// store at that time), else nobody ("", AgentFromNone).
func CommitAgent(v *View, msg, authorEmail, configured, configuredFrom string) (agent, from string, err error) {
	if a, ok, err := CommitAgentTrailer(msg); err != nil || ok {
		return a, AgentFromTrailer, err
	}
	if configured != "" {
		if err := CheckAgentID("agent id", configured); err != nil {
			return "", "", err
		}
		return configured, configuredFrom, nil
	}
	local, _, _ := strings.Cut(authorEmail, "@")
	if v != nil && ValidAgentID(local) {
		ok, err := registeredAnywhere(v, local)
		if err != nil {
			return "", "", err
		}
		if ok {
			return local, AgentFromAuthorEmail, nil
		}
	}
	return "", AgentFromNone, nil
}

// registeredAnywhere reports whether agent is registered in some goal of v.
func registeredAnywhere(v *View, agent string) (bool, error) {
	goals, err := v.files.List(GoalsDir)
	if err != nil {
		return false, err
	}
	for _, g := range goals {
		if !ValidGoalID(g) {
			continue
		}
		a, err := v.Agent(g, agent)
		if err != nil {
			return false, err
		}
		if a.Registered() {
			return true, nil
		}
	}
	return false, nil
}
