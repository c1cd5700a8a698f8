package lease

import (
	"fmt"
	"testing"
	"time"
)

func tcIDs(ts []*Todo) string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return fmt.Sprint(ids)
}

func TestReadyOrdering(t *testing.T) {
	f := newTC(t, HandoffSoftClaim)
	f.addTodo("todo_p2_old", tcMin(0), nil)
	f.addTodo("todo_p0_new", tcMin(5), func(t *Todo) { t.Priority = "P0" })
	f.addTodo("todo_p2_bbb", tcMin(3), nil)
	f.addTodo("todo_p2_aaa", tcMin(3), nil)
	f.addTodo("todo_p4_old", tcMin(-10), func(t *Todo) { t.Priority = "P4" })
	f.addTodo("todo_p1_new", tcMin(9), func(t *Todo) { t.Priority = "P1" })
	got, err := Ready(f.view(tcT0), tcGoal, "a", tcT0)
	if err != nil {
		t.Fatal(err)
	}
	want := "[todo_p0_new todo_p1_new todo_p2_old todo_p2_aaa todo_p2_bbb todo_p4_old]"
	if tcIDs(got) != want {
		t.Fatalf("order %s, want %s", tcIDs(got), want)
	}
}

func TestReadyFiltering(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *tcFix)
		agent string
		ready bool
		code  Code
		why   string // ReadyExplained's reasons for todo_xx1 when not ready ("-": not listed: not open)
	}{
		{name: "open and free", agent: "a", ready: true},
		{name: "no agent", agent: "", ready: true},
		{name: "unregistered agent", agent: "zed", code: CodeAgentNotRegistered},
		{name: "done", setup: func(f *tcFix) { f.editTodo("todo_xx1", func(t *Todo) { t.Status = TodoDone }) }, agent: "a", why: "-"},
		{name: "archived", setup: func(f *tcFix) { f.editTodo("todo_xx1", func(t *Todo) { t.Archived = true }) }, agent: "a", why: "-"},
		{name: "claimed by another", setup: func(f *tcFix) { f.claimTodo("todo_xx1", "b", nil) }, agent: "a", why: "claimed:b"},
		{name: "claimed, no agent", setup: func(f *tcFix) { f.claimTodo("todo_xx1", "b", nil) }, agent: "", why: "claimed:b"},
		{name: "claimed by the agent", setup: func(f *tcFix) { f.claimTodo("todo_xx1", "a", nil) }, agent: "a", ready: true},
		{name: "delegated to the agent", setup: func(f *tcFix) {
			f.claimTodo("todo_xx1", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, agent: "a", ready: true},
		{name: "expired claim of another", setup: func(f *tcFix) {
			f.claimTodo("todo_xx1", "b", func(t *Todo) { t.ClaimExpiresAt = timePtr(tcMin(-1)) })
		}, agent: "a", ready: true},
		{name: "dependency open", setup: func(f *tcFix) { f.editTodo("todo_xx1", func(t *Todo) { t.DependsOn = []string{"todo_yy1y1"} }) }, agent: "a", why: "dependencies:[todo_yy1y1]"},
		{name: "dependency done", setup: func(f *tcFix) {
			f.editTodo("todo_xx1", func(t *Todo) { t.DependsOn = []string{"todo_yy1y1"} })
			f.editTodo("todo_yy1y1", func(t *Todo) { t.Status = TodoDone })
		}, agent: "a", ready: true},
		{name: "excluded", setup: func(f *tcFix) { f.editTodo("todo_xx1", func(t *Todo) { t.ExcludedAgents = []string{"a"} }) }, agent: "a", why: "excluded:a"},
		{name: "bound to another", setup: func(f *tcFix) { f.editTodo("todo_xx1", func(t *Todo) { t.BoundAgent = "b" }) }, agent: "a", why: "bound:b"},
		{name: "bound to the agent", setup: func(f *tcFix) { f.editTodo("todo_xx1", func(t *Todo) { t.BoundAgent = "a" }) }, agent: "a", ready: true},
		{name: "own lease held by another", setup: func(f *tcFix) { f.putLease("todo_xx1", "b", "kb", 1, 1, tcMin(10)) }, agent: "a", why: "held:b"},
		{name: "own lease held by the agent", setup: func(f *tcFix) { f.putLease("todo_xx1", "a", "ka", 1, 1, tcMin(10)) }, agent: "a", ready: true},
		{name: "own lease expired", setup: func(f *tcFix) { f.putLease("todo_xx1", "b", "kb", 1, 1, tcMin(-1)) }, agent: "a", ready: true},
		// The lease's execution began under the owner's earlier
		// registration: not effective (judged from the active-lease
		// entries, which keep the record's owner registration).
		{name: "own lease of an owner registered again since", setup: func(f *tcFix) {
			f.putLease("todo_xx1", "b", "kb", 1, 1, tcMin(10))
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentRegistered, Registration: 7, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, agent: "a", ready: true},
		{name: "scope held by an owner registered again since", setup: func(f *tcFix) {
			f.putLease("todo_yy1y1", "b", "kb", 1, 1, tcMin(10), "src/**")
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentRegistered, Registration: 7, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, agent: "a", ready: true},
		{name: "own lease held by another, same registration", setup: func(f *tcFix) {
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentRegistered, Registration: 7, RegisteredAt: tcT0, UpdatedAt: tcT0})
			f.edit(func(v *View) {
				v.PutLease(tcGoal, &Lease{TodoID: "todo_xx1", Owner: "b", IdempotencyKey: "kb", Version: 1, Epoch: 1, OwnerRegistration: 7,
					Status: LeaseActive, AcquiredAt: tcT0, ExpiresAt: tcMin(10), Holders: []Holder{{Epoch: 1, Owner: "b", IdempotencyKey: "kb", StartedAt: tcT0}}})
			})
		}, agent: "a", why: "held:b"},
		{name: "scope held by another's effective lease", setup: func(f *tcFix) {
			f.putLease("todo_yy1y1", "b", "kb", 1, 1, tcMin(10), "src/**")
		}, agent: "a", why: "scope:b:todo_yy1y1:src/**"},
		{name: "scope held by the agent's lease on another todo", setup: func(f *tcFix) {
			f.putLease("todo_yy1y1", "a", "ka", 1, 1, tcMin(10), "src/lib/x.go")
		}, agent: "a", why: "scope:a:todo_yy1y1:src/lib/x.go"},
		{name: "scope held by an expired lease", setup: func(f *tcFix) {
			f.putLease("todo_yy1y1", "b", "kb", 1, 1, tcMin(-1), "src/**")
		}, agent: "a", ready: true},
		{name: "scope held by an unregistered owner", setup: func(f *tcFix) {
			f.putLease("todo_yy1y1", "b", "kb", 1, 1, tcMin(10), "src/**")
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, agent: "a", ready: true},
		{name: "disjoint scope", setup: func(f *tcFix) {
			f.putLease("todo_yy1y1", "b", "kb", 1, 1, tcMin(10), "docs/**")
		}, agent: "a", ready: true},
		{name: "archived goal", setup: func(f *tcFix) {
			f.edit(func(v *View) {
				g, _ := v.Goal(tcGoal)
				g.Status = GoalArchived
				v.PutGoal(g)
			})
		}, agent: "a", why: "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_xx1", "todo_yy1y1")
			f.editTodo("todo_xx1", func(t *Todo) { t.RequiredWriteScopes = []string{"src/lib/**"} })
			if c.setup != nil {
				c.setup(f)
			}
			got, err := Ready(f.view(tcT0), tcGoal, c.agent, tcT0)
			tcCode(t, err, c.code)
			if c.code != "" {
				return
			}
			in := false
			for _, td := range got {
				in = in || td.ID == "todo_xx1"
			}
			if in != c.ready {
				t.Fatalf("todo_xx1 ready = %v, want %v (%s)", in, c.ready, tcIDs(got))
			}
			// ReadyExplained lists the same ready todos, and says why
			// todo_xx1 is not one of them.
			ready, notReady, _, err := ReadyExplained(f.view(tcT0), tcGoal, c.agent, tcT0)
			if err != nil || tcIDs(ready) != tcIDs(got) {
				t.Fatalf("ReadyExplained: %s %v, Ready %s", tcIDs(ready), err, tcIDs(got))
			}
			var why []string
			listed := false
			for _, n := range notReady {
				if n.TodoID != "todo_xx1" {
					continue
				}
				listed = true
				for _, r := range n.Reasons {
					w := r.Kind + ":" + r.Agent
					if r.TodoID != "" {
						w += ":" + r.TodoID + ":" + r.Scope
					}
					if len(r.Dependencies) > 0 {
						w = r.Kind + ":" + fmt.Sprint(r.Dependencies)
					}
					why = append(why, w)
				}
			}
			want := c.why
			if c.ready {
				want = ""
			}
			switch {
			case want == "-" && listed, want == "" && listed:
				t.Fatalf("todo_xx1 listed as not ready: %v", why)
			case want != "-" && want != "" && fmt.Sprint(why) != "["+want+"]":
				t.Fatalf("why %v, want [%s]", why, want)
			}
		})
	}
}

// TestReadyExplainedEveryReason: a todo blocked several ways gets every
// reason, in the order Ready judges; the list is sorted as Ready sorts and
// bounded.
func TestReadyExplainedEveryReason(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_xx1", "todo_yy1y1", "todo_zz1")
	f.editTodo("todo_xx1", func(t *Todo) {
		t.RequiredWriteScopes = []string{"src/lib/**"}
		t.DependsOn = []string{"todo_zz1"}
		t.BoundAgent = "b"
	})
	f.claimTodo("todo_xx1", "c", nil)
	f.putLease("todo_yy1y1", "b", "kb", 1, 1, tcMin(10), "src/**")
	_, notReady, more, err := ReadyExplained(f.view(tcT0), tcGoal, "a", tcT0)
	if err != nil || more != 0 {
		t.Fatal(err, more)
	}
	var kinds []string
	for _, n := range notReady {
		if n.TodoID == "todo_xx1" {
			for _, r := range n.Reasons {
				kinds = append(kinds, r.Kind)
			}
		}
	}
	if fmt.Sprint(kinds) != "[claimed bound dependencies scope]" {
		t.Fatalf("reasons %v", kinds)
	}
	for i := range MaxNotReady + 5 {
		id := fmt.Sprintf("todo_held%03d", i)
		f.addTodo(id, tcMin(i), nil)
		f.claimTodo(id, "b", nil)
	}
	_, notReady, more, err = ReadyExplained(f.view(tcT0), tcGoal, "a", tcT0)
	if err != nil || len(notReady) != MaxNotReady || more != 7 {
		t.Fatalf("%d listed, %d more (%v)", len(notReady), more, err)
	}
}

func (f *tcFix) readyClaim(now time.Time, r ReadyClaimRequest) (*Outcome, error) {
	r.Goal = tcGoal
	return f.run(now, func(v *View, now time.Time) (*Outcome, error) { return ReadyClaim(v, r, now) })
}

func TestReadyClaim(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one", "todo_two", "todo_three")
	f.editTodo("todo_three", func(t *Todo) { t.Priority = "P0" })

	// a gets the highest-priority todo.
	o := f.must(f.readyClaim(tcT0, ReadyClaimRequest{Actor: "a"}))
	r := tcResult(t, o)
	if o.Status != StatusApplied || o.Operation != OpTodoClaim || r.TodoID != "todo_three" || r.Claimed == nil || !*r.Claimed {
		t.Fatalf("first: %+v %+v", o, r)
	}
	// Calling again returns the same todo: never a second one.
	o = f.must(f.readyClaim(tcMin(1), ReadyClaimRequest{Actor: "a"}))
	if r = tcResult(t, o); o.Status != StatusNoChange || r.TodoID != "todo_three" {
		t.Fatalf("again: %+v %+v", o, r)
	}
	// b gets the next one.
	o = f.must(f.readyClaim(tcMin(2), ReadyClaimRequest{Actor: "b"}))
	if r = tcResult(t, o); r.TodoID != "todo_one" {
		t.Fatalf("b: %+v", r)
	}
	// c gets the last one, with a lease; an exact retry replays.
	req := ReadyClaimRequest{Actor: "c", LeaseKey: "exec-c", LeaseTTLSeconds: 300}
	o = f.must(f.readyClaim(tcMin(3), req))
	if r = tcResult(t, o); r.TodoID != "todo_two" || r.Lease == nil || r.Lease.Owner != "c" || o.Version != 1 {
		t.Fatalf("c: %+v", r)
	}
	o = f.must(f.readyClaim(tcMin(4), req))
	if r = tcResult(t, o); o.Status != StatusReplayed || r.TodoID != "todo_two" {
		t.Fatalf("c again: %+v", o)
	}
	// Nothing left for orch.
	o = f.must(f.readyClaim(tcMin(5), ReadyClaimRequest{Actor: "orch"}))
	if r = tcResult(t, o); o.Status != StatusNoChange || o.Write || r.Claimed == nil || *r.Claimed || r.Todo != nil || r.TodoID != "" {
		t.Fatalf("none: %+v %+v", o, r)
	}
	// Bad requests are refused before any candidate.
	_, err := f.readyClaim(tcMin(6), ReadyClaimRequest{Actor: "orch", ClaimTTLMinutes: -1})
	tcCode(t, err, CodeInvalidTTL)
	_, err = f.readyClaim(tcMin(6), ReadyClaimRequest{Actor: "zed"})
	tcCode(t, err, CodeAgentNotRegistered)
}

func TestReadyClaimSkipsRefusedCandidates(t *testing.T) {
	f := newTC(t, HandoffHardLease, "todo_one", "todo_two")
	// todo_one has an active lease of an agent that was unregistered: not
	// effective (so ready), but hard_lease refuses a claim change under it.
	f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10))
	f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
	o := f.must(f.readyClaim(tcT0, ReadyClaimRequest{Actor: "a"}))
	if r := tcResult(t, o); r.TodoID != "todo_two" {
		t.Fatalf("claimed %s", r.TodoID)
	}
}

// TestReClaimKeepsTheClaimTTL: the holder of a claim with a TTL re-claims it,
// by every way of claiming; without a TTL the claim keeps its TTL and expiry
// (contract section 6), and a re-claim that changes nothing writes nothing.
func TestReClaimKeepsTheClaimTTL(t *testing.T) {
	claim := func(r ClaimRequest) func(f *tcFix, now time.Time) (*Outcome, error) {
		return func(f *tcFix, now time.Time) (*Outcome, error) { r.Todo = "todo_one"; return f.claim(now, r) }
	}
	ready := func(r ReadyClaimRequest) func(f *tcFix, now time.Time) (*Outcome, error) {
		return func(f *tcFix, now time.Time) (*Outcome, error) { return f.readyClaim(now, r) }
	}
	for _, c := range []struct {
		name    string
		at      time.Time
		decide  func(f *tcFix, now time.Time) (*Outcome, error)
		status  string
		ttl     int64
		expires time.Time
		lease   bool // a lease was acquired
	}{
		{"claim without a ttl", tcMin(5), claim(ClaimRequest{Actor: "a"}), StatusNoChange, 30, tcMin(30), false},
		{"claim naming itself without a ttl", tcMin(5), claim(ClaimRequest{Actor: "a", ClaimedBy: "a"}), StatusNoChange, 30, tcMin(30), false},
		{"ready --claim without a ttl", tcMin(5), ready(ReadyClaimRequest{Actor: "a"}), StatusNoChange, 30, tcMin(30), false},
		{"claim with the same ttl in the same second", tcT0, claim(ClaimRequest{Actor: "a", ClaimTTLMinutes: 30}), StatusNoChange, 30, tcMin(30), false},
		{"ready --claim with the same ttl in the same second", tcT0, ready(ReadyClaimRequest{Actor: "a", ClaimTTLMinutes: 30}), StatusNoChange, 30, tcMin(30), false},
		{"claim and acquire without a ttl", tcMin(5), claim(ClaimRequest{Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 60}), StatusApplied, 30, tcMin(30), true},
		{"ready --claim and acquire without a ttl", tcMin(5), ready(ReadyClaimRequest{Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 60}), StatusApplied, 30, tcMin(30), true},
		{"claim with a new ttl", tcMin(5), claim(ClaimRequest{Actor: "a", ClaimTTLMinutes: 10}), StatusApplied, 10, tcMin(15), false},
		{"claim with the same ttl later refreshes the expiry", tcMin(5), claim(ClaimRequest{Actor: "a", ClaimTTLMinutes: 30}), StatusApplied, 30, tcMin(35), false},
		{"ready --claim with a new ttl", tcMin(5), ready(ReadyClaimRequest{Actor: "a", ClaimTTLMinutes: 60}), StatusApplied, 60, tcMin(65), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one", "todo_two")
			f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a", ClaimTTLMinutes: 30}))
			before := f.todo("todo_one")
			o := f.must(c.decide(f, c.at))
			got := f.todo("todo_one")
			if r := tcResult(t, o); o.Status != c.status || r.TodoID != "todo_one" {
				t.Fatalf("status %s todo %s, want %s todo_one", o.Status, r.TodoID, c.status)
			}
			if got.ClaimedBy != "a" || got.ClaimTTLMinutes != c.ttl || got.ClaimExpiresAt == nil || !got.ClaimExpiresAt.Equal(c.expires) || !got.ClaimedAt.Equal(tcT0) {
				t.Fatalf("claim %+v, want ttl %d expiring at %s", got, c.ttl, c.expires)
			}
			if (o.Status == StatusNoChange) == o.Write {
				t.Fatalf("status %s, write %v", o.Status, o.Write)
			}
			if !c.lease && !got.UpdatedAt.Equal(before.UpdatedAt) && c.status == StatusNoChange {
				t.Fatalf("no_change rewrote the todo: %+v", got)
			}
			if l := f.lease("todo_one"); c.lease != (l != nil) {
				t.Fatalf("lease %+v, want one: %v", l, c.lease)
			}
		})
	}
}

// TestReadyClaimScopeAgentHoldingTheLease: the scope agent of a delegated
// claim that holds the todo's effective lease asks ready --claim: the todo is
// its answer, as it is (the orchestrator's claim is neither taken nor
// refused), and its exact retry of the acquire replays.
func TestReadyClaimScopeAgentHoldingTheLease(t *testing.T) {
	f := newTC(t, HandoffHardLease, "todo_one", "todo_two")
	f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "orch", ScopeAgent: "a", ClaimTTLMinutes: 30}))
	f.must(f.run(tcT0, func(v *View, now time.Time) (*Outcome, error) {
		return Acquire(v, AcquireRequest{Goal: tcGoal, Todo: "todo_one", Owner: "a", IdempotencyKey: "exec-a", TTLSeconds: 600}, now)
	}))
	before := f.todo("todo_one")
	for _, c := range []struct {
		name   string
		req    ReadyClaimRequest
		status string
		lease  bool
	}{
		{"without a key", ReadyClaimRequest{Actor: "a"}, StatusNoChange, false},
		{"with a ttl", ReadyClaimRequest{Actor: "a", ClaimTTLMinutes: 5}, StatusNoChange, false},
		{"the held key: a replay", ReadyClaimRequest{Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 600}, StatusReplayed, true},
		{"the held key, another ttl", ReadyClaimRequest{Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 60}, StatusNoChange, true},
		{"another key", ReadyClaimRequest{Actor: "a", LeaseKey: "exec-b", LeaseTTLSeconds: 600}, StatusNoChange, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := f.must(f.readyClaim(tcMin(1), c.req))
			r := tcResult(t, o)
			if o.Status != c.status || o.Write || r.TodoID != "todo_one" || r.Claimed == nil || !*r.Claimed || r.ClaimedBy != "orch" || (r.Lease != nil) != c.lease {
				t.Fatalf("outcome %+v result %+v", o, r)
			}
			if c.lease && (r.Lease.Owner != "a" || r.Lease.IdempotencyKey != "exec-a") {
				t.Fatalf("lease %+v", r.Lease)
			}
			if got := f.todo("todo_one"); !sameClaim(got, before) {
				t.Fatalf("claim changed: %+v", got)
			}
		})
	}
}
