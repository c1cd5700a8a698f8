package lease

import (
	"fmt"
	"testing"
)

func TestAuthorize(t *testing.T) {
	claimedByA := func(t *Todo) { t.ClaimedBy, t.ClaimedAt = "a", timePtr(tcT0) }
	cases := []struct {
		name   string
		todo   func(t *Todo)
		actor  string
		action string
		reason string
		code   Code
		detail [2]string
	}{
		// Unclaimed todos.
		{name: "unclaimed: any registered agent", actor: "b", action: ActionComplete},
		{name: "unclaimed: orchestrator", actor: "orch-c", action: ActionUpdate},
		{name: "unclaimed: unregistered", actor: "zed", action: ActionUpdate, code: CodeAgentNotRegistered},
		{name: "unclaimed: malformed actor", actor: "Zed", action: ActionUpdate, code: CodeInvalidAgentID},
		{name: "unclaimed: excluded", todo: func(t *Todo) { t.ExcludedAgents = []string{"b"} }, actor: "b", action: ActionUpdate, code: CodeAgentExcluded},
		{name: "bound: the bound agent", todo: func(t *Todo) { t.BoundAgent = "b" }, actor: "b", action: ActionComplete},
		{name: "bound: another agent", todo: func(t *Todo) { t.BoundAgent = "b" }, actor: "a", action: ActionComplete,
			code: CodeBoundAgentMismatch, detail: [2]string{"bound_agent", "b"}},
		{name: "bound: orchestrator with the authority", todo: func(t *Todo) { t.BoundAgent = "b" }, actor: "orch", action: ActionSupersede},
		{name: "bound: orchestrator without the authority", todo: func(t *Todo) { t.BoundAgent = "b" }, actor: "orch-c", action: ActionUpdate,
			code: CodeBoundAgentMismatch, detail: [2]string{"bound_agent", "b"}},
		{name: "bound: orchestrator without its reason", todo: func(t *Todo) { t.BoundAgent = "b" }, actor: "orch-r", action: ActionUpdate,
			code: CodeAuthorityRequired},
		{name: "expired claim is unclaimed", todo: func(t *Todo) { claimedByA(t); t.ClaimExpiresAt = timePtr(tcMin(-1)) }, actor: "b", action: ActionComplete},
		// Claimed todos.
		{name: "claimed: owner", todo: claimedByA, actor: "a", action: ActionComplete},
		{name: "claimed: another agent", todo: claimedByA, actor: "b", action: ActionUpdate,
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "claimed: scope agent", todo: func(t *Todo) { claimedByA(t); t.ClaimScopeAgentID = "c" }, actor: "c", action: ActionSupersede},
		{name: "claimed: orchestrator with authority", todo: claimedByA, actor: "orch", action: ActionReassign},
		{name: "claimed: orchestrator lacking the action", todo: claimedByA, actor: "orch-c", action: ActionUpdate,
			code: CodeAuthorityRequired, detail: [2]string{"claimed_by", "a"}},
		{name: "claimed: orchestrator with the action", todo: claimedByA, actor: "orch-c", action: ActionComplete},
		{name: "claimed: reason required and missing", todo: claimedByA, actor: "orch-r", action: ActionComplete,
			code: CodeAuthorityRequired, detail: [2]string{"claimed_by", "a"}},
		{name: "claimed: reason required and given", todo: claimedByA, actor: "orch-r", action: ActionComplete, reason: "a is gone"},
		{name: "claimed: excluded orchestrator", todo: func(t *Todo) { claimedByA(t); t.ExcludedAgents = []string{"orch"} }, actor: "orch", action: ActionComplete,
			code: CodeAgentExcluded},
		{name: "claimed: excluded owner", todo: func(t *Todo) { claimedByA(t); t.ExcludedAgents = []string{"a"} }, actor: "a", action: ActionComplete,
			code: CodeAgentExcluded},
		{name: "claimed: unregistered owner", todo: func(t *Todo) { t.ClaimedBy, t.ClaimedAt = "zed", timePtr(tcT0) }, actor: "zed", action: ActionComplete,
			code: CodeAgentNotRegistered},
		{name: "unknown action", actor: "a", action: "archive", code: CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one")
			if c.todo != nil {
				f.editTodo("todo_one", c.todo)
			}
			v := f.view(tcT0)
			g, _ := v.Goal(tcGoal)
			err := Authorize(v, g, f.todo("todo_one"), c.actor, c.action, c.reason, tcT0)
			e := tcCode(t, err, c.code)
			if e != nil && c.detail[0] != "" && fmt.Sprint(e.Details[c.detail[0]]) != c.detail[1] {
				t.Fatalf("detail %s = %v, want %s", c.detail[0], e.Details[c.detail[0]], c.detail[1])
			}
		})
	}
}

func TestTodoFence(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(f *tcFix)
		actor    string
		proof    *Proof
		code     Code
		verified bool
	}{
		{name: "no lease, no proof", actor: "a"},
		{name: "no lease, a proof", actor: "a", proof: &Proof{IdempotencyKey: "k", ExpectedVersion: 0}, code: CodeLeaseProofMismatch},
		{name: "effective lease, no proof", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(5)) }, actor: "a", code: CodeLeaseFenceRequired},
		{name: "effective lease, exact proof", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(5)) }, actor: "a",
			proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 2}, verified: true},
		{name: "effective lease, wrong version", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(5)) }, actor: "a",
			proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 1}, code: CodeVersionMismatch},
		{name: "effective lease, wrong key", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(5)) }, actor: "a",
			proof: &Proof{IdempotencyKey: "kx", ExpectedVersion: 2}, code: CodeLeaseProofMismatch},
		{name: "effective lease, another owner's proof", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(5)) }, actor: "b",
			proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 2}, code: CodeLeaseProofMismatch},
		{name: "expired lease, no proof", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(-5)) }, actor: "b"},
		{name: "expired lease, exact proof", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 2, 1, tcMin(-5)) }, actor: "a",
			proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 2}, verified: true},
		{name: "claim-conflicting lease, no proof", setup: func(f *tcFix) {
			f.putLease("todo_one", "a", "ka", 2, 1, tcMin(5))
			f.claimTodo("todo_one", "b", nil)
		}, actor: "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one")
			if c.setup != nil {
				c.setup(f)
			}
			_, verified, err := checkTodoFence(f.view(tcT0), tcGoal, f.todo("todo_one"), c.actor, c.proof, tcT0)
			tcCode(t, err, c.code)
			if verified != c.verified {
				t.Fatalf("verified %v", verified)
			}
		})
	}
}
