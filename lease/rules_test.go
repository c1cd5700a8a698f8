package lease

import (
	"strings"
	"testing"
	"time"
)

// TestRulesOfOlderSchemaVersions: where a decision changed, the request of
// the older schema version keeps the older decision, so a commit that
// recorded it re-decides to the same writes and message (verify --history),
// while Call.Current moves the same request to the current version, decided
// by today's rules (what `loopx apply`, sync and the MCP tools do with it).
func TestRulesOfOlderSchemaVersions(t *testing.T) {
	delegated := func(f *tcFix) {
		f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "orch", ScopeAgent: "a", ClaimTTLMinutes: 30}))
	}
	claimedWithTTL := func(f *tcFix) {
		f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a", ClaimTTLMinutes: 30}))
	}
	heldByA := func(f *tcFix) {
		f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 600}))
	}
	one := int64(1)
	type decision struct {
		code   Code   // a refusal
		status string // else the outcome's status
		audit  string // and the audit trail's operation
		in     string // a line of the commit message
		check  func(t *testing.T, td *Todo)
	}
	dropped := func(t *testing.T, td *Todo) {
		if td.ClaimTTLMinutes != 0 || td.ClaimExpiresAt != nil {
			t.Fatalf("TTL kept: %+v", td)
		}
	}
	kept := func(t *testing.T, td *Todo) {
		if td.ClaimTTLMinutes != 30 || td.ClaimExpiresAt == nil || !td.ClaimExpiresAt.Equal(tcMin(30)) {
			t.Fatalf("TTL dropped: %+v", td)
		}
	}
	for _, c := range []struct {
		name     string
		setup    func(f *tcFix)
		at       time.Time
		req      any // a request of the older schema version (rules{1})
		old, cur string
		v1, v2   decision
	}{
		{name: "a scope agent takes its orchestrator's claim", setup: delegated, at: tcMin(1),
			req: &UpdateRequest{Goal: tcGoal, Todo: "todo_one", Actor: "a", ClaimedBy: "a", rules: rules{1}},
			old: "loopx.todo.update/v1", cur: "loopx.todo.update/v2",
			v1: decision{status: StatusApplied, audit: OpTodoUpdate, in: "todo update g/todo_one by a\n", check: dropped},
			v2: decision{code: CodeAuthorityRequired}},
		{name: "an orchestrator takes another agent's claim", setup: claimedWithTTL, at: tcMin(1),
			req: &UpdateRequest{Goal: tcGoal, Todo: "todo_one", Actor: "orch", ClaimedBy: "orch", rules: rules{1}},
			old: "loopx.todo.update/v1", cur: "loopx.todo.update/v2",
			v1: decision{status: StatusApplied, audit: OpTodoUpdate, in: "Loopx-Previous-Holder: a\n"},
			v2: decision{status: StatusApplied, audit: AuditReassign, in: "todo reassign g/todo_one by orch from a\n"}},
		{name: "the holder re-claims without a TTL", setup: claimedWithTTL, at: tcMin(1),
			req: &ClaimRequest{Goal: tcGoal, Todo: "todo_one", Actor: "a", rules: rules{1}},
			old: "loopx.todo.claim/v1", cur: "loopx.todo.claim/v2",
			v1: decision{status: StatusApplied, audit: OpTodoClaim, check: dropped},
			v2: decision{status: StatusNoChange, check: kept}},
		{name: "the holder re-claims with the same TTL in the same second", setup: claimedWithTTL, at: tcT0,
			req: &ClaimRequest{Goal: tcGoal, Todo: "todo_one", Actor: "a", ClaimTTLMinutes: 30, rules: rules{1}},
			old: "loopx.todo.claim/v1", cur: "loopx.todo.claim/v2",
			v1: decision{status: StatusApplied, audit: OpTodoClaim, check: kept},
			v2: decision{status: StatusNoChange, check: kept}},
		{name: "ready --claim again without a TTL", setup: claimedWithTTL, at: tcMin(1),
			req: &ReadyClaimRequest{Goal: tcGoal, Actor: "a", rules: rules{1}},
			old: "loopx.todo.ready-claim/v1", cur: "loopx.todo.ready-claim/v2",
			v1: decision{status: StatusApplied, audit: OpTodoClaim, check: dropped},
			v2: decision{status: StatusNoChange, check: kept}},
		{name: "a same-agent transfer with the claim", setup: heldByA, at: tcMin(1),
			req: &TransferRequest{Goal: tcGoal, Todo: "todo_one", Owner: "a", IdempotencyKey: "exec-a", ExpectedVersion: &one,
				NewOwner: "a", NewIdempotencyKey: "exec-a2", TTLSeconds: 600, TransferClaim: true, rules: rules{1}},
			old: "loopx.task-lease.transfer-claim/v1", cur: "loopx.task-lease.transfer-claim/v2",
			v1: decision{status: StatusApplied, audit: OpLeaseTransfer, in: "Loopx-Claim-Moved: true\n"},
			v2: decision{status: StatusApplied, audit: OpLeaseTransfer, in: "Loopx-Claim-Moved: false\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffHardLease, "todo_one")
			c.setup(f)
			// The request as a commit of an older loopx recorded it.
			old := CallOf(c.req)
			if err := old.Resolve(f.view(c.at), Defaults{}, c.at); err != nil {
				t.Fatal(err)
			}
			raw, err := old.Encode()
			if err != nil {
				t.Fatal(err)
			}
			recorded, err := DecodeRequest(raw)
			if err != nil || recorded.Op.Schema != c.old || !strings.Contains(string(raw), `"schema":"`+c.old+`"`) {
				t.Fatalf("decoded %s as %v (%v)", raw, recorded.Op, err)
			}
			cur := recorded.Current()
			if cur.Op.Schema != c.cur || recorded.Op.Schema != c.old {
				t.Fatalf("Current: %s → %s, want %s", recorded.Op.Schema, cur.Op.Schema, c.cur)
			}
			decide := func(call Call, want decision) *Outcome {
				t.Helper()
				v := f.view(c.at)
				o, err := call.Clone().Decide(v, c.at)
				if want.code != "" {
					tcCode(t, err, want.code)
					return nil
				}
				if err != nil || o.Status != want.status || (want.audit != "" && o.AuditName() != want.audit) {
					t.Fatalf("%s: %+v %v, want %s %s", call.Op.Schema, o, err, want.status, want.audit)
				}
				o.Request = string(raw)
				if want.in != "" && !strings.Contains(o.Message(), want.in) {
					t.Fatalf("%s: message lacks %q:\n%s", call.Op.Schema, want.in, o.Message())
				}
				if want.check != nil {
					td, _ := v.Todo(tcGoal, "todo_one")
					want.check(t, td)
				}
				return o
			}
			decide(recorded, c.v1)
			decide(cur, c.v2)
			// On a store of format 3 on, written only by a loopx of the
			// current rules, the older version is a way around them:
			// refused.
			if _, err := Redecide(f.view(c.at), RecordedCommit{Request: string(raw), Call: recorded}, c.at); err == nil ||
				!strings.Contains(err.Error(), ProblemUnknownSchema) {
				t.Fatalf("Redecide of %s on a format-3 store: %v", c.old, err)
			}
			// Re-verifying the older commit where it was made (a store of
			// format 2): its request re-decides on its parent to the same
			// message and writes.
			f.edit(func(v *View) {
				m, _ := v.Meta()
				m.FormatVersion = 2
				v.PutMeta(m)
			})
			o1 := decide(recorded, c.v1) // as the older loopx decided it there
			rd, err := Redecide(f.view(c.at), RecordedCommit{Request: string(raw), Call: recorded}, c.at)
			if err != nil {
				t.Fatalf("Redecide: %v", err)
			}
			if rd.Message != o1.Message() || len(rd.Changes) == 0 {
				t.Fatalf("Redecide message\n%s\nwant\n%s", rd.Message, o1.Message())
			}
		})
	}
}

// TestCurrentKeepsCurrentCalls: a call of a current schema version (every
// operation that never changed, and the v2 ones) is its own Current, a copy.
func TestCurrentKeepsCurrentCalls(t *testing.T) {
	for _, op := range Operations() {
		if op.rules != 0 {
			continue
		}
		raw := `{"schema":"` + op.Schema + `"}`
		c, err := DecodeRequest([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", op.Schema, err)
		}
		cur := c.Current()
		if cur.Op != c.Op || cur.Req == c.Req {
			t.Errorf("%s: Current = %s (same request value: %v)", op.Schema, cur.Op.Schema, cur.Req == c.Req)
		}
	}
}
