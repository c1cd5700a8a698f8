package lease

import (
	"strings"
	"testing"
)

// keyed writes an agent record with a role, authority and key.
func (f *gdFix) keyed(goal, id, role, key string, auth []string, reason bool) {
	f.files[AgentPath(goal, id)] = Encode(&Agent{ID: id, Role: role, Status: AgentRegistered, RegisteredAt: gdT0, UpdatedAt: gdT0,
		SigningKey: key, LifecycleAuthority: auth, RequiresReason: reason})
}

func TestRotateKey(t *testing.T) {
	oldA, newA, keyB := edKey(t), edKey(t), edKey(t)
	cases := []struct {
		name   string
		req    RotateKeyRequest
		status string
		actor  string
		code   Code
		msg    string
	}{
		{"the agent itself", RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: newA + " laptop"}, StatusApplied, "agent-a", "", ""},
		{"by itself named as by", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "agent-a", SigningKey: newA}, StatusApplied, "agent-a", "", ""},
		{"the same key is no_change", RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: oldA}, StatusNoChange, "agent-a", "", ""},
		{"an orchestrator with reassign", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "orch", SigningKey: newA}, StatusApplied, "orch", "", ""},
		{"an orchestrator gives a key to an agent without one", RotateKeyRequest{Goal: "g", Agent: "agent-n", By: "orch", SigningKey: newA}, StatusApplied, "orch", "", ""},
		{"an orchestrator without reassign", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "orch-weak", SigningKey: newA}, "", "", CodeAuthorityRequired, "reassign authority"},
		{"a plain agent for another", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "agent-b", SigningKey: newA}, "", "", CodeAuthorityRequired, "reassign authority"},
		{"an orchestrator that must give a reason", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "orch-why", SigningKey: newA}, "", "", CodeAuthorityRequired, "--authority-reason"},
		{"with the reason", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "orch-why", SigningKey: newA, AuthorityReason: "lost laptop"}, StatusApplied, "orch-why", "", ""},
		{"another agent's key", RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyB}, "", "", CodeInvalidRequest, "registered for agent agent-b"},
		{"no key", RotateKeyRequest{Goal: "g", Agent: "agent-a"}, "", "", CodeInvalidRequest, "--signing-key"},
		{"bad key", RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: "ssh-ed25519 x"}, "", "", CodeInvalidRequest, "signing_key"},
		{"unregistered agent", RotateKeyRequest{Goal: "g", Agent: "agent-gone", SigningKey: newA}, "", "", CodeAgentNotRegistered, ""},
		{"unregistered orchestrator", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "nobody", SigningKey: newA}, "", "", CodeAgentNotRegistered, ""},
		{"bad by", RotateKeyRequest{Goal: "g", Agent: "agent-a", By: "Bad!", SigningKey: newA}, "", "", CodeInvalidAgentID, ""},
		{"unknown goal", RotateKeyRequest{Goal: "nope", Agent: "agent-a", SigningKey: newA}, "", "", CodeGoalNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newGD()
			f.goal("g")
			f.keyed("g", "agent-a", RoleAgent, oldA, nil, false)
			f.keyed("g", "agent-b", RoleAgent, keyB, nil, false)
			f.keyed("g", "agent-n", RoleAgent, "", nil, false)
			f.keyed("g", "orch", RoleOrchestrator, "", []string{ActionReassign}, false)
			f.keyed("g", "orch-weak", RoleOrchestrator, "", []string{ActionComplete}, false)
			f.keyed("g", "orch-why", RoleOrchestrator, "", []string{ActionReassign}, true)
			f.agent("g", "agent-gone", AgentUnregistered)
			call := CallOf(c.req)
			v := NewView(f.files, "rev", gdT0)
			if err := call.Resolve(v, Defaults{}, gdT0); err != nil {
				t.Fatal(err)
			}
			o, err := call.Decide(v, gdT0)
			if c.code != "" {
				e, ok := AsError(err)
				if !ok || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
					t.Fatalf("err = %v, want %s %q", err, c.code, c.msg)
				}
				if len(v.Changes()) != 0 {
					t.Fatal("a refusal wrote something")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != c.status || o.Actor != c.actor || o.Operation != OpAgentRotateKey {
				t.Fatalf("outcome %s by %s (%s), want %s by %s", o.Status, o.Actor, o.Operation, c.status, c.actor)
			}
			if o.Status == StatusNoChange {
				if o.Write || len(v.Changes()) != 0 {
					t.Fatal("no_change wrote")
				}
				return
			}
			a, err := v.Agent("g", c.req.Agent)
			if err != nil || a.SigningKey != newA || a.Registration != 0 || a.Status != AgentRegistered {
				t.Fatalf("agent after rotation: %+v %v", a, err)
			}
			if prev := o.Data.(RotateKeyData).PreviousKey; c.req.Agent == "agent-a" && prev != oldA {
				t.Fatalf("previous key %q", prev)
			}
			// The recorded request names the actor the trailer names.
			if got := call.actor(); got != c.actor {
				t.Fatalf("request actor %q, want %q", got, c.actor)
			}
			if !strings.Contains(o.Message(), "Loopx-Actor: "+c.actor+"\n") {
				t.Fatalf("message:\n%s", o.Message())
			}
		})
	}
}
