package lease

import (
	"fmt"
	"slices"
)

// Signed state commits (contract section 7). In a store whose loopx.yaml
// says require_signatures (set by `init --require-signatures`, an audited
// commit; it cannot be turned off), every later state commit must carry an
// SSH signature (git's gpg.format=ssh) by a key that CommitSigner names,
// judged on the commit's parent: the keys registered then, never the keys
// the commit itself writes.
//
//   - A commit with an acting agent in a goal (every todo, lease and agent
//     operation): the key registered for that agent in that goal. An agent
//     without one cannot act: an orchestrator gives it one
//     (agent.rotate-key), or it rotates its own while the store does not
//     yet require signatures.
//   - agent.register: the agent vouches for itself. It registers with its
//     key and signs the registration with it (proof that it holds the
//     private half). When the agent id already holds a key at the parent
//     (an earlier registration in this goal, or the same id in another
//     goal), that key signs instead, so an unregistered identity cannot be
//     taken over by registering it again with another key. Signatures prove
//     who made a commit, not who may join: whoever may push to the server
//     may register a new agent id, as before.
//   - A commit whose actor names no goal (store.clock-reset): a key the
//     agent id holds in any goal.
//   - A commit without an acting agent (init, store.upgrade, goal.create,
//     goal.archive, goal.unarchive): the key of any agent registered in
//     the store; while no agent holds a key (just after init), any valid
//     signature, so the first goal can be created.
//   - A governance commit an admin made as an admin (governance.go): the
//     admin's key, from the parent's loopx.yaml. An open store's first
//     admin signs with the key it adds.
//
// Board commits are not signed: each must be exactly the rendering of its
// parent (verify --history), so there is nothing in one to vouch for.

// SignerRule says which keys may sign one state commit.
type SignerRule struct {
	// Required reports a parent whose store requires signed state commits.
	Required bool
	// Agent is whose key signs ("" for a commit without an acting agent).
	Agent string
	// Keys are the accepted keys ("type base64").
	Keys []string
	// AnyKey accepts any valid signature (no agent holds a key yet).
	AnyKey bool
	// Refusal says why nobody can sign the commit (no accepted key).
	Refusal string
}

// Accepts reports whether key (normal form) may sign.
func (r SignerRule) Accepts(key string) bool {
	return r.AnyKey || (key != "" && slices.Contains(r.Keys, key))
}

// CommitSigner returns who must sign the commit of call's outcome o, judged
// on parent, the view of the commit's parent without the decision's writes.
// Keys are named even when the store does not require signatures (loopx
// then signs when it can, and nobody checks).
func CommitSigner(parent *View, call Call, o *Outcome) (SignerRule, error) {
	var r SignerRule
	m, err := parent.Meta()
	if err != nil {
		return r, err
	}
	r.Required = m != nil && m.RequireSignatures
	r.Agent = o.Actor
	if rule, ok := governanceSigner(parent, m, call, o); ok {
		rule.Required, rule.Agent = r.Required, r.Agent
		return rule, nil
	}
	switch {
	case call.Op != nil && call.Op.Name == OpAgentRegister:
		req := call.Req.(*RegisterRequest)
		if r.Keys, err = agentKeys(parent, req.Agent); err != nil {
			return r, err
		}
		if len(r.Keys) == 0 && req.SigningKey != "" {
			if key, err := NormalizeSigningKey(req.SigningKey); err == nil {
				r.Keys = []string{key}
			}
		}
		if len(r.Keys) == 0 {
			r.Refusal = fmt.Sprintf("agent %s registers with its signing key (--signing-key) and signs the registration with it", req.Agent)
		}
	case o.Actor != "" && o.Goal != "":
		a, err := parent.Agent(o.Goal, o.Actor)
		if err != nil {
			return r, err
		}
		if a != nil && a.SigningKey != "" {
			r.Keys = []string{a.SigningKey}
		} else {
			r.Refusal = fmt.Sprintf("agent %s has no registered signing key in goal %s (an orchestrator gives it one: agent rotate-key --by)", o.Actor, o.Goal)
		}
	case o.Actor != "":
		if r.Keys, err = agentKeys(parent, o.Actor); err != nil {
			return r, err
		}
		if len(r.Keys) == 0 {
			r.Refusal = fmt.Sprintf("agent %s has no registered signing key in any goal", o.Actor)
		}
	default:
		if r.Keys, err = storeKeys(parent); err != nil {
			return r, err
		}
		r.AnyKey = len(r.Keys) == 0
	}
	return r, nil
}

// governanceSigner is the signing rule of governance commits
// (governance.go): one an admin made as an admin is signed with that
// admin's key; an open store's first admin (admin add, or init adding an
// admin) signs with the key it adds, proving it holds it. ok is false for
// every other commit.
func governanceSigner(parent *View, m *StoreMeta, call Call, o *Outcome) (SignerRule, bool) {
	var r SignerRule
	if adminActed(m, call, o) {
		a := AdminOf(m, o.Actor)
		if a.SigningKey != "" {
			r.Keys = []string{a.SigningKey}
		}
		// An admin who is also an agent may sign its own registration
		// with the key it registers as that agent.
		if req, ok := call.Req.(*RegisterRequest); ok && req.Agent == o.Actor && req.SigningKey != "" {
			if key, err := NormalizeSigningKey(req.SigningKey); err == nil && !slices.Contains(r.Keys, key) {
				r.Keys = append(r.Keys, key)
			}
		}
		if len(r.Keys) == 0 {
			r.Refusal = fmt.Sprintf("admin %s has no signing key (admin add --admin-id %s --signing-key FILE.pub --by ADMIN)", o.Actor, o.Actor)
		}
		return r, true
	}
	if Governed(m) || call.Op == nil {
		return r, false
	}
	key := ""
	switch req := call.Req.(type) {
	case *AdminAddRequest:
		key = req.SigningKey
	case *InitRequest:
		if m != nil && req.Admin != "" {
			key = req.AdminKey
		}
	default:
		return r, false
	}
	if key != "" {
		if norm, err := NormalizeSigningKey(key); err == nil {
			r.Keys = []string{norm}
		}
	}
	if len(r.Keys) == 0 {
		r.Refusal = fmt.Sprintf("the store's first admin %s signs with the key it adds (--signing-key / --admin-key FILE.pub)", o.Actor)
	}
	return r, true
}

// agentKeys lists the keys agent id holds in any goal (registered or not).
func agentKeys(v *View, agent string) ([]string, error) {
	return collectKeys(v, func(a *Agent) bool { return a.ID == agent })
}

// storeKeys lists the keys of the store's registered agents.
func storeKeys(v *View) ([]string, error) {
	return collectKeys(v, func(a *Agent) bool { return a.Registered() })
}

func collectKeys(v *View, keep func(*Agent) bool) ([]string, error) {
	goals, err := v.files.List(GoalsDir)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, g := range goals {
		if !ValidGoalID(g) {
			continue
		}
		agents, err := v.Agents(g)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			if a.SigningKey != "" && keep(a) && !slices.Contains(keys, a.SigningKey) {
				keys = append(keys, a.SigningKey)
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}
