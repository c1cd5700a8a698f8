package lease

import (
	"slices"
	"strings"
	"time"
)

// Governance: who may change the rules (contract section 8).
//
// A store may name admins in loopx.yaml. A store without admins is open:
// governance is as it was before admins existed (any registered agent of
// the right role, anyone for store settings), which suits one trusted
// team. The first admin closes it, in an audited commit. From then on the
// operations that change who may do what need an admin as their actor,
// named with by_agent_id (--by) or, for the commands whose actor is
// agent_id (goal archive/unarchive, clock-reset), as that actor:
//
//   - store settings: init changing max_clock_skew_seconds,
//     require_signatures, registration or the admins; admin add/remove;
//   - granting authority: registering (or registering again) an agent as an
//     orchestrator or with lifecycle authority, registering another agent,
//     any registration while the store says registration: admin; rotating
//     another agent's key; unregistering another agent;
//   - goal archive and unarchive; clock-reset.
//
// Each check is made by the decision itself, before anything is written,
// so verify --history and the server hook, which re-decide every recorded
// request on its parent, re-check it: a hand-made commit cannot skip it.
// In a store that requires signatures the admin's registered key must
// sign such a commit (signature.go), so naming an admin proves nothing
// there without its key. In a store that does not, --by is a claim like
// --agent-id: it stops careless agents, not hostile ones (docs/SECURITY.md).
//
// Decisions (where the contract is silent):
//   - Admin ids follow the agent id rule; an admin need not be an agent of
//     any goal. At most MaxAdmins.
//   - The last admin cannot be removed (a governed store stays governed);
//     in a store that requires signatures, neither can the last admin with
//     a key, and every admin added there needs a key.
//   - An admin's key is its own: it may not be a key another identity
//     holds (an agent of another id, another admin).
//   - An open store's first admin is added by anyone (that is what open
//     means); in a store that requires signatures its commit is signed with
//     the new admin's own key, proving it holds it.
//   - Adding an admin that exists with the same key is no_change; with
//     another key, the admin's key is replaced (by an admin); removing one
//     that is not an admin is no_change.

// MaxAdmins bounds the admins of one store.
const MaxAdmins = 64

// ValidStoreID reports whether s is a store id: 32 lowercase hex digits.
func ValidStoreID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Operation names of governance.
const (
	OpAdminAdd    = "admin.add"
	OpAdminRemove = "admin.remove"
)

// Governed reports whether the store names admins (is not open).
func Governed(m *StoreMeta) bool { return m != nil && len(m.Admins) > 0 }

// AdminOf returns the store's admin with id, or nil.
func AdminOf(m *StoreMeta, id string) *Admin {
	if m == nil || id == "" {
		return nil
	}
	for i := range m.Admins {
		if m.Admins[i].ID == id {
			return &m.Admins[i]
		}
	}
	return nil
}

// RequireAdmin refuses (authority_required) what is an admin's to do in a
// governed store unless by names one of its admins. An open store allows
// it. what says what was asked, for the message.
func RequireAdmin(m *StoreMeta, by, what string) error {
	if !Governed(m) {
		return nil
	}
	if by == "" {
		return Errorf(CodeAuthorityRequired, "%s needs an admin of this store: name one with --by ADMIN (admins: %s)", what, adminNames(m)).
			With("admins", adminIDs(m))
	}
	if AdminOf(m, by) == nil {
		return Errorf(CodeAuthorityRequired, "%s needs an admin of this store; %s is not one (admins: %s)", what, by, adminNames(m)).
			With("admins", adminIDs(m)).With("agent_id", by)
	}
	return nil
}

func adminIDs(m *StoreMeta) []string {
	out := make([]string, len(m.Admins))
	for i, a := range m.Admins {
		out[i] = a.ID
	}
	return out
}

func adminNames(m *StoreMeta) string { return strings.Join(adminIDs(m), ", ") }

// keyedAdmins counts the admins with a signing key.
func keyedAdmins(m *StoreMeta) int {
	n := 0
	for _, a := range m.Admins {
		if a.SigningKey != "" {
			n++
		}
	}
	return n
}

// AdminAddRequest adds an admin (or replaces an admin's key).
type AdminAddRequest struct {
	Admin      string `json:"admin_id,omitempty" desc:"the admin to add (an id like an agent id)" required:"true"`
	SigningKey string `json:"signing_key,omitempty" desc:"the admin's SSH public key (authorized_keys format); needed in a store that requires signatures"`
	By         string `json:"by_agent_id,omitempty" desc:"the admin who adds it (needed once the store has an admin)"`
}

// AdminRemoveRequest removes an admin.
type AdminRemoveRequest struct {
	Admin string `json:"admin_id,omitempty" desc:"the admin to remove" required:"true"`
	By    string `json:"by_agent_id,omitempty" desc:"the admin who removes it" required:"true"`
}

// AdminData is the result of admin add/remove/list.
type AdminData struct {
	AdminID string `json:"admin_id,omitempty"`
	// Admins are the store's admins afterwards; Open says the store has
	// none (anyone governs it).
	Admins       []Admin `json:"admins"`
	Open         bool    `json:"open"`
	Registration string  `json:"registration"`
}

func adminData(m *StoreMeta, id string) AdminData {
	d := AdminData{AdminID: id, Admins: slices.Clone(m.Admins), Open: !Governed(m), Registration: m.Registration}
	if d.Admins == nil {
		d.Admins = []Admin{}
	}
	if d.Registration == "" {
		d.Registration = RegistrationOpen
	}
	return d
}

// ListAdmins is the read of admin list.
func ListAdmins(v *View) (AdminData, error) {
	m, err := RequireStore(v)
	if err != nil {
		return AdminData{}, err
	}
	return adminData(m, ""), nil
}

func resolveAdminAdd(v *View, d Defaults, now time.Time, r *AdminAddRequest) error {
	if r.SigningKey != "" {
		if norm, err := NormalizeSigningKey(r.SigningKey); err == nil {
			r.SigningKey = norm
		}
	}
	if r.By == r.Admin {
		r.By = ""
	}
	return nil
}

// AddAdmin adds an admin to the store, closing an open store (see the
// decisions above).
func AddAdmin(v *View, req AdminAddRequest, now time.Time) (*Outcome, error) {
	if err := CheckAgentID("admin id", req.Admin); err != nil {
		return nil, err
	}
	if req.By != "" {
		if err := CheckAgentID("by", req.By); err != nil {
			return nil, err
		}
	}
	m, err := RequireStore(v)
	if err != nil {
		return nil, err
	}
	up := *m
	o := &Outcome{Operation: OpAdminAdd, Status: StatusNoChange, Actor: actorOr(req.By, req.Admin)}
	changed, err := putAdmin(v, &up, req.Admin, req.SigningKey, o.Actor, now)
	if err != nil {
		return nil, err
	}
	o.Data = adminData(&up, req.Admin)
	if !changed {
		return o, nil
	}
	// Who may: an admin, or anyone while the store is open.
	if err := RequireAdmin(m, req.By, "adding an admin"); err != nil {
		return nil, err
	}
	v.PutMeta(&up)
	o.Status, o.Write = StatusApplied, true
	return o, nil
}

// putAdmin adds (or re-keys) admin id in m. It reports whether m changed.
func putAdmin(v *View, m *StoreMeta, id, keyText, by string, now time.Time) (bool, error) {
	key := ""
	if keyText != "" {
		var err error
		if key, err = CheckSigningKey(keyText); err != nil {
			return false, err
		}
	}
	if m.RequireSignatures && key == "" {
		return false, Errorf(CodeInvalidRequest, "this store requires signatures: admin %s needs a signing key (--admin-key / --signing-key FILE.pub)", id).With("field", "signing_key")
	}
	if old := AdminOf(m, id); old != nil && old.SigningKey == key {
		return false, nil
	}
	if key != "" {
		if err := adminKeyFree(v, m, id, key); err != nil {
			return false, err
		}
	}
	admins := slices.Clone(m.Admins)
	if old := AdminOf(m, id); old != nil {
		for i := range admins {
			if admins[i].ID == id {
				admins[i].SigningKey = key
			}
		}
	} else {
		if len(admins) >= MaxAdmins {
			return false, Errorf(CodeInvalidRequest, "the store has %d admins, the most it may have", MaxAdmins)
		}
		admins = append(admins, Admin{ID: id, SigningKey: key, AddedAt: now, AddedBy: byOther(by, id)})
		slices.SortFunc(admins, func(a, b Admin) int { return strings.Compare(a.ID, b.ID) })
	}
	m.Admins = admins
	return true, nil
}

// adminKeyFree refuses key for admin id when another identity holds it.
func adminKeyFree(v *View, m *StoreMeta, id, key string) error {
	for _, a := range m.Admins {
		if a.ID != id && a.SigningKey == key {
			return Errorf(CodeInvalidRequest, "signing_key: this key is admin %s's; every admin needs its own key", a.ID).With("field", "signing_key")
		}
	}
	return signingKeyFree(v, id, key)
}

// RemoveAdmin removes an admin (by an admin); the last admin, and in a
// store that requires signatures the last admin with a key, stay.
func RemoveAdmin(v *View, req AdminRemoveRequest, now time.Time) (*Outcome, error) {
	if err := CheckAgentID("admin id", req.Admin); err != nil {
		return nil, err
	}
	if err := CheckAgentID("by", req.By); err != nil {
		return nil, err
	}
	m, err := RequireStore(v)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: OpAdminRemove, Status: StatusNoChange, Actor: req.By, Data: adminData(m, req.Admin)}
	old := AdminOf(m, req.Admin)
	if old == nil {
		return o, nil
	}
	if err := RequireAdmin(m, req.By, "removing an admin"); err != nil {
		return nil, err
	}
	if len(m.Admins) == 1 {
		return nil, Errorf(CodeInvalidRequest, "%s is the store's last admin: add another admin first (a governed store stays governed)", req.Admin)
	}
	if m.RequireSignatures && old.SigningKey != "" && keyedAdmins(m) == 1 {
		return nil, Errorf(CodeInvalidRequest, "%s is the last admin with a signing key, which a store that requires signatures needs: add another first", req.Admin)
	}
	up := *m
	up.Admins = slices.DeleteFunc(slices.Clone(m.Admins), func(a Admin) bool { return a.ID == req.Admin })
	v.PutMeta(&up)
	o.Status, o.Write, o.Data = StatusApplied, true, adminData(&up, req.Admin)
	return o, nil
}

func actorOr(by, self string) string {
	if by != "" {
		return by
	}
	return self
}

func byOther(by, self string) string {
	if by == self {
		return ""
	}
	return by
}

// adminActed reports whether o is a governance decision an admin of the
// parent's store made as an admin: its commit is then signed with the
// admin's key (signature.go).
func adminActed(m *StoreMeta, call Call, o *Outcome) bool {
	if call.Op == nil || AdminOf(m, o.Actor) == nil {
		return false
	}
	switch call.Op.Name {
	case OpStoreInit, OpAdminAdd, OpAdminRemove, OpGoalArchive, OpGoalUnarchive, OpClockReset:
		return true
	case OpAgentRegister:
		return o.TargetAgent != "" || call.Req.(*RegisterRequest).Agent == o.Actor && grantsAuthority(call.Req.(*RegisterRequest))
	case OpAgentUnregister, OpAgentRotateKey:
		return o.TargetAgent != "" || o.Actor != agentOfCall(call)
	}
	return false
}

func agentOfCall(call Call) string {
	switch r := call.Req.(type) {
	case *UnregisterRequest:
		return r.Agent
	case *RotateKeyRequest:
		return r.Agent
	}
	return ""
}

// grantsAuthority reports a registration that gives more than a plain
// agent has.
func grantsAuthority(r *RegisterRequest) bool {
	return r.Role == RoleOrchestrator || len(r.LifecycleAuthority) > 0
}
