package lease

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// Fixtures of the todo-claim tests (claim, authority, update, complete,
// ready, notes). Records are written through a View and applied to
// MemFiles, like a commit would.

var tcT0 = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)

const tcGoal = "g"

func tcMin(m int) time.Time { return tcT0.Add(time.Duration(m) * time.Minute) }

type tcFix struct {
	tb    testing.TB
	files MemFiles
	rev   int
}

// newTC builds goal "g" in mode with agents a, b, c (role agent) and the
// orchestrators orch (every authority), orch-r (every authority, requires a
// reason) and orch-c (complete only), plus open todos (P2, created in order).
func newTC(tb testing.TB, mode string, todos ...string) *tcFix {
	f := &tcFix{tb: tb, files: MemFiles{}}
	f.edit(func(v *View) {
		v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: tcT0})
		v.PutGoal(&Goal{ID: tcGoal, Title: "goal", Status: GoalActive, HandoffMode: mode, CreatedAt: tcT0, UpdatedAt: tcT0})
		for _, a := range []string{"a", "b", "c"} {
			v.PutAgent(tcGoal, &Agent{ID: a, Role: RoleAgent, Status: AgentRegistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}
		v.PutAgent(tcGoal, &Agent{ID: "orch", Role: RoleOrchestrator, LifecycleAuthority: LifecycleAuthorities, Status: AgentRegistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		v.PutAgent(tcGoal, &Agent{ID: "orch-r", Role: RoleOrchestrator, LifecycleAuthority: LifecycleAuthorities, RequiresReason: true, Status: AgentRegistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		v.PutAgent(tcGoal, &Agent{ID: "orch-c", Role: RoleOrchestrator, LifecycleAuthority: []string{"complete"}, Status: AgentRegistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
	})
	for i, id := range todos {
		f.addTodo(id, tcT0.Add(time.Duration(i)*time.Second), nil)
	}
	return f
}

func (f *tcFix) view(now time.Time) *View {
	return NewView(f.files, fmt.Sprintf("rev%d", f.rev), now)
}

func (f *tcFix) edit(fn func(v *View)) {
	v := f.view(tcT0)
	fn(v)
	f.files.Apply(v.Changes())
	f.rev++
}

func (f *tcFix) addTodo(id string, created time.Time, mod func(t *Todo)) {
	t := &Todo{ID: id, Text: "text of " + id, Status: TodoOpen, Priority: DefaultPriority, CreatedBy: "a",
		CreatedAt: created, UpdatedBy: "a", UpdatedAt: created}
	if mod != nil {
		mod(t)
	}
	f.edit(func(v *View) { v.PutTodo(tcGoal, t) })
}

func (f *tcFix) todo(id string) *Todo {
	f.tb.Helper()
	t, err := f.view(tcT0).Todo(tcGoal, id)
	if err != nil || t == nil {
		f.tb.Fatalf("todo %s: %v %v", id, t, err)
	}
	return t
}

func (f *tcFix) editTodo(id string, fn func(t *Todo)) {
	t := f.todo(id)
	fn(t)
	f.edit(func(v *View) { v.PutTodo(tcGoal, t) })
}

func (f *tcFix) lease(todo string) *Lease {
	l, err := f.view(tcT0).Lease(tcGoal, todo)
	if err != nil {
		f.tb.Fatal(err)
	}
	return l
}

// putLease writes an active lease of owner/key at version/epoch expiring at exp.
func (f *tcFix) putLease(todo, owner, key string, version, epoch int64, exp time.Time, scopes ...string) {
	f.edit(func(v *View) {
		v.PutLease(tcGoal, &Lease{TodoID: todo, Owner: owner, IdempotencyKey: key, Version: version, Epoch: epoch,
			Status: LeaseActive, WriteScopes: scopes, AcquiredAt: tcT0, ExpiresAt: exp,
			Holders: []Holder{{Epoch: epoch, Owner: owner, IdempotencyKey: key, StartedAt: tcT0}}})
	})
}

func (f *tcFix) setAgent(a *Agent) { f.edit(func(v *View) { v.PutAgent(tcGoal, a) }) }

func (f *tcFix) claimTodo(id, by string, mod func(t *Todo)) {
	f.editTodo(id, func(t *Todo) {
		t.ClaimedBy, t.ClaimedAt = by, timePtr(tcT0)
		if mod != nil {
			mod(t)
		}
	})
}

// run decides op on a fresh view at now. On success the writes are applied
// (as a commit); on failure the view must hold no writes.
func (f *tcFix) run(now time.Time, op func(v *View, now time.Time) (*Outcome, error)) (*Outcome, error) {
	f.tb.Helper()
	v := f.view(now)
	o, err := op(v, now)
	if err != nil {
		if ch := v.Changes(); len(ch) != 0 {
			f.tb.Fatalf("refused request left writes: %v", ch)
		}
		return nil, err
	}
	ch := v.Changes()
	if !o.Write && len(ch) != 0 {
		f.tb.Fatalf("outcome Write=false but the view holds writes: %v", ch)
	}
	if o.Write && len(ch) == 0 {
		f.tb.Fatalf("outcome Write=true but the view holds no writes")
	}
	f.files.Apply(ch)
	f.rev++
	return o, nil
}

func (f *tcFix) claim(now time.Time, r ClaimRequest) (*Outcome, error) {
	r.Goal = tcGoal
	return f.run(now, func(v *View, now time.Time) (*Outcome, error) { return Claim(v, r, now) })
}

func (f *tcFix) update(now time.Time, r UpdateRequest) (*Outcome, error) {
	r.Goal = tcGoal
	return f.run(now, func(v *View, now time.Time) (*Outcome, error) { return Update(v, r, now) })
}

func (f *tcFix) complete(now time.Time, r CompleteRequest) (*Outcome, error) {
	r.Goal = tcGoal
	return f.run(now, func(v *View, now time.Time) (*Outcome, error) { return Complete(v, r, now) })
}

func (f *tcFix) supersede(now time.Time, r SupersedeRequest) (*Outcome, error) {
	r.Goal = tcGoal
	return f.run(now, func(v *View, now time.Time) (*Outcome, error) { return Supersede(v, r, now) })
}

func (f *tcFix) must(o *Outcome, err error) *Outcome {
	f.tb.Helper()
	if err != nil {
		f.tb.Fatalf("unexpected error: %v", err)
	}
	return o
}

// tcCode asserts err is an *Error with code (or nil when code is "").
func tcCode(tb testing.TB, err error, code Code) *Error {
	tb.Helper()
	if code == "" {
		if err != nil {
			tb.Fatalf("unexpected error: %v", err)
		}
		return nil
	}
	e, ok := AsError(err)
	if !ok {
		tb.Fatalf("want %s, got %v", code, err)
	}
	if e.Code != code {
		tb.Fatalf("want %s, got %s (%s)", code, e.Code, e.Message)
	}
	return e
}

func tcResult(tb testing.TB, o *Outcome) *TodoResult {
	tb.Helper()
	r, ok := o.Data.(*TodoResult)
	if !ok {
		tb.Fatalf("Data is %T", o.Data)
	}
	return r
}

func TestClaim(t *testing.T) {
	type tc struct {
		name     string
		mode     string
		setup    func(f *tcFix)
		req      ClaimRequest
		code     Code
		detail   [2]string // key, value of an error detail
		status   string
		claimBy  string
		scope    string
		expiryIn int // claim expiry in minutes after tcT0 (0 = none)
	}
	cases := []tc{
		{name: "plain claim", req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "claimed-by equal to actor", req: ClaimRequest{Actor: "a", ClaimedBy: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "claimed-by differs from actor", req: ClaimRequest{Actor: "a", ClaimedBy: "b"}, code: CodeInvalidRequest},
		{name: "ttl", req: ClaimRequest{Actor: "a", ClaimTTLMinutes: 30}, status: StatusApplied, claimBy: "a", expiryIn: 30},
		{name: "negative ttl", req: ClaimRequest{Actor: "a", ClaimTTLMinutes: -1}, code: CodeInvalidTTL},
		{name: "ttl too long", req: ClaimRequest{Actor: "a", ClaimTTLMinutes: MaxClaimTTLMinutes + 1}, code: CodeInvalidTTL},
		{name: "ttl at the limit", req: ClaimRequest{Actor: "a", ClaimTTLMinutes: MaxClaimTTLMinutes}, status: StatusApplied, claimBy: "a", expiryIn: MaxClaimTTLMinutes},
		{name: "bad scope agent id", req: ClaimRequest{Actor: "orch", ScopeAgent: "A!"}, code: CodeInvalidAgentID},
		{name: "bad scope agent id on a missing todo", req: ClaimRequest{Actor: "orch", ScopeAgent: "A!", Todo: "todo_missing"}, code: CodeInvalidAgentID},
		{name: "bad agent id", req: ClaimRequest{Actor: "A!"}, code: CodeInvalidAgentID},
		{name: "bad todo id", req: ClaimRequest{Actor: "a", Todo: "x"}, code: CodeInvalidTodoID},
		{name: "missing todo", req: ClaimRequest{Actor: "a", Todo: "todo_missing"}, code: CodeTodoNotFound},
		{name: "unregistered actor", req: ClaimRequest{Actor: "zed"}, code: CodeAgentNotRegistered},
		{name: "unregistered agent record", setup: func(f *tcFix) {
			f.setAgent(&Agent{ID: "a", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, req: ClaimRequest{Actor: "a"}, code: CodeAgentNotRegistered},
		{name: "excluded actor", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.ExcludedAgents = []string{"a"} }) },
			req: ClaimRequest{Actor: "a"}, code: CodeAgentExcluded},
		{name: "bound to another", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "b" }) },
			req: ClaimRequest{Actor: "a"}, code: CodeBoundAgentMismatch, detail: [2]string{"bound_agent", "b"}},
		{name: "bound to actor", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "a" }) },
			req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "done todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Status = TodoDone }) },
			req: ClaimRequest{Actor: "a"}, code: CodeTodoNotOpen},
		{name: "archived todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Archived = true }) },
			req: ClaimRequest{Actor: "a"}, code: CodeTodoArchived},
		{name: "archived goal", setup: func(f *tcFix) {
			f.edit(func(v *View) {
				g, _ := v.Goal(tcGoal)
				g.Status = GoalArchived
				v.PutGoal(g)
			})
		}, req: ClaimRequest{Actor: "a"}, code: CodeGoalArchived},
		{name: "claimed by another", setup: func(f *tcFix) { f.claimTodo("todo_one", "b", nil) },
			req: ClaimRequest{Actor: "a"}, code: CodeClaimConflict, detail: [2]string{"claimed_by", "b"}},
		{name: "expired claim of another", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "b", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 1, timePtr(tcMin(-1)) })
		}, req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "same owner, same params", setup: func(f *tcFix) { f.claimTodo("todo_one", "a", nil) },
			req: ClaimRequest{Actor: "a"}, status: StatusNoChange, claimBy: "a"},
		{name: "same owner without a ttl keeps the claim's ttl and expiry", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 10, timePtr(tcMin(7)) })
		}, req: ClaimRequest{Actor: "a"}, status: StatusNoChange, claimBy: "a", expiryIn: 7},
		{name: "same owner, same ttl, same second", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 10, timePtr(tcMin(10)) })
		}, req: ClaimRequest{Actor: "a", ClaimTTLMinutes: 10}, status: StatusNoChange, claimBy: "a", expiryIn: 10},
		{name: "orchestrator changes the scope agent, keeping the ttl", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID, t.ClaimTTLMinutes, t.ClaimExpiresAt = "a", 10, timePtr(tcMin(7)) })
		}, req: ClaimRequest{Actor: "orch", ScopeAgent: "b"}, status: StatusApplied, claimBy: "orch", scope: "b", expiryIn: 7},
		{name: "same owner refreshes ttl", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 10, timePtr(tcMin(10)) })
		}, req: ClaimRequest{Actor: "a", ClaimTTLMinutes: 60}, status: StatusApplied, claimBy: "a", expiryIn: 60},
		{name: "effective lease of another", setup: func(f *tcFix) { f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10)) },
			req: ClaimRequest{Actor: "a"}, code: CodeTodoLeaseConflict, detail: [2]string{"lease_owner", "b"}},
		{name: "own effective lease", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 1, 1, tcMin(10)) },
			req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "expired lease of another", setup: func(f *tcFix) { f.putLease("todo_one", "b", "kb", 1, 1, tcMin(-1)) },
			req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "lease of an unregistered owner (soft)", setup: func(f *tcFix) {
			f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10))
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "hard_lease: active lease of another, even ineffective", mode: HandoffHardLease, setup: func(f *tcFix) {
			f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10))
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, req: ClaimRequest{Actor: "a"}, code: CodeTodoLeaseConflict, detail: [2]string{"lease_owner", "b"}},
		{name: "hard_lease: no lease", mode: HandoffHardLease, req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "hard_lease: own active lease", mode: HandoffHardLease, setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 1, 1, tcMin(10)) },
			req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "hard_lease: expired lease of another", mode: HandoffHardLease, setup: func(f *tcFix) { f.putLease("todo_one", "b", "kb", 1, 1, tcMin(-1)) },
			req: ClaimRequest{Actor: "a"}, status: StatusApplied, claimBy: "a"},
		{name: "delegation by a plain agent", req: ClaimRequest{Actor: "a", ScopeAgent: "b"}, code: CodeAuthorityRequired},
		{name: "delegation by an orchestrator", req: ClaimRequest{Actor: "orch", ScopeAgent: "a"}, status: StatusApplied, claimBy: "orch", scope: "a"},
		{name: "delegation naming the scope agent as claimant", req: ClaimRequest{Actor: "orch", ClaimedBy: "a", ScopeAgent: "a"}, status: StatusApplied, claimBy: "a", scope: "a"},
		{name: "delegation to a third claimant", req: ClaimRequest{Actor: "orch", ClaimedBy: "b", ScopeAgent: "a"}, code: CodeInvalidRequest},
		{name: "delegation to an excluded agent", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.ExcludedAgents = []string{"a"} }) },
			req: ClaimRequest{Actor: "orch", ScopeAgent: "a"}, code: CodeAgentExcluded},
		{name: "delegation to an unregistered agent", req: ClaimRequest{Actor: "orch", ScopeAgent: "zed"}, code: CodeAgentNotRegistered},
		{name: "delegation to the bound agent", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "a" }) },
			req: ClaimRequest{Actor: "orch", ScopeAgent: "a"}, status: StatusApplied, claimBy: "orch", scope: "a"},
		{name: "scope agent re-claims for itself", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: ClaimRequest{Actor: "a"}, code: CodeClaimConflict, detail: [2]string{"claimed_by", "orch"}},
		{name: "scope agent names itself as claimant", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: ClaimRequest{Actor: "a", ClaimedBy: "a"}, code: CodeClaimConflict, detail: [2]string{"claimed_by", "orch"}},
		{name: "a scope agent with reassign authority does not take the claim by claiming", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "orch-r" })
		}, req: ClaimRequest{Actor: "orch-r", ClaimedBy: "orch-r", ClaimTTLMinutes: 5}, code: CodeClaimConflict, detail: [2]string{"claimed_by", "orch"}},
		{name: "lease of the scope agent is not stolen", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 1, 1, tcMin(10)) },
			req: ClaimRequest{Actor: "orch", ScopeAgent: "a"}, status: StatusApplied, claimBy: "orch", scope: "a"},
		{name: "ttl-seconds without key", req: ClaimRequest{Actor: "a", LeaseTTLSeconds: 60}, code: CodeInvalidRequest},
		{name: "key without ttl", req: ClaimRequest{Actor: "a", LeaseKey: "k1"}, code: CodeInvalidTTL},
		{name: "bad key", req: ClaimRequest{Actor: "a", LeaseKey: "-bad", LeaseTTLSeconds: 60}, code: CodeInvalidIdempotencyKey},
		// the request's shape is checked before the store is read
		{name: "bad key on a missing todo", req: ClaimRequest{Actor: "a", Todo: "todo_missing", LeaseKey: "-bad", LeaseTTLSeconds: 60}, code: CodeInvalidIdempotencyKey},
		{name: "key without ttl on a missing todo", req: ClaimRequest{Actor: "a", Todo: "todo_missing", LeaseKey: "k1"}, code: CodeInvalidTTL},
		{name: "hard_lease: the claimant re-claiming is not blocked by another's live lease", mode: HandoffHardLease, setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", nil)
			f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10))
			f.setAgent(&Agent{ID: "b", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
		}, req: ClaimRequest{Actor: "a"}, status: StatusNoChange, claimBy: "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode := c.mode
			if mode == "" {
				mode = HandoffSoftClaim
			}
			f := newTC(t, mode, "todo_one")
			if c.setup != nil {
				c.setup(f)
			}
			if c.req.Todo == "" {
				c.req.Todo = "todo_one"
			}
			before := f.todo("todo_one")
			o, err := f.claim(tcT0, c.req)
			e := tcCode(t, err, c.code)
			if c.code != "" {
				if c.detail[0] != "" && fmt.Sprint(e.Details[c.detail[0]]) != c.detail[1] {
					t.Fatalf("detail %s = %v, want %s", c.detail[0], e.Details[c.detail[0]], c.detail[1])
				}
				return
			}
			if o.Status != c.status || o.Operation != OpTodoClaim {
				t.Fatalf("status %s op %s, want %s", o.Status, o.Operation, c.status)
			}
			got := f.todo("todo_one")
			if got.ClaimedBy != c.claimBy || got.ClaimScopeAgentID != c.scope {
				t.Fatalf("claimed_by %q scope %q, want %q %q", got.ClaimedBy, got.ClaimScopeAgentID, c.claimBy, c.scope)
			}
			if c.expiryIn == 0 && got.ClaimExpiresAt != nil || c.expiryIn != 0 && (got.ClaimExpiresAt == nil || !got.ClaimExpiresAt.Equal(tcMin(c.expiryIn))) {
				t.Fatalf("claim_expires_at %v, want +%dm", got.ClaimExpiresAt, c.expiryIn)
			}
			if c.status == StatusNoChange {
				if o.Write || got.UpdatedAt != before.UpdatedAt {
					t.Fatalf("no_change wrote")
				}
			} else if !o.Write || !o.BoardChanged || got.UpdatedBy != c.req.Actor {
				t.Fatalf("applied claim: write %v board %v updated_by %s", o.Write, o.BoardChanged, got.UpdatedBy)
			}
			if r := tcResult(t, o); r.ClaimedBy != c.claimBy || r.TodoID != "todo_one" || r.Todo == nil || r.TodoStatus != TodoOpen {
				t.Fatalf("result %+v", r)
			}
		})
	}
}

func TestClaimRefreshKeepsClaimedAt(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one")
	f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a", ClaimTTLMinutes: 10}))
	f.must(f.claim(tcMin(5), ClaimRequest{Todo: "todo_one", Actor: "a", ClaimTTLMinutes: 10}))
	got := f.todo("todo_one")
	if !got.ClaimedAt.Equal(tcT0) || !got.ClaimExpiresAt.Equal(tcMin(15)) {
		t.Fatalf("claimed_at %v expires %v", got.ClaimedAt, got.ClaimExpiresAt)
	}
	// A re-claim without a TTL keeps the claim's TTL and expiry: no_change.
	o := f.must(f.claim(tcMin(6), ClaimRequest{Todo: "todo_one", Actor: "a"}))
	if got := f.todo("todo_one"); o.Status != StatusNoChange || got.ClaimTTLMinutes != 10 || !got.ClaimExpiresAt.Equal(tcMin(15)) {
		t.Fatalf("status %s, todo %+v", o.Status, got)
	}
}

func TestClaimTTLExpiryAndTakeover(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one")
	f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a", ClaimTTLMinutes: 30}))

	// Before expiry the claim holds.
	_, err := f.claim(tcMin(29), ClaimRequest{Todo: "todo_one", Actor: "b"})
	tcCode(t, err, CodeClaimConflict)

	// At expiry it shows as unclaimed.
	v := f.view(tcMin(30))
	tv, err := ViewTodo(v, tcGoal, f.todo("todo_one"), tcMin(30), false)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(tv)
	var m map[string]any
	_ = json.Unmarshal(js, &m)
	if m["claim_expired"] != true {
		t.Fatalf("expired claim view: %s", js)
	}
	for _, k := range []string{"claimed_by", "claim_scope_agent_id", "claimed_at", "claim_ttl_minutes", "claim_expires_at", "expired_claimed_by"} {
		if _, ok := m[k]; ok {
			t.Fatalf("expired claim view shows %s: %s", k, js)
		}
	}
	if f.todo("todo_one").ClaimedBy != "a" {
		t.Fatal("the record lost its claim: it keeps it until taken over or cleared")
	}

	// Another agent takes it over with an ordinary claim.
	o := f.must(f.claim(tcMin(30), ClaimRequest{Todo: "todo_one", Actor: "b"}))
	r := tcResult(t, o)
	if o.Status != StatusApplied || !r.PreviousClaimExpired || r.PreviousClaimedBy != "a" || !r.PreviousClaimExpiresAt.Equal(tcMin(30)) {
		t.Fatalf("takeover result %+v", r)
	}
	got := f.todo("todo_one")
	if got.ClaimedBy != "b" || got.ClaimTTLMinutes != 0 || got.ClaimExpiresAt != nil || !got.ClaimedAt.Equal(tcMin(30)) {
		t.Fatalf("after takeover %+v", got)
	}
	// And the former owner now conflicts.
	_, err = f.claim(tcMin(31), ClaimRequest{Todo: "todo_one", Actor: "a"})
	tcCode(t, err, CodeClaimConflict)
}

func TestClaimDelegationThroughScopeAgent(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one")
	f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "orch", ScopeAgent: "a"}))
	got := f.todo("todo_one")
	if got.ClaimedBy != "orch" || got.ClaimScopeAgentID != "a" {
		t.Fatalf("delegated claim %+v", got)
	}
	text := "new text"
	// The scope agent acts.
	f.must(f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "a", Text: &text}))
	// Someone else cannot.
	_, err := f.update(tcMin(2), UpdateRequest{Todo: "todo_one", Actor: "b", Note: "hi"})
	e := tcCode(t, err, CodeNotClaimOwner)
	if e.Details["claimed_by"] != "orch" {
		t.Fatalf("details %v", e.Details)
	}
	// The orchestrator acts too (claim owner).
	f.must(f.update(tcMin(3), UpdateRequest{Todo: "todo_one", Actor: "orch", Note: "keep going"}))
	// The scope agent completes.
	o := f.must(f.complete(tcMin(4), CompleteRequest{Todo: "todo_one", Actor: "a", Evidence: []string{"ci green"}}))
	if f.todo("todo_one").ClosedBy != "a" || o.Status != StatusApplied {
		t.Fatalf("completion by scope agent")
	}
}

func TestClaimAndAcquire(t *testing.T) {
	f := newTC(t, HandoffHardLease, "todo_one", "todo_two")
	f.editTodo("todo_one", func(t *Todo) { t.RequiredWriteScopes = []string{"src/**"} })
	f.editTodo("todo_two", func(t *Todo) { t.RequiredWriteScopes = []string{"src/lib/**"} })

	req := ClaimRequest{Todo: "todo_one", Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 600}
	o := f.must(f.claim(tcT0, req))
	if o.Status != StatusApplied || o.Version != 1 || o.Epoch != 1 || o.ReceiptID == "" || !o.Write {
		t.Fatalf("claim+acquire outcome %+v", o)
	}
	l := f.lease("todo_one")
	if l.Owner != "a" || l.IdempotencyKey != "exec-a" || fmt.Sprint(l.WriteScopes) != "[src/**]" || !l.ExpiresAt.Equal(tcT0.Add(600*time.Second)) {
		t.Fatalf("lease %+v", l)
	}
	r := tcResult(t, o)
	if r.Lease == nil || !r.Lease.Effective || r.ClaimedBy != "a" {
		t.Fatalf("result %+v", r)
	}

	// An exact retry is a replay and writes nothing.
	o = f.must(f.claim(tcMin(1), req))
	if o.Status != StatusReplayed || o.Write {
		t.Fatalf("retry %+v", o)
	}

	// b's claim+acquire of an overlapping todo is refused, and nothing is written:
	// the claim half is dropped too.
	_, err := f.claim(tcMin(2), ClaimRequest{Todo: "todo_two", Actor: "b", LeaseKey: "exec-b", LeaseTTLSeconds: 600})
	tcCode(t, err, CodeWriteScopeConflict)
	if f.todo("todo_two").ClaimedBy != "" {
		t.Fatal("refused claim+acquire left a claim")
	}

	// A delegating claim whose claimant is the scope agent cannot acquire for the orchestrator.
	_, err = f.claim(tcMin(3), ClaimRequest{Todo: "todo_two", Actor: "orch", ClaimedBy: "b", ScopeAgent: "b", LeaseKey: "exec-o", LeaseTTLSeconds: 60})
	tcCode(t, err, CodeInvalidRequest)
}
