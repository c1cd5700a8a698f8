package lease

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// LeaseLapse names the rule that takes a lease out of force, and agrees with
// LeaseEffective on every case.
func TestLeaseLapse(t *testing.T) {
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
		want  string
	}{
		{"in force", lease(nil), todo(nil), owner, ""},
		{"nil lease", nil, todo(nil), owner, LapseReleased},
		{"released", lease(func(l *Lease) { l.Status = LeaseReleased }), todo(nil), owner, LapseReleased},
		{"expires now", lease(func(l *Lease) { l.ExpiresAt = now }), todo(nil), owner, LapseExpired},
		{"expired", lease(func(l *Lease) { l.ExpiresAt = tlAt(1) }), todo(nil), owner, LapseExpired},
		{"expired and unregistered: expiry first", lease(func(l *Lease) { l.ExpiresAt = tlAt(1) }), todo(nil), nil, LapseExpired},
		{"todo done", lease(nil), todo(func(t *Todo) { t.Status = TodoDone }), owner, LapseTodoClosed},
		{"todo archived", lease(nil), todo(func(t *Todo) { t.Archived = true }), owner, LapseTodoClosed},
		{"nil todo", lease(nil), nil, owner, LapseTodoClosed},
		{"owner missing", lease(nil), todo(nil), nil, LapseOwnerUnregistered},
		{"owner unregistered", lease(nil), todo(nil), &Agent{ID: "agent-a", Status: AgentUnregistered}, LapseOwnerUnregistered},
		{"another agent's registration", lease(nil), todo(nil), &Agent{ID: "agent-b", Status: AgentRegistered}, LapseOwnerUnregistered},
		{"owner excluded", lease(nil), todo(func(t *Todo) { t.ExcludedAgents = []string{"agent-a"} }), owner, LapseOwnerExcluded},
		{"registered again", lease(func(l *Lease) { l.OwnerRegistration = 1 }), todo(nil), &Agent{ID: "agent-a", Status: AgentRegistered, Registration: 2}, LapseOwnerRegisteredAgain},
		{"claimed by another agent", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "agent-b" }), owner, LapseClaimHeldByOther},
		{"claimed by the owner", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "agent-a" }), owner, ""},
		{"owner is the scope agent", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "orch"; t.ClaimScopeAgentID = "agent-a" }), owner, ""},
		{"another agent's claim expired", lease(nil), todo(func(t *Todo) { t.ClaimedBy = "agent-b"; t.ClaimExpiresAt = tlTime(50) }), owner, ""},
	}
	for _, c := range cases {
		got := LeaseLapse(c.l, c.t, c.owner, now)
		if got != c.want {
			t.Errorf("%s: LeaseLapse = %q, want %q", c.name, got, c.want)
		}
		if eff := LeaseEffective(c.l, c.t, c.owner, now); eff != (got == "") {
			t.Errorf("%s: LeaseLapse %q disagrees with LeaseEffective %v", c.name, got, eff)
		}
	}
}

func TestSecondsLeft(t *testing.T) {
	now := tlAt(100)
	cases := []struct {
		until time.Time
		want  int64
	}{
		{tlAt(100), 0},
		{tlAt(340), 240},
		{tlAt(100).Add(1500 * time.Millisecond), 1},
		{tlAt(40), -60},
		{tlAt(100).Add(-500 * time.Millisecond), -1}, // expired half a second ago: already past
	}
	for _, c := range cases {
		if got := *secondsLeft(c.until, now); got != c.want {
			t.Errorf("secondsLeft(%v) = %d, want %d", c.until.Sub(now), got, c.want)
		}
	}
}

// holdingLine is a holding in one line, for comparing lists.
func holdingLine(h Holding) string {
	s := h.Kind + " " + h.TodoID + " " + h.Owner
	if h.Epoch != nil {
		s += fmt.Sprintf(" e%d v%d", *h.Epoch, *h.Version)
	}
	if h.SecondsLeft != nil {
		s += fmt.Sprintf(" %ds", *h.SecondsLeft)
	} else {
		s += " -"
	}
	if h.Reason != "" {
		s += " " + h.Reason
	}
	return s
}

func holdingLines(hs []Holding) string {
	var out []string
	for _, h := range hs {
		out = append(out, holdingLine(h))
	}
	return strings.Join(out, "; ")
}

func TestStatus(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(f *tcFix)
		agent   string
		active  string
		expired string
		ready   string
		next    *time.Time
		code    Code
	}{
		{name: "nothing held", ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "a lease in force", setup: func(f *tcFix) { f.putLease("todo_aaa", "a", "ka", 3, 2, tcMin(4), "src/**") },
			active: "lease todo_aaa a e2 v3 240s", ready: "todo_bbb todo_ccc", next: timePtr(tcMin(4))},
		{name: "soonest expiry first, claims without expiry last", setup: func(f *tcFix) {
			f.putLease("todo_aaa", "a", "ka", 1, 1, tcMin(10))
			f.putLease("todo_bbb", "b", "kb", 1, 1, tcMin(2))
			f.claimTodo("todo_ccc", "c", nil)
			f.claimTodo("todo_aaa", "a", func(t *Todo) { t.ClaimExpiresAt = timePtr(tcMin(5)) })
		}, active: "lease todo_bbb b e1 v1 120s; claim todo_aaa a 300s; lease todo_aaa a e1 v1 600s; claim todo_ccc c -",
			next: timePtr(tcMin(2))},
		{name: "expired lease not yet taken over", setup: func(f *tcFix) { f.putLease("todo_aaa", "a", "ka", 1, 1, tcMin(-2)) },
			expired: "lease todo_aaa a e1 v1 -120s expired", ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "expired claim", setup: func(f *tcFix) {
			f.claimTodo("todo_bbb", "b", func(t *Todo) { t.ClaimExpiresAt = timePtr(tcMin(-1)) })
		}, expired: "claim todo_bbb b -60s expired", ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "unregistered owner", setup: func(f *tcFix) {
			f.putLease("todo_aaa", "b", "kb", 1, 1, tcMin(10))
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, expired: "lease todo_aaa b e1 v1 600s owner_unregistered", ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "longest expired first", setup: func(f *tcFix) {
			f.putLease("todo_aaa", "a", "ka", 1, 1, tcMin(-1))
			f.putLease("todo_bbb", "b", "kb", 1, 1, tcMin(-5))
		}, expired: "lease todo_bbb b e1 v1 -300s expired; lease todo_aaa a e1 v1 -60s expired", ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "released lease is no holding", setup: func(f *tcFix) {
			f.putLease("todo_aaa", "a", "ka", 1, 1, tcMin(10))
			f.edit(func(v *View) {
				l, _ := v.Lease(tcGoal, "todo_aaa")
				EndExecution(l, tcT0, EndReleased)
				v.PutLease(tcGoal, l)
			})
		}, ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "closed todo holds nothing", setup: func(f *tcFix) {
			f.putLease("todo_aaa", "a", "ka", 1, 1, tcMin(10))
			f.claimTodo("todo_aaa", "a", nil)
			f.editTodo("todo_aaa", func(t *Todo) { t.Status = TodoDone })
		}, ready: "todo_bbb todo_ccc"},
		{name: "ready for one agent", setup: func(f *tcFix) {
			f.claimTodo("todo_aaa", "a", nil)
			f.editTodo("todo_ccc", func(t *Todo) { t.ExcludedAgents = []string{"b"} })
		}, agent: "b", active: "claim todo_aaa a -", ready: "todo_bbb"},
		{name: "ready includes the agent's own claim", setup: func(f *tcFix) { f.claimTodo("todo_aaa", "a", nil) },
			agent: "a", active: "claim todo_aaa a -", ready: "todo_aaa todo_bbb todo_ccc"},
		{name: "unregistered agent", agent: "zed", code: CodeAgentNotRegistered},
		{name: "malformed agent", agent: "Bad Agent", code: CodeInvalidAgentID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_aaa", "todo_bbb", "todo_ccc")
			if c.setup != nil {
				c.setup(f)
			}
			o, err := Status(f.view(tcT0), tcGoal, c.agent, tcT0)
			if c.code != "" {
				if e, ok := AsError(err); !ok || e.Code != c.code {
					t.Fatalf("err %v, want %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := o.Data.(*StatusData)
			if d.Active == nil || d.Expired == nil || d.Ready == nil {
				t.Fatalf("nil list in %+v", d)
			}
			if got := holdingLines(d.Active); got != c.active {
				t.Errorf("active: %s\n  want %s", got, c.active)
			}
			if got := holdingLines(d.Expired); got != c.expired {
				t.Errorf("expired: %s\n  want %s", got, c.expired)
			}
			var ready []string
			for _, r := range d.Ready {
				ready = append(ready, r.TodoID)
			}
			if got := strings.Join(ready, " "); got != c.ready {
				t.Errorf("ready: %s, want %s", got, c.ready)
			}
			if (d.NextExpiry == nil) != (c.next == nil) || (c.next != nil && !d.NextExpiry.Equal(*c.next)) {
				t.Errorf("next expiry %v, want %v", d.NextExpiry, c.next)
			}
			if o.Operation != OpStatus || o.Write {
				t.Errorf("outcome %s write=%v", o.Operation, o.Write)
			}
		})
	}
}

func TestNextExpiry(t *testing.T) {
	now := tlAt(100)
	at := func(s int) *time.Time { return tlTime(s) }
	cases := []struct {
		name string
		hs   []Holding
		want *time.Time
	}{
		{"none", nil, nil},
		{"no expiry", []Holding{{}}, nil},
		{"past and now are not next", []Holding{{ExpiresAt: at(50)}, {ExpiresAt: at(100)}}, nil},
		{"soonest future", []Holding{{ExpiresAt: at(300)}, {ExpiresAt: at(50)}, {ExpiresAt: at(150)}, {}}, at(150)},
	}
	for _, c := range cases {
		got := NextExpiry(c.hs, now)
		if (got == nil) != (c.want == nil) || (got != nil && !got.Equal(*c.want)) {
			t.Errorf("%s: NextExpiry = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSortHoldings: soonest expiry first, holdings without an expiry last,
// ties by todo id, then kind.
func TestSortHoldings(t *testing.T) {
	at := func(s int) *time.Time { x := tlAt(s); return &x }
	h := func(todo, kind string, exp *time.Time) Holding {
		return Holding{TodoID: todo, Kind: kind, ExpiresAt: exp}
	}
	cases := []struct {
		name     string
		in, want []Holding
	}{
		{"no expiry goes last", []Holding{h("todo_a", "claim", nil), h("todo_b", "lease", at(5))},
			[]Holding{h("todo_b", "lease", at(5)), h("todo_a", "claim", nil)}},
		{"soonest expiry first", []Holding{h("todo_a", "lease", at(9)), h("todo_b", "lease", at(5))},
			[]Holding{h("todo_b", "lease", at(5)), h("todo_a", "lease", at(9))}},
		{"same expiry: by todo, then kind", []Holding{h("todo_b", "claim", at(5)), h("todo_a", "lease", at(5)), h("todo_a", "claim", at(5))},
			[]Holding{h("todo_a", "claim", at(5)), h("todo_a", "lease", at(5)), h("todo_b", "claim", at(5))}},
		{"no expiry: by todo", []Holding{h("todo_b", "claim", nil), h("todo_a", "claim", nil)},
			[]Holding{h("todo_a", "claim", nil), h("todo_b", "claim", nil)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := slices.Clone(c.in)
			SortHoldings(got)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("SortHoldings = %+v, want %+v", got, c.want)
			}
		})
	}
}
