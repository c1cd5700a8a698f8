package lease

import (
	"reflect"
	"strings"
	"testing"
)

func TestCommitSigner(t *testing.T) {
	keyA, keyB, keyNew, keyGone := edKey(t), edKey(t), edKey(t), edKey(t)
	type want struct {
		keys    []string
		any     bool
		refusal string
	}
	sorted := func(k ...string) []string {
		out := append([]string(nil), k...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if out[j] < out[i] {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	}
	cases := []struct {
		name   string
		noKeys bool // a store whose agents hold no keys
		call   Call
		o      Outcome
		want   want
	}{
		{"an agent's operation: its key in the goal", false, CallOf(AcquireRequest{Goal: "g", Todo: "todo_x1", Owner: "agent-a"}),
			Outcome{Goal: "g", Actor: "agent-a"}, want{keys: []string{keyA}}},
		{"an agent without a key cannot sign", false, CallOf(AcquireRequest{Goal: "g", Todo: "todo_x1", Owner: "agent-n"}),
			Outcome{Goal: "g", Actor: "agent-n"}, want{refusal: "agent agent-n has no registered signing key in goal g"}},
		{"an agent unknown in the goal", false, CallOf(AcquireRequest{Goal: "g", Todo: "todo_x1", Owner: "zed"}),
			Outcome{Goal: "g", Actor: "zed"}, want{refusal: "no registered signing key"}},
		{"the key at the parent, never the one the commit writes", false, CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-a", SigningKey: keyNew}),
			Outcome{Goal: "g", Actor: "agent-a"}, want{keys: []string{keyA}}},
		{"an orchestrator's rotation: its own key", false, CallOf(RotateKeyRequest{Goal: "g", Agent: "agent-n", By: "orch", SigningKey: keyNew}),
			Outcome{Goal: "g", Actor: "orch"}, want{refusal: "agent orch has no registered signing key"}},
		{"a registration: the key it registers", false, CallOf(RegisterRequest{Goal: "g", Agent: "newbie", SigningKey: keyNew + " c"}),
			Outcome{Goal: "g", Actor: "newbie"}, want{keys: []string{keyNew}}},
		{"a registration without a key", false, CallOf(RegisterRequest{Goal: "g", Agent: "newbie"}),
			Outcome{Goal: "g", Actor: "newbie"}, want{refusal: "registers with its signing key"}},
		{"registering again: the id's old key signs", false, CallOf(RegisterRequest{Goal: "g", Agent: "gone", SigningKey: keyNew}),
			Outcome{Goal: "g", Actor: "gone"}, want{keys: []string{keyGone}}},
		{"the id's key in another goal signs its registration here", false, CallOf(RegisterRequest{Goal: "h", Agent: "agent-a", SigningKey: keyNew}),
			Outcome{Goal: "h", Actor: "agent-a"}, want{keys: []string{keyA}}},
		{"no goal (clock-reset): the id's keys in any goal", false, CallOf(ClockResetRequest{Actor: "agent-b", Reason: "r"}),
			Outcome{Actor: "agent-b"}, want{keys: []string{keyB}}},
		{"no goal, no key", false, CallOf(ClockResetRequest{Actor: "zed", Reason: "r"}),
			Outcome{Actor: "zed"}, want{refusal: "agent zed has no registered signing key in any goal"}},
		{"no actor: any registered agent's key", false, CallOf(GoalCreateRequest{Goal: "k"}),
			Outcome{Goal: "k"}, want{keys: sorted(keyA, keyB)}},
		{"no actor, no key in the store yet: any signature", true, CallOf(GoalCreateRequest{Goal: "k"}),
			Outcome{Goal: "k"}, want{any: true}},
	}
	for _, c := range cases {
		for _, required := range []bool{true, false} {
			f := newGD()
			f.files[MetaPath] = Encode(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0, RequireSignatures: required})
			f.goal("g")
			f.goal("h")
			if !c.noKeys {
				f.keyed("g", "agent-a", RoleAgent, keyA, nil, false)
				f.keyed("g", "agent-b", RoleAgent, keyB, nil, false)
				f.keyed("g", "agent-n", RoleAgent, "", nil, false)
				f.keyed("g", "orch", RoleOrchestrator, "", []string{ActionReassign}, false)
				f.files[AgentPath("g", "gone")] = Encode(&Agent{ID: "gone", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: gdT0, UpdatedAt: gdT0, SigningKey: keyGone})
			}
			r, err := CommitSigner(NewView(f.files, "rev", gdT0), c.call, &c.o)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if r.Required != required || !reflect.DeepEqual(r.Keys, c.want.keys) || r.AnyKey != c.want.any ||
				(c.want.refusal == "") != (r.Refusal == "") || !strings.Contains(r.Refusal, c.want.refusal) {
				t.Errorf("%s (required=%v): %+v, want %+v", c.name, required, r, c.want)
			}
			for _, k := range c.want.keys {
				if !r.Accepts(k) {
					t.Errorf("%s: does not accept its own key", c.name)
				}
			}
			if !c.want.any && r.Accepts(keyNew) && !reflect.DeepEqual(c.want.keys, []string{keyNew}) {
				t.Errorf("%s: accepts a key it does not name", c.name)
			}
		}
	}
}

func TestInitRequireSignatures(t *testing.T) {
	key := edKey(t)
	cases := []struct {
		name     string
		meta     *StoreMeta
		req      InitRequest
		status   string
		required bool
		skew     int64
	}{
		{"a new store", nil, InitRequest{FormatVersion: FormatVersion, RequireSignatures: true, Admin: "root", AdminKey: key}, StatusApplied, true, 0},
		{"a new store without", nil, InitRequest{FormatVersion: FormatVersion}, StatusApplied, false, 0},
		{"turned on: an audited commit", &StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0}, InitRequest{FormatVersion: FormatVersion, RequireSignatures: true, Admin: "root", AdminKey: key}, StatusApplied, true, 0},
		{"already on", &StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0, RequireSignatures: true}, InitRequest{FormatVersion: FormatVersion, RequireSignatures: true}, StatusNoChange, true, 0},
		{"never turned off by an init without it", &StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0, RequireSignatures: true}, InitRequest{FormatVersion: FormatVersion}, StatusNoChange, true, 0},
		{"kept when the skew changes", &StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0, RequireSignatures: true}, InitRequest{FormatVersion: FormatVersion, MaxClockSkewSeconds: 60}, StatusApplied, true, 60},
		{"both at once", &StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0, MaxClockSkewSeconds: 60}, InitRequest{FormatVersion: FormatVersion, RequireSignatures: true, Admin: "root", AdminKey: key}, StatusApplied, true, 60},
		{"signatures without an admin with a key", nil, InitRequest{FormatVersion: FormatVersion, RequireSignatures: true}, "refused", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := MemFiles{}
			if c.meta != nil {
				files[MetaPath] = Encode(c.meta)
			}
			v := NewView(files, "rev", gdT0)
			o, err := Init(v, c.req, gdT0)
			if c.status == "refused" {
				if e, ok := AsError(err); !ok || e.Code != CodeInvalidRequest {
					t.Fatalf("got %v, want invalid_request", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != c.status || o.Write != (c.status == StatusApplied) {
				t.Fatalf("status %s write %v, want %s", o.Status, o.Write, c.status)
			}
			m, err := v.Meta()
			if err != nil || m.RequireSignatures != c.required || m.MaxClockSkewSeconds != c.skew {
				t.Fatalf("meta %+v %v", m, err)
			}
		})
	}
}
