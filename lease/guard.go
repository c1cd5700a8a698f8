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
//   - A scope covers the paths it matches (doublestar.Match) and everything
//     below them, the same reading ScopesOverlap uses: "src/**", "src/*" and
//     a literal "src" all cover "src/a.go".
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

	"github.com/bmatcuk/doublestar/v4"
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
// scope, or lies below something that does.
func ScopeCovers(scope, p string) bool {
	if scope == "" || p == "" {
		return false
	}
	if ok, err := doublestar.Match(scope, p); err == nil && ok {
		return true
	}
	ok, err := doublestar.Match(scope+"/**", p)
	return err == nil && ok
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
		leases, err := v.Leases(goal)
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
