package lease

import (
	"strings"
	"testing"
	"time"
)

// govFix is a store with one goal "g" (agents agent-a and orch, an
// orchestrator with every lifecycle authority), a todo with agent-a's live
// lease, and the admins the case gives.
func govFix(t *testing.T, admins []Admin, mod func(m *StoreMeta)) *gdFix {
	t.Helper()
	f := newGD()
	m := &StoreMeta{FormatVersion: FormatVersion, StoreID: strings.Repeat("ab", 16), CreatedAt: gdT0, Admins: admins}
	if mod != nil {
		mod(m)
	}
	f.files[MetaPath] = Encode(m)
	f.goal("g", "agent-a")
	f.keyed("g", "orch", RoleOrchestrator, "", LifecycleAuthorities, false)
	f.lease("g", "todo_live1", "agent-a", 10, nil, "src/**")
	return f
}

func TestGovernance(t *testing.T) {
	keyRoot, keyOther := edKey(t), edKey(t)
	root := []Admin{{ID: "root", SigningKey: keyRoot, AddedAt: gdT0}}
	future := gdT0.Add(48 * time.Hour)
	cases := []struct {
		name   string
		admins []Admin
		meta   func(m *StoreMeta)
		head   time.Time // the head's time (default gdT0)
		call   Call
		code   Code   // "" when applied (or no_change)
		status string // when code is ""
	}{
		// An open store: governance as before admins existed.
		{"open: an agent registers itself as orchestrator", nil, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "boss", Role: RoleOrchestrator, LifecycleAuthority: []string{ActionReassign}}), "", StatusApplied},
		{"open: init changes the skew bound without authority", nil, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion, MaxClockSkewSeconds: 86400}), "", StatusApplied},
		{"open: goal archive without authority", nil, nil, time.Time{},
			CallOf(GoalArchiveRequest{Goal: "g", Actor: "agent-a"}), "", StatusApplied},
		{"open: anyone adds the first admin", nil, nil, time.Time{},
			CallOf(AdminAddRequest{Admin: "root", SigningKey: keyRoot}), "", StatusApplied},
		{"open: by names nobody on a registration", nil, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "newbie", By: "root"}), CodeInvalidRequest, ""},

		// A governed store: the attacks of the issue.
		{"self-made orchestrator refused", root, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "boss", Role: RoleOrchestrator, LifecycleAuthority: []string{ActionReassign}}), CodeAuthorityRequired, ""},
		{"lifecycle authority without the orchestrator's --by refused", root, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "boss", Role: RoleOrchestrator, By: "agent-a"}), CodeAuthorityRequired, ""},
		{"an admin registers an orchestrator", root, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "boss", Role: RoleOrchestrator, LifecycleAuthority: []string{ActionReassign}, By: "root"}), "", StatusApplied},
		{"a plain agent still registers itself", root, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "newbie"}), "", StatusApplied},
		{"registration admin: a plain agent may not register itself", root, func(m *StoreMeta) { m.Registration = RegistrationAdmin }, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "newbie"}), CodeAuthorityRequired, ""},
		{"registration admin: an admin registers it", root, func(m *StoreMeta) { m.Registration = RegistrationAdmin }, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "newbie", By: "root"}), "", StatusApplied},
		{"an orchestrator may no longer re-key another agent", root, nil, time.Time{},
			CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyOther, By: "orch"}), CodeAuthorityRequired, ""},
		{"an admin re-keys another agent", root, nil, time.Time{},
			CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyOther, By: "root"}), "", StatusApplied},
		{"an agent re-keys itself", root, nil, time.Time{},
			CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyOther}), "", StatusApplied},
		{"an orchestrator may no longer unregister another agent", root, nil, time.Time{},
			CallOf(UnregisterRequest{Goal: "g", Agent: "agent-a", By: "orch"}), CodeAuthorityRequired, ""},
		{"an admin unregisters another agent", root, nil, time.Time{},
			CallOf(UnregisterRequest{Goal: "g", Agent: "agent-a", By: "root"}), "", StatusApplied},
		{"an agent unregisters itself", root, nil, time.Time{},
			CallOf(UnregisterRequest{Goal: "g", Agent: "agent-a"}), "", StatusApplied},
		{"loosened rules: init skew without an admin refused", root, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion, MaxClockSkewSeconds: 86400}), CodeAuthorityRequired, ""},
		{"loosened rules: init skew by a non-admin refused", root, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion, MaxClockSkewSeconds: 86400, By: "agent-a"}), CodeAuthorityRequired, ""},
		{"init skew by an admin", root, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion, MaxClockSkewSeconds: 60, By: "root"}), "", StatusApplied},
		{"init that changes nothing needs nobody", root, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion}), "", StatusNoChange},
		{"init registration by a non-admin refused", root, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion, Registration: RegistrationAdmin}), CodeAuthorityRequired, ""},
		{"goal archive without an admin refused", root, nil, time.Time{},
			CallOf(GoalArchiveRequest{Goal: "g", Actor: "agent-a"}), CodeAuthorityRequired, ""},
		{"goal archive by an admin", root, nil, time.Time{},
			CallOf(GoalArchiveRequest{Goal: "g", Actor: "root"}), "", StatusApplied},
		{"clock-reset without an admin refused", root, nil, future,
			CallOf(ClockResetRequest{Actor: "agent-b", Reason: "x"}), CodeAuthorityRequired, ""},
		{"clock-reset by an admin", root, nil, future,
			CallOf(ClockResetRequest{Actor: "root", Reason: "x"}), "", StatusApplied},
		{"a second admin by a non-admin refused", root, nil, time.Time{},
			CallOf(AdminAddRequest{Admin: "mallory", SigningKey: keyOther, By: "agent-a"}), CodeAuthorityRequired, ""},
		{"a second admin adding itself refused", root, nil, time.Time{},
			CallOf(AdminAddRequest{Admin: "mallory", SigningKey: keyOther}), CodeAuthorityRequired, ""},
		{"a second admin by an admin", root, nil, time.Time{},
			CallOf(AdminAddRequest{Admin: "ops", SigningKey: keyOther, By: "root"}), "", StatusApplied},
		{"the same admin again: no change", root, nil, time.Time{},
			CallOf(AdminAddRequest{Admin: "root", SigningKey: keyRoot, By: "root"}), "", StatusNoChange},
		{"an admin's key taken from another admin refused", root, nil, time.Time{},
			CallOf(AdminAddRequest{Admin: "ops", SigningKey: keyRoot, By: "root"}), CodeInvalidRequest, ""},
		{"the last admin stays", root, nil, time.Time{},
			CallOf(AdminRemoveRequest{Admin: "root", By: "root"}), CodeInvalidRequest, ""},
		{"removing a non-admin: no change", root, nil, time.Time{},
			CallOf(AdminRemoveRequest{Admin: "nobody", By: "root"}), "", StatusNoChange},
		{"removing an admin by a non-admin refused", []Admin{{ID: "ops", SigningKey: keyOther, AddedAt: gdT0}, root[0]}, nil, time.Time{},
			CallOf(AdminRemoveRequest{Admin: "root", By: "agent-a"}), CodeAuthorityRequired, ""},
		{"removing an admin by an admin", []Admin{{ID: "ops", SigningKey: keyOther, AddedAt: gdT0}, root[0]}, nil, time.Time{},
			CallOf(AdminRemoveRequest{Admin: "root", By: "ops"}), "", StatusApplied},
		{"a signing store's admins have keys", root, func(m *StoreMeta) { m.RequireSignatures = true }, time.Time{},
			CallOf(AdminAddRequest{Admin: "ops", By: "root"}), CodeInvalidRequest, ""},
		{"signatures turned on need an admin with a key", []Admin{{ID: "root", AddedAt: gdT0}}, nil, time.Time{},
			CallOf(InitRequest{FormatVersion: FormatVersion, RequireSignatures: true, By: "root"}), CodeInvalidRequest, ""},
		{"an agent may not take an admin's key", root, nil, time.Time{},
			CallOf(RegisterRequest{Goal: "g", Agent: "newbie", SigningKey: keyRoot}), CodeInvalidRequest, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := govFix(t, c.admins, c.meta)
			head := c.head
			if head.IsZero() {
				head = gdT0
			}
			v := NewView(f.files, "rev", head)
			call := c.call.Clone()
			if err := call.Resolve(v, Defaults{}, gdT0); err != nil {
				t.Fatal(err)
			}
			o, err := call.Decide(v, gdT0)
			if c.code != "" {
				e, ok := AsError(err)
				if !ok || e.Code != c.code {
					t.Fatalf("got %v (outcome %+v), want %s", err, o, c.code)
				}
				if len(v.Changes()) != 0 {
					t.Fatalf("a refusal wrote %d records", len(v.Changes()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != c.status || o.Write != (c.status == StatusApplied) {
				t.Fatalf("status %s write %v, want %s", o.Status, o.Write, c.status)
			}
		})
	}
}

// TestGovernanceSigner: in a store with admins, a governance commit made
// as an admin is signed with the admin's key, not any agent's; an open
// store's first admin signs with the key it adds.
func TestGovernanceSigner(t *testing.T) {
	keyRoot, keyA, keyNew := edKey(t), edKey(t), edKey(t)
	root := []Admin{{ID: "root", SigningKey: keyRoot, AddedAt: gdT0}}
	cases := []struct {
		name   string
		admins []Admin
		call   Call
		o      Outcome
		keys   []string
		refuse string
	}{
		{"admin registers an orchestrator", root, CallOf(RegisterRequest{Goal: "g", Agent: "boss", Role: RoleOrchestrator, By: "root"}),
			Outcome{Goal: "g", Actor: "root", TargetAgent: "boss"}, []string{keyRoot}, ""},
		{"admin archives a goal", root, CallOf(GoalArchiveRequest{Goal: "g", Actor: "root"}),
			Outcome{Goal: "g", Actor: "root"}, []string{keyRoot}, ""},
		{"admin resets the clock", root, CallOf(ClockResetRequest{Actor: "root", Reason: "x"}),
			Outcome{Actor: "root"}, []string{keyRoot}, ""},
		{"admin changes settings", root, CallOf(InitRequest{FormatVersion: FormatVersion, MaxClockSkewSeconds: 60, By: "root"}),
			Outcome{Actor: "root"}, []string{keyRoot}, ""},
		{"admin re-keys an agent", root, CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyNew, By: "root"}),
			Outcome{Goal: "g", Actor: "root"}, []string{keyRoot}, ""},
		{"an agent's own rotation stays its own", root, CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyNew}),
			Outcome{Goal: "g", Actor: "agent-a"}, []string{keyA}, ""},
		{"a keyless admin cannot sign", []Admin{{ID: "root", AddedAt: gdT0}}, CallOf(GoalArchiveRequest{Goal: "g", Actor: "root"}),
			Outcome{Goal: "g", Actor: "root"}, nil, "admin root has no signing key"},
		{"an open store's first admin signs with its new key", nil, CallOf(AdminAddRequest{Admin: "root", SigningKey: keyNew}),
			Outcome{Actor: "root"}, []string{keyNew}, ""},
		{"a plain acquire by an admin who is an agent: the agent's key", root, CallOf(AcquireRequest{Goal: "g", Todo: "todo_x1", Owner: "agent-a"}),
			Outcome{Goal: "g", Actor: "agent-a"}, []string{keyA}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := govFix(t, c.admins, func(m *StoreMeta) { m.RequireSignatures = true })
			f.keyed("g", "agent-a", RoleAgent, keyA, nil, false)
			r, err := CommitSigner(NewView(f.files, "rev", gdT0), c.call, &c.o)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Required {
				t.Fatal("not required in a signing store")
			}
			if strings.Join(r.Keys, ",") != strings.Join(c.keys, ",") || !strings.Contains(r.Refusal, c.refuse) || (c.refuse == "") != (r.Refusal == "") {
				t.Fatalf("keys %v refusal %q; want %v %q", r.Keys, r.Refusal, c.keys, c.refuse)
			}
		})
	}
}

func TestStoreMetaValidateAdmins(t *testing.T) {
	key := edKey(t)
	base := func() *StoreMeta {
		return &StoreMeta{FormatVersion: FormatVersion, StoreID: strings.Repeat("0f", 16), CreatedAt: gdT0}
	}
	cases := []struct {
		name string
		mod  func(m *StoreMeta)
		ok   bool
	}{
		{"plain", func(m *StoreMeta) {}, true},
		{"admins sorted", func(m *StoreMeta) { m.Admins = []Admin{{ID: "a"}, {ID: "b", SigningKey: key}} }, true},
		{"admins unsorted", func(m *StoreMeta) { m.Admins = []Admin{{ID: "b"}, {ID: "a"}} }, false},
		{"admin repeated", func(m *StoreMeta) { m.Admins = []Admin{{ID: "a"}, {ID: "a"}} }, false},
		{"bad admin id", func(m *StoreMeta) { m.Admins = []Admin{{ID: "A"}} }, false},
		{"bad admin key", func(m *StoreMeta) { m.Admins = []Admin{{ID: "a", SigningKey: "ssh-ed25519 AAAA"}} }, false},
		{"bad store id", func(m *StoreMeta) { m.StoreID = "xyz" }, false},
		{"bad registration", func(m *StoreMeta) { m.Registration = "closed" }, false},
		{"admin registration", func(m *StoreMeta) { m.Registration = RegistrationAdmin }, true},
	}
	for _, c := range cases {
		m := base()
		c.mod(m)
		if err := m.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestValidStoreID: a store id is exactly 32 lowercase hex digits.
func TestValidStoreID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"0123456789abcdef0123456789abcdef", true},
		{"ffffffffffffffffffffffffffffffff", true},
		{"0123456789abcdef0123456789abcde", false},
		{"0123456789abcdef0123456789abcdef0", false},
		{"0123456789ABCDEF0123456789abcdef", false},
		{"0123456789abcdeg0123456789abcdef", false},
		{"0123456789abcdef0123456789abcde/", false},
		{"0123456789abcdef0123456789abcde:", false},
		{"", false},
	} {
		if got := ValidStoreID(c.id); got != c.want {
			t.Errorf("ValidStoreID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}
