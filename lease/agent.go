package lease

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// RegisterRequest registers an agent in a goal.
type RegisterRequest struct {
	Goal               string   `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Agent              string   `json:"agent_id,omitempty" desc:"agent id" required:"true"`
	Role               string   `json:"role,omitempty" desc:"agent or orchestrator (default agent)"`
	LifecycleAuthority []string `json:"lifecycle_authority,omitempty" desc:"orchestrators: some of complete, update, supersede, reassign"`
	RequiresReason     bool     `json:"requires_reason,omitempty" desc:"the orchestrator must give an authority reason when it uses its authority"`
	// SigningKey is the agent's SSH public key (authorized_keys format,
	// a comment allowed), "" for none; see CheckSigningKey.
	SigningKey string `json:"signing_key,omitempty" desc:"the agent's SSH public key (authorized_keys format) that signs its state commits"`
	// By is the admin who registers the agent (governance.go): needed in
	// a store with admins to grant authority (orchestrator, lifecycle
	// authority), to register another agent, or under registration: admin.
	By string `json:"by_agent_id,omitempty" desc:"the admin who registers the agent (needed, in a store with admins, for orchestrators and lifecycle authority, and under registration: admin)"`
}

// UnregisterRequest unregisters an agent.
type UnregisterRequest struct {
	Goal  string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Agent string `json:"agent_id,omitempty" desc:"the agent to unregister" required:"true"`
	// By is who does it: the agent itself (empty or its own id), or a
	// registered orchestrator.
	By string `json:"by_agent_id,omitempty" desc:"who unregisters it when not the agent itself: a registered orchestrator"`
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
	key := ""
	if req.SigningKey != "" {
		var err error
		if key, err = CheckSigningKey(req.SigningKey); err != nil {
			return nil, err
		}
	}
	if _, err := RequireActiveGoal(v, req.Goal); err != nil {
		return nil, err
	}
	old, err := v.Agent(req.Goal, req.Agent)
	if err != nil {
		return nil, err
	}
	auth := slices.Clone(req.LifecycleAuthority)
	slices.Sort(auth)
	auth = slices.Compact(auth)
	actor, target := req.Agent, ""
	if req.By != "" && req.By != req.Agent {
		if err := CheckAgentID("by", req.By); err != nil {
			return nil, err
		}
		actor, target = req.By, req.Agent
	}
	if old.Registered() {
		if old.Role == req.Role && slices.Equal(old.LifecycleAuthority, auth) && old.RequiresReason == req.RequiresReason && old.SigningKey == key {
			// The same registration again (a retry after a lost answer):
			// a replay, not a second registration.
			return &Outcome{Operation: OpAgentRegister, Status: StatusReplayed, Goal: req.Goal, Actor: actor, TargetAgent: target,
				Data: AgentData{GoalID: req.Goal, AgentID: old.ID, Agent: old}}, nil
		}
		return nil, Errorf(CodeAgentExists, "agent %s is already registered in goal %s (with other facts)", req.Agent, req.Goal).With("agent_id", req.Agent)
	}
	if err := checkRegistrationAuthority(v, req); err != nil {
		return nil, err
	}
	if key != "" {
		if err := signingKeyFree(v, req.Agent, key); err != nil {
			return nil, err
		}
	}
	a := &Agent{ID: req.Agent, Role: req.Role, LifecycleAuthority: auth, RequiresReason: req.RequiresReason,
		Status: AgentRegistered, Registration: 1, RegisteredAt: now, UpdatedAt: now, SigningKey: key}
	if old != nil {
		a.Registration = old.Registration + 1
	}
	v.PutAgent(req.Goal, a)
	return &Outcome{Operation: OpAgentRegister, Status: StatusApplied, Goal: req.Goal, Actor: actor, TargetAgent: target,
		Write: true, Data: AgentData{GoalID: req.Goal, AgentID: a.ID, Agent: a}}, nil
}

// checkRegistrationAuthority is governance's rule for a registration
// (governance.go): in a store with admins, one that grants authority, one
// made for another agent, and any under registration: admin is an
// admin's (by). An open store lets agents register themselves with any
// role, as before admins existed; there by names nobody.
func checkRegistrationAuthority(v *View, req RegisterRequest) error {
	m, err := RequireStore(v)
	if err != nil {
		return err
	}
	other := req.By != "" && req.By != req.Agent
	if !Governed(m) {
		if other {
			return Errorf(CodeInvalidRequest, "this store has no admins: agents register themselves (by_agent_id names nobody here)").With("field", "by_agent_id")
		}
		return nil
	}
	switch {
	case grantsAuthority(&req):
		return RequireAdmin(m, req.By, "registering an orchestrator or lifecycle authority")
	case other:
		return RequireAdmin(m, req.By, "registering another agent")
	case registrationOf(m) == RegistrationAdmin:
		return RequireAdmin(m, req.By, "registering an agent (this store's registration is admin)")
	}
	return nil
}

// UnregisterAgent marks a registered agent unregistered. Its leases stop
// being effective; its records stay for history. It is done by the agent
// itself, or by a registered orchestrator named in By (anyone else:
// authority_required); the audit trail records who. An agent already
// unregistered is no_change (a retry after a lost answer).
func UnregisterAgent(v *View, req UnregisterRequest, now time.Time) (*Outcome, error) {
	goal, agent := req.Goal, req.Agent
	if err := CheckAgentID("agent id", agent); err != nil {
		return nil, err
	}
	by := req.By
	if by == "" {
		by = agent
	}
	if err := CheckAgentID("by agent id", by); err != nil {
		return nil, err
	}
	if _, err := RequireActiveGoal(v, goal); err != nil {
		return nil, err
	}
	o := &Outcome{Operation: OpAgentUnregister, Status: StatusApplied, Goal: goal, Actor: by}
	if by != agent {
		m, err := RequireStore(v)
		if err != nil {
			return nil, err
		}
		if Governed(m) {
			// With admins, unregistering another agent is an admin's.
			if err := RequireAdmin(m, by, "unregistering another agent"); err != nil {
				return nil, err
			}
		} else {
			doer, err := RequireAgent(v, goal, "by agent id", by)
			if err != nil {
				return nil, err
			}
			if doer.Role != RoleOrchestrator {
				return nil, Errorf(CodeAuthorityRequired, "only the agent itself or a registered orchestrator unregisters %s; %s is a %s", agent, by, doer.Role)
			}
		}
		o.TargetAgent = agent
	}
	a, err := v.Agent(goal, agent)
	if err != nil {
		return nil, err
	}
	if a != nil && !a.Registered() {
		o.Status = StatusNoChange
		o.Data = AgentData{GoalID: goal, AgentID: a.ID, Agent: a}
		return o, nil
	}
	if a, err = RequireAgent(v, goal, "agent id", agent); err != nil {
		return nil, err
	}
	a.Status, a.UpdatedAt = AgentUnregistered, now
	v.PutAgent(goal, a)
	o.Write, o.BoardChanged = true, true
	o.Data = AgentData{GoalID: goal, AgentID: a.ID, Agent: a}
	return o, nil
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

// Signing keys (contract section 7: agents may register a public signing
// key, SSH, as git uses for gpg.format=ssh).
//
// Decisions (where the contract is silent):
//   - The key is one SSH public key in authorized_keys format; options
//     and the comment are dropped, and the record keeps "type base64".
//   - Accepted types: ed25519, ECDSA (P-256, P-384, P-521), RSA of at least
//     2048 bits, and their FIDO security-key forms (sk-ssh-ed25519@openssh.com,
//     sk-ecdsa-sha2-nistp256@openssh.com), which ssh-keygen -Y sign (and so
//     git) signs with. DSA, shorter RSA keys and certificates are refused.
//   - A key names one agent: registering a key that another agent id holds
//     in any goal (registered, or unregistered: its signatures are still in
//     history) is invalid_request, so a signature never stands for two
//     agents. The same agent id may use its key in several goals.

// SigningKeyTypes are the SSH key types accepted as signing keys.
var SigningKeyTypes = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoSKED25519,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoSKECDSA256,
	ssh.KeyAlgoRSA,
}

// MinRSABits is the smallest RSA signing key accepted.
const MinRSABits = 2048

// NormalizeSigningKey parses an SSH public key in authorized_keys format and
// returns it as "type base64", or why it is not an accepted signing key.
func NormalizeSigningKey(text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", errors.New("no key given")
	}
	pub, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(text))
	if err != nil {
		return "", errors.New("not an SSH public key in authorized_keys format (\"ssh-ed25519 AAAA... comment\")")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return "", errors.New("more than one key given; give exactly one")
	}
	if _, ok := pub.(*ssh.Certificate); ok {
		return "", fmt.Errorf("%s is a certificate; give the plain public key", pub.Type())
	}
	if !slices.Contains(SigningKeyTypes, pub.Type()) {
		return "", fmt.Errorf("key type %s is not accepted; want ed25519 (or ECDSA, RSA >= %d bits)", pub.Type(), MinRSABits)
	}
	if pub.Type() == ssh.KeyAlgoRSA {
		var rk *rsa.PublicKey
		if cp, ok := pub.(ssh.CryptoPublicKey); ok {
			rk, _ = cp.CryptoPublicKey().(*rsa.PublicKey)
		}
		if rk == nil || rk.N.BitLen() < MinRSABits {
			return "", fmt.Errorf("RSA keys need at least %d bits", MinRSABits)
		}
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))), nil
}

// CheckSigningKey returns the normal form of a signing key, or
// invalid_request naming the signing_key field.
func CheckSigningKey(text string) (string, error) {
	norm, err := NormalizeSigningKey(text)
	if err != nil {
		return "", Errorf(CodeInvalidRequest, "signing_key: %v", err).With("field", "signing_key")
	}
	return norm, nil
}

// signingKeyFree refuses key when an agent other than agent holds it in any
// goal (see the decisions above).
func signingKeyFree(v *View, agent, key string) error {
	if m, err := v.Meta(); err == nil && m != nil {
		for _, a := range m.Admins {
			if a.ID != agent && a.SigningKey == key {
				return Errorf(CodeInvalidRequest, "signing_key: this key is admin %s's; every identity needs its own key", a.ID).
					With("field", "signing_key").With("admin_id", a.ID)
			}
		}
	}
	goals, err := v.files.List(GoalsDir)
	if err != nil {
		return err
	}
	for _, g := range goals {
		if !ValidGoalID(g) {
			continue
		}
		agents, err := v.Agents(g)
		if err != nil {
			return err
		}
		for _, a := range agents {
			if a.ID != agent && a.SigningKey == key {
				return Errorf(CodeInvalidRequest, "signing_key: this key is registered for agent %s (goal %s); every agent needs its own key", a.ID, g).
					With("field", "signing_key").With("agent_id", a.ID)
			}
		}
	}
	return nil
}
