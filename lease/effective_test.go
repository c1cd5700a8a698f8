package lease

import (
	"reflect"
	"testing"
	"time"
)

func tlTime(sec int) *time.Time { t := tlAt(sec); return &t }

func TestClaimEffective(t *testing.T) {
	now := tlAt(100)
	cases := []struct {
		name string
		todo *Todo
		want bool
		who  string
	}{
		{"nil todo", nil, false, ""},
		{"unclaimed", &Todo{}, false, ""},
		{"claimed without expiry", &Todo{ClaimedBy: "agent-a"}, true, "agent-a"},
		{"claim expires later", &Todo{ClaimedBy: "agent-a", ClaimExpiresAt: tlTime(101)}, true, "agent-a"},
		{"claim expires now", &Todo{ClaimedBy: "agent-a", ClaimExpiresAt: tlTime(100)}, false, ""},
		{"claim expired", &Todo{ClaimedBy: "agent-a", ClaimExpiresAt: tlTime(10)}, false, ""},
	}
	for _, c := range cases {
		if got := ClaimEffective(c.todo, now); got != c.want {
			t.Errorf("%s: ClaimEffective = %v, want %v", c.name, got, c.want)
		}
		if got := EffectiveClaimant(c.todo, now); got != c.who {
			t.Errorf("%s: EffectiveClaimant = %q, want %q", c.name, got, c.who)
		}
	}
}

func TestHoldsClaim(t *testing.T) {
	now := tlAt(100)
	claimed := &Todo{ClaimedBy: "agent-a"}
	delegated := &Todo{ClaimedBy: "orch", ClaimScopeAgentID: "agent-a"}
	expired := &Todo{ClaimedBy: "agent-a", ClaimExpiresAt: tlTime(50)}
	cases := []struct {
		name  string
		todo  *Todo
		agent string
		want  bool
	}{
		{"nil todo", nil, "agent-a", false},
		{"unclaimed", &Todo{}, "agent-a", false},
		{"claimed_by", claimed, "agent-a", true},
		{"another agent", claimed, "agent-b", false},
		{"scope agent", delegated, "agent-a", true},
		{"delegating claimant", delegated, "orch", true},
		{"third agent on a delegated claim", delegated, "agent-b", false},
		{"expired claim", expired, "agent-a", false},
		{"empty agent never holds a claim", claimed, "", false},
	}
	for _, c := range cases {
		if got := HoldsClaim(c.todo, c.agent, now); got != c.want {
			t.Errorf("%s: HoldsClaim = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLeaseEffective(t *testing.T) {
	now := tlAt(100)
	lease := func(mod func(l *Lease)) *Lease {
		l := &Lease{TodoID: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", Version: 1, Epoch: 1, Status: LeaseActive, ExpiresAt: tlAt(200)}
		if mod != nil {
			mod(l)
		}
		return l
	}
	todo := func(mod func(t *Todo)) *Todo {
		t := &Todo{ID: "todo_aaa", Status: TodoOpen}
		if mod != nil {
			mod(t)
		}
		return t
	}
	owner := &Agent{ID: "agent-a", Status: AgentRegistered}
	cases := []struct {
		name  string
		l     *Lease
		t     *Todo
		owner *Agent
		want  bool
	}{
		{"effective", lease(nil), todo(nil), owner, true},
		{"nil lease", nil, todo(nil), owner, false},
		{"released", lease(func(l *Lease) { l.Status = LeaseReleased }), todo(nil), owner, false},
		{"expires now", lease(func(l *Lease) { l.ExpiresAt = now }), todo(nil), owner, false},
		{"expired", lease(func(l *Lease) { l.ExpiresAt = tlAt(1) }), todo(nil), owner, false},
		{"nil todo", lease(nil), nil, owner, false},
		{"todo done", lease(nil), todo(func(t *Todo) { t.Status = TodoDone }), owner, false},
		{"todo superseded", lease(nil), todo(func(t *Todo) { t.Status = TodoSuperseded }), owner, false},
		{"todo archived", lease(nil), todo(func(t *Todo) { t.Archived = true }), owner, false},
		{"owner missing", lease(nil), todo(nil), nil, false},
		{"owner unregistered", lease(nil), todo(nil), &Agent{ID: "agent-a", Status: AgentUnregistered}, false},
		{"another agent's registration", lease(nil), todo(nil), &Agent{ID: "agent-b", Status: AgentRegistered}, false},
		{"owner excluded", lease(nil), todo(func(t *Todo) { t.ExcludedAgents = []string{"agent-x", "agent-a"} }), owner, false},
		{"other agent excluded", lease(nil), todo(func(t *Todo) { t.ExcludedAgents = []string{"agent-b"} }), owner, true},
		{"claimed by owner", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "agent-a" }), owner, true},
		{"owner is the scope agent", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "orch"; t.ClaimScopeAgentID = "agent-a" }), owner, true},
		{"claimed by another agent", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "agent-b" }), owner, false},
		{"owner registered again after the grant", lease(func(l *Lease) { l.OwnerRegistration = 1 }), todo(nil), &Agent{ID: "agent-a", Status: AgentRegistered, Registration: 2}, false},
		{"granted under the owner's current registration", lease(func(l *Lease) { l.OwnerRegistration = 2 }), todo(nil), &Agent{ID: "agent-a", Status: AgentRegistered, Registration: 2}, true},
		{"another agent's claim expired", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "agent-b"; t.ClaimExpiresAt = tlTime(50) }), owner, true},
	}
	for _, c := range cases {
		if got := LeaseEffective(c.l, c.t, c.owner, now); got != c.want {
			t.Errorf("%s: LeaseEffective = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCheckProof(t *testing.T) {
	l := &Lease{TodoID: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", Version: 4, Epoch: 2, Status: LeaseActive}
	released := *l
	released.Status = LeaseReleased
	cases := []struct {
		name     string
		l        *Lease
		owner    string
		key      string
		expected int64
		code     Code
	}{
		{"exact", l, "agent-a", "k1", 4, ""},
		{"exact on a released lease (release decides what that means)", &released, "agent-a", "k1", 4, ""},
		{"stale version", l, "agent-a", "k1", 3, CodeVersionMismatch},
		{"future version", l, "agent-a", "k1", 5, CodeVersionMismatch},
		{"wrong version and owner: version first", l, "agent-b", "k1", 3, CodeVersionMismatch},
		{"other owner", l, "agent-b", "k1", 4, CodeLeaseProofMismatch},
		{"other key", l, "agent-a", "k2", 4, CodeLeaseProofMismatch},
		{"no lease at version 0", nil, "agent-a", "k1", 0, CodeLeaseProofMismatch},
		{"no lease at version 1", nil, "agent-a", "k1", 1, CodeVersionMismatch},
	}
	for _, c := range cases {
		err := CheckProof(c.l, c.owner, c.key, c.expected, "rev9")
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		e, ok := AsError(err)
		if !ok || e.Code != c.code {
			t.Errorf("%s: got %v, want %s", c.name, err, c.code)
			continue
		}
		if c.code == CodeVersionMismatch {
			cur := int64(0)
			if c.l != nil {
				cur = c.l.Version
			}
			want := map[string]any{"expected_version": c.expected, "current_version": cur, "provider": "git", "revision": "rev9"}
			if !reflect.DeepEqual(e.Details, want) {
				t.Errorf("%s: details %v, want %v", c.name, e.Details, want)
			}
		}
	}
}

func TestEndExecution(t *testing.T) {
	l := &Lease{Status: LeaseActive, Version: 3, Epoch: 2, Holders: []Holder{
		{Epoch: 1, EndedAt: tlTime(1), EndReason: EndTransferred}, {Epoch: 2}}}
	EndExecution(l, tlAt(9), "completed")
	if l.Status != LeaseReleased || !l.ReleasedAt.Equal(tlAt(9)) || l.Version != 3 || l.Epoch != 2 ||
		l.Holders[1].EndReason != "completed" || !l.Holders[1].EndedAt.Equal(tlAt(9)) || l.Holders[0].EndReason != EndTransferred {
		t.Fatalf("lease %+v", l)
	}
	// A lease without holder history (an older record) is released all the same.
	bare := &Lease{Status: LeaseActive, Version: 1, Epoch: 1}
	EndExecution(bare, tlAt(9), "completed")
	if bare.Status != LeaseReleased || !bare.ReleasedAt.Equal(tlAt(9)) || len(bare.Holders) != 0 {
		t.Fatalf("lease %+v", bare)
	}
}
