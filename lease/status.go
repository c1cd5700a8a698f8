package lease

// loopx status: who holds what (contract section 4).
//
// Decisions written down here:
//   - A holding is one claim or one lease of an OPEN todo (status open, not
//     archived). Closed and archived todos can take no new execution, so
//     whatever they still record is history, not a holding.
//   - A lease is "active" when it is in force (LeaseEffective); a lease
//     whose status is still active but which is no longer in force is
//     listed under "expired" with the reason (LeaseLapse): expired,
//     owner_unregistered, owner_registered_again, owner_excluded,
//     claim_held_by_other. Such a holder blocks nobody and is replaced by
//     the next acquire (the takeover). Released leases are not holdings.
//   - A claim is active while in force (ClaimEffective); a claim past its
//     claim_expires_at that nobody took over or cleared is "expired".
//   - Active holdings are sorted soonest expiry first, holdings without an
//     expiry (claims without TTL) last; expired ones longest expired first;
//     ties by todo id, then kind (claim before lease).
//   - seconds_left is expires_at - now in whole seconds: negative for
//     expired holdings, null without an expiry.
//   - write_scopes are the lease's scopes; for a claim, the todo's required
//     write scopes (what a lease taken with the claim would cover).

import (
	"cmp"
	"slices"
	"time"
)

// OpStatus is the operation of `loopx status`.
const OpStatus = "status"

// Holding kinds.
const (
	HoldingClaim = "claim"
	HoldingLease = "lease"
)

// Reasons a holding is no longer in force.
const (
	LapseExpired              = "expired"
	LapseOwnerUnregistered    = "owner_unregistered"
	LapseOwnerRegisteredAgain = "owner_registered_again"
	LapseOwnerExcluded        = "owner_excluded"
	LapseClaimHeldByOther     = "claim_held_by_other"
	LapseTodoClosed           = "todo_closed"
	LapseReleased             = "released"
)

// Holding is one claim or lease as status shows it.
type Holding struct {
	TodoID     string `json:"todo_id"`
	Kind       string `json:"kind"`
	Owner      string `json:"owner"`
	ScopeAgent string `json:"scope_agent_id,omitempty"`
	// Epoch, Version and IdempotencyKey are the lease's (null for claims).
	Epoch          *int64     `json:"epoch"`
	Version        *int64     `json:"version"`
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	WriteScopes    []string   `json:"write_scopes"`
	ExpiresAt      *time.Time `json:"expires_at"`
	SecondsLeft    *int64     `json:"seconds_left"`
	// Reason says why an expired holding is no longer in force.
	Reason string `json:"reason,omitempty"`
}

// LeaseLapse judges l the way LeaseEffective does and names the first rule
// that takes it out of force ("" when it is in force). It never disagrees
// with LeaseEffective (see the table test).
func LeaseLapse(l *Lease, t *Todo, owner *Agent, now time.Time) string {
	switch {
	case l == nil || l.Status != LeaseActive:
		return LapseReleased
	case !now.Before(l.ExpiresAt):
		return LapseExpired
	case !Open(t):
		return LapseTodoClosed
	case owner == nil || !owner.Registered() || owner.ID != l.Owner:
		return LapseOwnerUnregistered
	case Excluded(t, l.Owner):
		return LapseOwnerExcluded
	case owner.Registration != l.OwnerRegistration:
		return LapseOwnerRegisteredAgain
	case ClaimEffective(t, now) && !HoldsClaim(t, l.Owner, now):
		return LapseClaimHeldByOther
	}
	return ""
}

// secondsLeft is until-now in whole seconds (rounded towards -inf).
func secondsLeft(until, now time.Time) *int64 {
	d := until.Sub(now)
	s := int64(d / time.Second)
	if d < 0 && d%time.Second != 0 {
		s--
	}
	return &s
}

// Holdings classifies the claims and leases of goal's open todos at now:
// those in force (active) and those no longer in force but not yet taken
// over (expired). Both are sorted as the file comment says and never nil.
func Holdings(todos []*Todo, leases []*Lease, agent func(id string) (*Agent, error), now time.Time) (active, expired []Holding, err error) {
	active, expired = []Holding{}, []Holding{}
	byID := make(map[string]*Todo, len(todos))
	for _, t := range todos {
		byID[t.ID] = t
		if !Open(t) || t.ClaimedBy == "" {
			continue
		}
		h := Holding{TodoID: t.ID, Kind: HoldingClaim, Owner: t.ClaimedBy, ScopeAgent: t.ClaimScopeAgentID,
			WriteScopes: nonNil(t.RequiredWriteScopes)}
		if t.ClaimExpiresAt != nil {
			at := t.ClaimExpiresAt.UTC()
			h.ExpiresAt, h.SecondsLeft = &at, secondsLeft(at, now)
		}
		if ClaimEffective(t, now) {
			active = append(active, h)
		} else {
			h.Reason = LapseExpired
			expired = append(expired, h)
		}
	}
	for _, l := range leases {
		t := byID[l.TodoID]
		if !Open(t) || l.Status != LeaseActive {
			continue
		}
		owner, err := agent(l.Owner)
		if err != nil {
			return nil, nil, err
		}
		epoch, version, at := l.Epoch, l.Version, l.ExpiresAt.UTC()
		h := Holding{TodoID: l.TodoID, Kind: HoldingLease, Owner: l.Owner, Epoch: &epoch, Version: &version,
			IdempotencyKey: l.IdempotencyKey, WriteScopes: nonNil(slices.Clone(l.WriteScopes)),
			ExpiresAt: &at, SecondsLeft: secondsLeft(at, now)}
		if h.Reason = LeaseLapse(l, t, owner, now); h.Reason == "" {
			active = append(active, h)
		} else {
			expired = append(expired, h)
		}
	}
	SortHoldings(active)
	SortHoldings(expired)
	return active, expired, nil
}

// SortHoldings orders holdings soonest expiry first, those without an expiry
// last, ties by todo id and kind.
func SortHoldings(hs []Holding) {
	slices.SortStableFunc(hs, func(a, b Holding) int {
		switch {
		case a.ExpiresAt == nil && b.ExpiresAt != nil:
			return 1
		case a.ExpiresAt != nil && b.ExpiresAt == nil:
			return -1
		case a.ExpiresAt != nil && !a.ExpiresAt.Equal(*b.ExpiresAt):
			return a.ExpiresAt.Compare(*b.ExpiresAt)
		}
		return cmp.Or(cmp.Compare(a.TodoID, b.TodoID), cmp.Compare(a.Kind, b.Kind))
	})
}

// NextExpiry is the soonest expiry after now among holdings in force: the
// next time the store's answers change without a commit (a waiting request
// re-decides then). nil when nothing in force expires.
func NextExpiry(active []Holding, now time.Time) *time.Time {
	var next *time.Time
	for _, h := range active {
		if h.ExpiresAt != nil && h.ExpiresAt.After(now) && (next == nil || h.ExpiresAt.Before(*next)) {
			at := *h.ExpiresAt
			next = &at
		}
	}
	return next
}

// ReadyItem is a ready todo as status lists it.
type ReadyItem struct {
	TodoID              string   `json:"todo_id"`
	Priority            string   `json:"priority"`
	Text                string   `json:"text"`
	ClaimedBy           string   `json:"claimed_by,omitempty"`
	RequiredWriteScopes []string `json:"required_write_scopes"`
}

// StatusData is the result of `loopx status`.
type StatusData struct {
	GoalID  string    `json:"goal_id"`
	AgentID string    `json:"agent_id,omitempty"`
	Now     time.Time `json:"now"`
	// Active holdings are in force; Expired ones no longer are but were not
	// taken over yet.
	Active  []Holding `json:"active"`
	Expired []Holding `json:"expired"`
	// Ready are the todos agent (or, without one, anybody) may take now;
	// NotReady the other open todos and why (ReadyExplained; at most
	// MaxNotReady, NotReadyMore counts the rest).
	Ready        []ReadyItem `json:"ready"`
	NotReady     []NotReady  `json:"not_ready"`
	NotReadyMore int         `json:"not_ready_more,omitempty"`
	// NextExpiry is the soonest expiry of an active holding.
	NextExpiry *time.Time `json:"next_expiry"`
}

// Status decides `loopx status`: the holdings of goal and the todos ready
// for agent ("" for anybody) at now.
func Status(v *View, goal, agent string, now time.Time) (*Outcome, error) {
	if _, err := RequireGoal(v, goal); err != nil {
		return nil, err
	}
	if agent != "" {
		if err := CheckAgentID("agent id", agent); err != nil {
			return nil, err
		}
	}
	todos, err := v.Todos(goal)
	if err != nil {
		return nil, err
	}
	leases, err := v.Leases(goal)
	if err != nil {
		return nil, err
	}
	active, expired, err := Holdings(todos, leases, func(id string) (*Agent, error) { return v.Agent(goal, id) }, now)
	if err != nil {
		return nil, err
	}
	ready, notReady, more, err := ReadyExplained(v, goal, agent, now)
	if err != nil {
		return nil, err
	}
	if notReady == nil {
		notReady = []NotReady{}
	}
	d := &StatusData{GoalID: goal, AgentID: agent, Now: now.UTC(), Active: active, Expired: expired,
		Ready: make([]ReadyItem, 0, len(ready)), NotReady: notReady, NotReadyMore: more, NextExpiry: NextExpiry(active, now)}
	for _, t := range ready {
		d.Ready = append(d.Ready, ReadyItem{TodoID: t.ID, Priority: t.Priority, Text: t.Text,
			ClaimedBy: EffectiveClaimant(t, now), RequiredWriteScopes: nonNil(t.RequiredWriteScopes)})
	}
	return &Outcome{Operation: OpStatus, Goal: goal, Data: d}, nil
}
