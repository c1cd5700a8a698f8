package lease

import "time"

// Time (contract section 2). A decision uses the machine's clock, never
// earlier than the decision time recorded in the head, so time never runs
// backwards within one store. Because the head's time is a floor, one fast
// clock would otherwise spread to every machine (live leases would expire
// at once, and leases granted at that time would never expire by real
// time): when the head is more than the store's max_clock_skew_seconds
// ahead of the machine's clock, every mutation is refused with clock_skew
// (transient: fix the clock, or recover with `loopx clock-reset`).

// DefaultMaxClockSkewSeconds bounds how far ahead of a machine's clock the
// head may be, when loopx.yaml does not say.
const DefaultMaxClockSkewSeconds = 30

// MaxClockSkew is the store's bound (the default for a nil meta or 0).
func MaxClockSkew(m *StoreMeta) time.Duration {
	if m == nil || m.MaxClockSkewSeconds <= 0 {
		return DefaultMaxClockSkewSeconds * time.Second
	}
	return time.Duration(m.MaxClockSkewSeconds) * time.Second
}

// CheckClock refuses a decision on a head dated more than maxSkew ahead of
// the machine's clock.
func CheckClock(clock, head time.Time, maxSkew time.Duration) error {
	clock = clock.UTC().Truncate(time.Second)
	if head.IsZero() || head.Sub(clock) <= maxSkew {
		return nil
	}
	return SkewError(clock, head, maxSkew)
}

// SkewError is the clock_skew refusal, with its details.
func SkewError(clock, head time.Time, maxSkew time.Duration) *Error {
	return Errorf(CodeClockSkew, "the store's head is dated %s, %s ahead of this machine's clock (%s; at most %s allowed): fix the clock, or if the head is the one in the future, recover with `loopx clock-reset`",
		head.UTC().Format(time.RFC3339), head.Sub(clock).Round(time.Second), clock.UTC().Format(time.RFC3339), maxSkew).
		With("head_time", head.UTC().Format(time.RFC3339)).
		With("local_time", clock.UTC().Format(time.RFC3339)).
		With("max_clock_skew_seconds", int64(maxSkew/time.Second))
}

// Skew describes, for reads that judge expiry, a head dated beyond the
// bound: the store's time (the head's) is then not the machine's, and an
// expiry judged by it may be wrong. nil when within the bound.
type Skew struct {
	HeadTime            string `json:"head_time"`
	LocalTime           string `json:"local_time"`
	MaxClockSkewSeconds int64  `json:"max_clock_skew_seconds"`
}

// SkewOf returns the Skew of a read, or nil.
func SkewOf(clock, head time.Time, maxSkew time.Duration) *Skew {
	if CheckClock(clock, head, maxSkew) == nil {
		return nil
	}
	return &Skew{HeadTime: head.UTC().Format(time.RFC3339), LocalTime: clock.UTC().Truncate(time.Second).Format(time.RFC3339),
		MaxClockSkewSeconds: int64(maxSkew / time.Second)}
}

// ClockResetRequest recovers a store whose head is dated in the future.
type ClockResetRequest struct {
	Actor  string `json:"agent_id,omitempty" desc:"who recovers the store (recorded as author)" required:"true"`
	Reason string `json:"reason,omitempty" desc:"why the store's clock is reset (recorded)" required:"true"`
}

// ClockResetData is the result of clock-reset.
type ClockResetData struct {
	From string `json:"reset_from"`
	To   string `json:"reset_to"`
	// Leases and Claims name the todos (goal/todo) whose future expiry was
	// brought back to at most one TTL from now.
	Leases []string `json:"leases_clamped"`
	Claims []string `json:"claims_clamped"`
}

// ClockReset is the audited way back for a store whose head is dated more
// than the skew bound ahead of real time (a wrong clock or LOOPX_NOW wrote
// it). It is decided at the machine's clock, not at the head's (its commit
// is the one commit dated before its parent: the operation table marks it
// Rewinds), and brings every expiry that lies further ahead than its own
// TTL back to now + TTL: a lease renewed "next year" for 10 minutes now
// lasts 10 minutes, as if renewed now (renewed_at), its version, epoch and
// proof unchanged; a claim likewise. Boards are not redrawn by it (it
// spans goals): `todo project-markdown` redraws one, and verify lists the
// pending ones. A head within the bound has nothing to reset (invalid_request).
func ClockReset(v *View, req ClockResetRequest, now time.Time) (*Outcome, error) {
	if err := CheckAgentID("agent id", req.Actor); err != nil {
		return nil, err
	}
	if len(req.Reason) == 0 {
		return nil, Errorf(CodeInvalidRequest, "clock-reset needs --reason (it is recorded)")
	}
	m, err := RequireStore(v)
	if err != nil {
		return nil, err
	}
	if err := RequireAdmin(m, req.Actor, "clock-reset"); err != nil {
		return nil, err
	}
	skew := MaxClockSkew(m)
	if v.HeadTime.Sub(now) <= skew {
		return nil, Errorf(CodeInvalidRequest, "the head is dated %s, not more than %s ahead of this clock (%s): nothing to reset",
			v.HeadTime.UTC().Format(time.RFC3339), skew, now.UTC().Format(time.RFC3339))
	}
	d := &ClockResetData{From: v.HeadTime.UTC().Format(time.RFC3339), To: now.UTC().Format(time.RFC3339), Leases: []string{}, Claims: []string{}}
	goals, err := v.Goals()
	if err != nil {
		return nil, err
	}
	for _, g := range goals {
		leases, err := v.Leases(g.ID)
		if err != nil {
			return nil, err
		}
		for _, l := range leases {
			start := l.AcquiredAt
			if l.RenewedAt != nil && l.RenewedAt.After(start) {
				start = *l.RenewedAt
			}
			ttl := l.ExpiresAt.Sub(start)
			if l.Status == LeaseActive && l.ExpiresAt.After(now.Add(ttl)) {
				// As if renewed now for the same TTL (version and proof
				// unchanged), so its TTL reads the same.
				l.ExpiresAt, l.RenewedAt = now.Add(ttl), timePtr(now)
				v.PutLease(g.ID, l)
				d.Leases = append(d.Leases, g.ID+"/"+l.TodoID)
			}
		}
		todos, err := v.Todos(g.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range todos {
			ttl := time.Duration(t.ClaimTTLMinutes) * time.Minute
			if t.ClaimExpiresAt != nil && t.ClaimExpiresAt.After(now.Add(ttl)) {
				t.ClaimExpiresAt = timePtr(now.Add(ttl))
				v.PutTodo(g.ID, t)
				d.Claims = append(d.Claims, g.ID+"/"+t.ID)
			}
		}
	}
	return &Outcome{Operation: OpClockReset, Status: StatusApplied, Actor: req.Actor, Write: true,
		AuthorityReason: req.Reason, Data: d}, nil
}
