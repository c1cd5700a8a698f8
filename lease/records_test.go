package lease

import (
	"strings"
	"testing"
)

// TestRecordValidate: every field a record's schema constrains is checked on
// its own, whatever the fields checked before it (one bad field per case,
// against a valid record).
func TestRecordValidate(t *testing.T) {
	at := tlAt(0)
	todo := func(edit func(td *Todo)) record {
		td := &Todo{ID: "todo_abc", Text: "x", Status: TodoOpen, Priority: DefaultPriority, CreatedAt: at, UpdatedAt: at}
		if edit != nil {
			edit(td)
		}
		return td
	}
	lease := func(edit func(l *Lease)) *Lease {
		l := &Lease{TodoID: "todo_abc", Owner: "agent-a", IdempotencyKey: "k", Version: 1, Epoch: 1, Status: LeaseActive, AcquiredAt: at, ExpiresAt: tlAt(60)}
		if edit != nil {
			edit(l)
		}
		return l
	}
	receipt := func(edit func(r *Receipt)) record {
		r := &Receipt{ID: strings.Repeat("a", 64), Operation: OpLeaseAcquire, RequestDigest: "d", Status: "applied"}
		if edit != nil {
			edit(r)
		}
		return r
	}
	goal := func(edit func(g *Goal)) record {
		g := &Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: at, UpdatedAt: at}
		if edit != nil {
			edit(g)
		}
		return g
	}
	cases := []struct {
		name string
		rec  record
		ok   bool
	}{
		{"todo", todo(nil), true},
		{"todo: status", todo(func(td *Todo) { td.Status = "doing" }), false},
		{"todo: priority", todo(func(td *Todo) { td.Priority = "P9" }), false},
		{"todo: depends_on", todo(func(td *Todo) { td.DependsOn = []string{"nope"} }), false},
		{"todo: required_write_scopes", todo(func(td *Todo) { td.RequiredWriteScopes = []string{"/abs"} }), false},
		{"todo: 65 required_write_scopes", todo(func(td *Todo) { td.RequiredWriteScopes = manyScopes(65) }), false},
		{"todo: 64 required_write_scopes", todo(func(td *Todo) { td.RequiredWriteScopes = manyScopes(64) }), true},
		{"todo: a 257-byte scope", todo(func(td *Todo) { td.RequiredWriteScopes = []string{strings.Repeat("a", 257)} }), false},
		// a scope an older loopx accepted, now refused in requests, is kept
		{"todo: a scope with a class matching '/'", todo(func(td *Todo) { td.RequiredWriteScopes = []string{"src/[!_]*.go"} }), true},
		{"todo: excluded_agents", todo(func(td *Todo) { td.ExcludedAgents = []string{"Agent A"} }), false},
		{"todo: claim fields without claimed_by", todo(func(td *Todo) { td.ClaimScopeAgentID = "agent-a" }), false},
		{"lease", lease(nil), true},
		{"lease: status", lease(func(l *Lease) { l.Status = "paused" }), false},
		{"lease: write_scopes", lease(func(l *Lease) { l.WriteScopes = []string{"a/../b"} }), false},
		{"lease: 65 write_scopes", lease(func(l *Lease) { l.WriteScopes = manyScopes(65) }), false},
		{"lease: 64 write_scopes", lease(func(l *Lease) { l.WriteScopes = manyScopes(64) }), true},
		{"lease: an exponential scope of an older loopx", lease(func(l *Lease) { l.WriteScopes = []string{"**/" + strings.Repeat("{?,}", 30) + "q"} }), true},
		{"lease: holder", lease(func(l *Lease) { l.Holders = []Holder{{Epoch: 1, Owner: "Agent A", IdempotencyKey: "k"}} }), false},
		{"receipt", receipt(nil), true},
		{"receipt: status", receipt(func(r *Receipt) { r.Status = "refused" }), false},
		{"receipt: its lease", receipt(func(r *Receipt) { r.Lease = lease(func(l *Lease) { l.Version = 0 }) }), false},
		{"goal", goal(nil), true},
		{"goal: status", goal(func(g *Goal) { g.Status = "paused" }), false},
		{"goal: handoff_mode", goal(func(g *Goal) { g.HandoffMode = "free_for_all" }), false},
		{"meta: skew at the 86400 s limit", &StoreMeta{FormatVersion: FormatVersion, MaxClockSkewSeconds: 86400, CreatedAt: at}, true},
		{"meta: skew past the limit", &StoreMeta{FormatVersion: FormatVersion, MaxClockSkewSeconds: 86401, CreatedAt: at}, false},
	}
	for _, c := range cases {
		if err := c.rec.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
