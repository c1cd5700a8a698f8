package lease

// todo ready and todo ready --claim (contract section 4).
//
// Decisions written down here:
//   - Ready for agent A lists the todos that are open and not archived;
//     unclaimed, or whose effective claim A holds (as claimed_by or scope
//     agent); whose dependencies are all satisfied (OpenDependencies: done,
//     or superseded without an open replacement); that A may work on (not
//     excluded; a bound todo only for its bound agent, unless A already
//     holds its claim); whose own lease is not an effective lease of another
//     agent; and whose required write scopes overlap no effective lease of
//     ANOTHER todo (the acquire rule, so whatever ready lists can be
//     acquired: a lease A holds on another todo counts too). Sorted by
//     SortTodos: priority (P0 first), created_at, id.
//   - A must be registered (agent_not_registered). Without an agent (""),
//     eligibility is not checked and only unclaimed todos without an
//     effective lease are listed. An archived goal has no ready todos.
//   - ready --claim claims at most ONE todo per call. If A already holds,
//     as claimed_by, the effective claim of a ready todo, that todo is the
//     answer (a re-claim keeping its scope agent: no_change, or a TTL refresh
//     / lease acquire when asked; a refusal is returned, never a second
//     todo claimed), so a retry after a lost response never claims a second todo
//     and no agent collects todos by calling it repeatedly. A re-claim
//     without --claim-ttl-minutes keeps the claim's TTL and expiry (claim.go).
//     Otherwise the first ready unclaimed todo is claimed. A todo whose claim
//     A holds only as scope agent is the orchestrator's claim and is not
//     re-claimed. A candidate that the claim refuses for a state reason
//     (conflicting claim, lease or scope, exclusion, key reuse, ...) is
//     skipped and the next one tried. No candidate: status no_change, nothing written,
//     "claimed": false and "todo": null.
//   - A todo whose effective lease the agent holds comes before all: it is
//     the answer (claimed for the agent when unclaimed, and shown with its
//     lease when a lease key was asked for; no new execution is started over
//     the held one), so a retry never conflicts with the agent's own lease.
//     When the agent holds its claim only as the scope agent of an
//     orchestrator's claim, the todo is answered as it is (no_change; the
//     held key's exact retry replays its acquire), never re-claimed nor
//     refused.
//   - The operation of ready --claim is "todo.claim" (its commit is a claim).

import (
	"slices"
	"time"
)

// Ready returns the todos agent can start now (see the decisions above).
func Ready(v *View, goal, agent string, now time.Time) ([]*Todo, error) {
	ready, _, err := readyOf(v, goal, agent, now, false)
	return ready, err
}

// Why a todo is not ready (NotReady.Reasons), in the order Ready judges.
const (
	NotReadyClaimed      = "claimed"      // another agent's claim is in force
	NotReadyExcluded     = "excluded"     // the agent is excluded from it
	NotReadyBound        = "bound"        // bound to another agent
	NotReadyHeld         = "held"         // another agent's lease is in force
	NotReadyDependencies = "dependencies" // a dependency is not done
	NotReadyScope        = "scope"        // a required scope overlaps another todo's lease in force
)

// MaxNotReady bounds the todos NotReady lists (the rest are counted).
const MaxNotReady = 50

// NotReady is an open todo the agent cannot start now, and why.
type NotReady struct {
	TodoID   string           `json:"todo_id"`
	Priority string           `json:"priority"`
	Reasons  []NotReadyReason `json:"reasons"`
}

// NotReadyReason is one reason; its fields say who or what stands in the way.
type NotReadyReason struct {
	Kind string `json:"kind"`
	// Agent is the claim holder, the lease owner or the bound agent.
	Agent string `json:"agent_id,omitempty"`
	// TodoID and Scope name the other todo whose lease holds an
	// overlapping scope, and that scope.
	TodoID       string     `json:"todo_id,omitempty"`
	Scope        string     `json:"scope,omitempty"`
	Dependencies []string   `json:"dependencies,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
}

// ReadyExplained is Ready with the open, not archived todos that are not
// ready for agent and why (sorted as Ready sorts, at most MaxNotReady;
// more counts the rest): a board may show a todo as Ready (unclaimed, no
// lease, dependencies done) that `todo ready` does not list, because its
// required scopes overlap another todo's lease, and this says so.
func ReadyExplained(v *View, goal, agent string, now time.Time) (ready []*Todo, notReady []NotReady, more int, err error) {
	ready, notReady, err = readyOf(v, goal, agent, now, true)
	if err != nil {
		return nil, nil, 0, err
	}
	if len(notReady) > MaxNotReady {
		more = len(notReady) - MaxNotReady
		notReady = notReady[:MaxNotReady]
	}
	return ready, notReady, more, nil
}

// readyOf judges the goal's open todos for agent; explain also collects
// every reason a todo is not ready (else the first one skips it).
func readyOf(v *View, goal, agent string, now time.Time, explain bool) ([]*Todo, []NotReady, error) {
	g, err := RequireGoal(v, goal)
	if err != nil {
		return nil, nil, err
	}
	if agent != "" {
		if _, err := RequireAgent(v, goal, "agent id", agent); err != nil {
			return nil, nil, err
		}
	}
	if g.Status == GoalArchived {
		return []*Todo{}, nil, nil
	}
	todos := v.listedTodos(goal) // read only: the callers show them, never modify them
	if todos == nil {
		if todos, err = v.todosShared(goal); err != nil {
			return nil, nil, err
		}
	}
	out := make([]*Todo, 0, len(todos))
	var why []NotReady
	// The todos by id, made on the first dependency looked up (most todos
	// depend on none; at 10,000 todos the map was 0.7 ms of a 30 ms ready).
	var byID map[string]*Todo
	lookup := func(id string) (*Todo, error) {
		if byID == nil {
			byID = make(map[string]*Todo, len(todos))
			for _, t := range todos {
				byID[t.ID] = t
			}
		}
		return byID[id], nil
	}
	// Only active, unexpired leases can be effective: judge those, each
	// with its todo (found in one pass over the todos).
	active, err := v.activeLeases(goal)
	if err != nil {
		return nil, nil, err
	}
	live := map[string]ActiveLease{}
	for _, e := range active {
		if now.Before(e.ExpiresAt) {
			live[e.TodoID] = e
		}
	}
	leaseOf := map[string]*Lease{}
	owners := map[string]*Agent{}
	effective := map[string]bool{} // todo id → its lease is effective
	anyScoped := false
	for i := 0; i < len(todos) && len(leaseOf) < len(live); i++ {
		t := todos[i]
		e, ok := live[t.ID]
		if !ok {
			continue
		}
		// The entry holds what the judgement reads (its record was
		// validated when it was listed): no record is decoded here.
		l := e.Lease()
		leaseOf[l.TodoID] = l
		a, ok := owners[l.Owner]
		if !ok {
			if a, err = v.Agent(goal, l.Owner); err != nil {
				return nil, nil, err
			}
			owners[l.Owner] = a
		}
		if LeaseEffective(l, t, a, now) {
			effective[l.TodoID] = true
			anyScoped = anyScoped || len(l.WriteScopes) > 0
		}
	}
	var skipped []*Todo
	for _, t := range todos {
		if !Open(t) {
			continue
		}
		var reasons []NotReadyReason
		// no reports a reason; it says whether to judge on (explain) or
		// skip the todo at once.
		no := func(r NotReadyReason) bool {
			reasons = append(reasons, r)
			return explain
		}
		holds := agent != "" && HoldsClaim(t, agent, now)
		if ClaimEffective(t, now) && !holds && !no(NotReadyReason{Kind: NotReadyClaimed, Agent: t.ClaimedBy, ExpiresAt: utcPtr(t.ClaimExpiresAt)}) {
			continue
		}
		if agent != "" && Excluded(t, agent) && !no(NotReadyReason{Kind: NotReadyExcluded, Agent: agent}) {
			continue
		}
		if agent != "" && !holds && t.BoundAgent != "" && t.BoundAgent != agent && !no(NotReadyReason{Kind: NotReadyBound, Agent: t.BoundAgent}) {
			continue
		}
		if effective[t.ID] && (agent == "" || leaseOf[t.ID].Owner != agent) {
			l := leaseOf[t.ID]
			if !no(NotReadyReason{Kind: NotReadyHeld, Agent: l.Owner, ExpiresAt: utcPtr(&l.ExpiresAt)}) {
				continue
			}
		}
		open, err := openDeps(t, lookup)
		if err != nil {
			return nil, nil, err
		}
		if len(open) > 0 && !no(NotReadyReason{Kind: NotReadyDependencies, Dependencies: open}) {
			continue
		}
		if anyScoped && len(t.RequiredWriteScopes) > 0 && (len(reasons) == 0 || explain) {
			conflicts, err := ScopeConflicts(v, goal, t.ID, t.RequiredWriteScopes, now)
			if err != nil {
				return nil, nil, err
			}
			for _, c := range conflicts {
				if !no(NotReadyReason{Kind: NotReadyScope, Agent: c.Owner, TodoID: c.TodoID, Scope: c.Scope}) {
					break
				}
			}
		}
		if len(reasons) == 0 {
			out = append(out, t)
		} else if explain {
			skipped = append(skipped, t)
			why = append(why, NotReady{TodoID: t.ID, Priority: t.Priority, Reasons: reasons})
		}
	}
	SortTodos(out)
	if explain {
		rank := map[string]int{}
		SortTodos(skipped)
		for i, t := range skipped {
			rank[t.ID] = i
		}
		slices.SortFunc(why, func(a, b NotReady) int { return rank[a.TodoID] - rank[b.TodoID] })
	}
	return out, why, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ReadyClaimRequest claims the first ready todo (todo ready --claim).
type ReadyClaimRequest struct {
	Goal            string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Actor           string `json:"agent_id,omitempty" desc:"the agent looking for work (default: the goal's only agent)"`
	ClaimTTLMinutes int64  `json:"claim_ttl_minutes,omitempty" desc:"the claim expires after this many minutes (0: never)"`
	LeaseKey        string `json:"task_lease_idempotency_key,omitempty" desc:"also acquire the task lease with this execution key"`
	LeaseTTLSeconds int64  `json:"ttl_seconds,omitempty" desc:"with task_lease_idempotency_key: the lease TTL in seconds"`
	rules                  // 1: the rules of loopx.todo.ready-claim/v1 (re-verifying its commits)
}

// readyClaimSkippable are the refusals that make ready --claim try the next
// candidate instead of failing.
var readyClaimSkippable = []Code{CodeClaimConflict, CodeTodoLeaseConflict, CodeWriteScopeConflict,
	CodeIdempotencyKeyReuse, CodeAgentExcluded, CodeBoundAgentMismatch, CodeLeaseGenerationExhausted,
	CodeExecutionNotCurrent, CodeTodoNotOpen, CodeTodoArchived}

// ReadyClaim decides `todo ready --claim`: it claims (and, with LeaseKey,
// acquires) the first ready todo for the actor.
func ReadyClaim(v *View, req ReadyClaimRequest, now time.Time) (*Outcome, error) {
	// Validate the request shape once, so candidate refusals are state ones.
	probe := ClaimRequest{Goal: req.Goal, Todo: "todo_probe", Actor: req.Actor, ClaimTTLMinutes: req.ClaimTTLMinutes,
		LeaseKey: req.LeaseKey, LeaseTTLSeconds: req.LeaseTTLSeconds}
	if err := checkClaimRequest(&probe); err != nil {
		return nil, err
	}
	if _, err := RequireActiveGoal(v, req.Goal); err != nil {
		return nil, err
	}
	ready, err := Ready(v, req.Goal, req.Actor, now)
	if err != nil {
		return nil, err
	}
	// A todo whose effective lease the actor holds is the answer: the agent
	// is working on it already (a retry after a lost answer, with or
	// without the lease key), never a conflict with itself nor a second
	// todo. Its claim is taken if it has none; a new lease key is not
	// acquired over the held execution.
	for _, t := range ready {
		l, err := v.Lease(req.Goal, t.ID)
		if err != nil {
			return nil, err
		}
		if l == nil || l.Owner != req.Actor {
			continue
		}
		effective, err := leaseEffectiveIn(v, req.Goal, t, l, now)
		if err != nil {
			return nil, err
		}
		if !effective {
			continue
		}
		if ClaimEffective(t, now) && t.ClaimedBy != req.Actor {
			// The actor holds the claim as its scope agent: the
			// orchestrator's claim is not re-claimed (nor refused).
			return readyDelegated(v, req, t, l, now)
		}
		scope := ""
		if ClaimEffective(t, now) {
			scope = t.ClaimScopeAgentID
		}
		if req.LeaseKey == l.IdempotencyKey {
			// The held execution's own key: its exact retry replays.
			o, err := readyClaimOne(v, req, t.ID, scope, now)
			if e, ok := AsError(err); !ok || e.Code != CodeIdempotencyKeyReuse {
				return o, err
			}
		}
		r := req
		r.LeaseKey, r.LeaseTTLSeconds = "", 0
		o, err := readyClaimOne(v, r, t.ID, scope, now)
		if err == nil && req.LeaseKey != "" {
			lv, err := ViewLease(v, req.Goal, l, now)
			if err != nil {
				return nil, err
			}
			o.Data.(*TodoResult).Lease = &lv
		}
		return o, err
	}
	// A ready todo the actor already claimed is the only candidate.
	for _, t := range ready {
		if EffectiveClaimant(t, now) == req.Actor {
			return readyClaimOne(v, req, t.ID, t.ClaimScopeAgentID, now)
		}
	}
	for _, t := range ready {
		if ClaimEffective(t, now) {
			continue
		}
		o, err := readyClaimOne(v, req, t.ID, "", now)
		if e, ok := AsError(err); ok && slices.Contains(readyClaimSkippable, e.Code) {
			continue
		}
		return o, err
	}
	claimed := false
	return &Outcome{Operation: OpTodoClaim, Status: StatusNoChange, Goal: req.Goal, Actor: req.Actor,
		Data: &TodoResult{GoalID: req.Goal, Claimed: &claimed}}, nil
}

// readyDelegated answers ready --claim with the todo whose effective lease
// the actor holds while it holds the todo's claim only as the scope agent of
// an orchestrator's claim: the todo as it is (no_change), with its lease when
// a lease key was asked for; the held execution's own key replays its
// acquire, as in a claim and acquire.
func readyDelegated(v *View, req ReadyClaimRequest, t *Todo, l *Lease, now time.Time) (*Outcome, error) {
	o := &Outcome{Operation: OpTodoClaim, Status: StatusNoChange, Goal: req.Goal, Todo: t.ID, Actor: req.Actor}
	if req.LeaseKey == l.IdempotencyKey {
		acq, err := atomically(v, func() (*Outcome, error) {
			return Acquire(v, AcquireRequest{Goal: req.Goal, Todo: t.ID, Owner: req.Actor, IdempotencyKey: req.LeaseKey,
				TTLSeconds: req.LeaseTTLSeconds, WriteScopes: t.RequiredWriteScopes}, now)
		})
		if e, ok := AsError(err); err != nil && (!ok || e.Code != CodeIdempotencyKeyReuse) {
			return nil, err
		}
		if err == nil {
			o.Status, o.Write, o.ReplayOf = acq.Status, acq.Write, acq.ReplayOf
			o.Version, o.Epoch, o.ReceiptID = acq.Version, acq.Epoch, acq.ReceiptID
		}
	}
	o.BoardChanged = o.Write
	res := &TodoResult{}
	if err := fillTodoResult(v, res, req.Goal, t, req.LeaseKey != "", now); err != nil {
		return nil, err
	}
	claimed := true
	res.Claimed = &claimed
	o.Data = res
	return o, nil
}

func readyClaimOne(v *View, req ReadyClaimRequest, todo, scope string, now time.Time) (*Outcome, error) {
	o, err := Claim(v, ClaimRequest{Goal: req.Goal, Todo: todo, Actor: req.Actor, ClaimTTLMinutes: req.ClaimTTLMinutes,
		ScopeAgent: scope, LeaseKey: req.LeaseKey, LeaseTTLSeconds: req.LeaseTTLSeconds, rules: req.rules}, now)
	if err != nil {
		return nil, err
	}
	claimed := true
	o.Data.(*TodoResult).Claimed = &claimed
	return o, nil
}
