package lease

import (
	"testing"
	"time"
)

func TestCheckClock(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		head time.Time
		skew time.Duration
		bad  bool
	}{
		{"empty store", time.Time{}, 30 * time.Second, false},
		{"head behind", clock.Add(-time.Hour), 30 * time.Second, false},
		{"head equal", clock, 30 * time.Second, false},
		{"at the bound", clock.Add(30 * time.Second), 30 * time.Second, false},
		{"past the bound", clock.Add(31 * time.Second), 30 * time.Second, true},
		{"a year ahead", clock.AddDate(1, 0, 0), 30 * time.Second, true},
		{"a wider bound", clock.Add(90 * time.Second), 120 * time.Second, false},
		{"sub-second clock", clock.Add(30 * time.Second), 30 * time.Second, false},
	} {
		c := clock
		if tc.name == "sub-second clock" {
			c = clock.Add(900 * time.Millisecond) // truncated to the second, as decisions are
		}
		err := CheckClock(c, tc.head, tc.skew)
		if (err != nil) != tc.bad {
			t.Errorf("%s: %v", tc.name, err)
		}
		if e, ok := AsError(err); ok {
			if e.Code != CodeClockSkew || e.Details["max_clock_skew_seconds"] != int64(tc.skew/time.Second) ||
				e.Details["head_time"] != tc.head.Format(time.RFC3339) || e.Details["local_time"] != clock.Format(time.RFC3339) {
				t.Errorf("%s: %+v", tc.name, e)
			}
			if ClassOf(e.Code) != Transient {
				t.Errorf("clock_skew is not transient")
			}
		}
		if got := SkewOf(c, tc.head, tc.skew); (got != nil) != tc.bad || got != nil && got.MaxClockSkewSeconds != int64(tc.skew/time.Second) {
			t.Errorf("%s: SkewOf = %+v", tc.name, got)
		}
	}
	if MaxClockSkew(nil) != 30*time.Second || MaxClockSkew(&StoreMeta{MaxClockSkewSeconds: 5}) != 5*time.Second {
		t.Error("MaxClockSkew defaults")
	}
}

func TestClockReset(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	future := now.AddDate(1, 0, 0)
	setup := func(head time.Time) *View {
		files := MemFiles{}
		v := NewView(files, "rev", head)
		v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: now})
		v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: now, UpdatedAt: now})
		exp := future.Add(30 * time.Minute)
		v.PutTodo("g", &Todo{ID: "todo_fut", Text: "x", Status: TodoOpen, Priority: "P2", ClaimedBy: "a", ClaimTTLMinutes: 30,
			ClaimedAt: &future, ClaimExpiresAt: &exp, CreatedAt: now, UpdatedAt: now})
		v.PutTodo("g", &Todo{ID: "todo_now", Text: "y", Status: TodoOpen, Priority: "P2", CreatedAt: now, UpdatedAt: now})
		ren := future
		v.PutLease("g", &Lease{TodoID: "todo_fut", Owner: "a", IdempotencyKey: "k", Version: 2, Epoch: 1, Status: LeaseActive,
			WriteScopes: []string{}, AcquiredAt: now, RenewedAt: &ren, ExpiresAt: future.Add(10 * time.Minute)})
		v.PutLease("g", &Lease{TodoID: "todo_now", Owner: "a", IdempotencyKey: "k2", Version: 1, Epoch: 1, Status: LeaseActive,
			WriteScopes: []string{}, AcquiredAt: now, ExpiresAt: now.Add(5 * time.Minute)})
		for _, ch := range v.Changes() {
			files[ch.Path] = ch.Data
		}
		return NewView(files, "rev", head)
	}
	v := setup(future)
	o, err := ClockReset(v, ClockResetRequest{Actor: "ops", Reason: "wrong clock"}, now)
	if err != nil {
		t.Fatal(err)
	}
	d := o.Data.(*ClockResetData)
	if len(d.Leases) != 1 || d.Leases[0] != "g/todo_fut" || len(d.Claims) != 1 || o.AuthorityReason != "wrong clock" || !o.Write {
		t.Fatalf("reset = %+v %+v", o, d)
	}
	l, _ := v.Lease("g", "todo_fut")
	if !l.ExpiresAt.Equal(now.Add(10*time.Minute)) || !l.RenewedAt.Equal(now) || l.Version != 2 || l.Epoch != 1 || l.IdempotencyKey != "k" {
		t.Errorf("clamped lease %+v", l)
	}
	tn, _ := v.Lease("g", "todo_now")
	if !tn.ExpiresAt.Equal(now.Add(5 * time.Minute)) {
		t.Errorf("a lease within its TTL moved: %v", tn.ExpiresAt)
	}
	td, _ := v.Todo("g", "todo_fut")
	if !td.ClaimExpiresAt.Equal(now.Add(30 * time.Minute)) {
		t.Errorf("claim expiry %v", td.ClaimExpiresAt)
	}
	for _, tc := range []struct {
		name string
		head time.Time
		req  ClockResetRequest
		code Code
	}{
		{"nothing to reset", now.Add(30 * time.Second), ClockResetRequest{Actor: "ops", Reason: "r"}, CodeInvalidRequest},
		{"no reason", future, ClockResetRequest{Actor: "ops"}, CodeInvalidRequest},
		{"no actor", future, ClockResetRequest{Reason: "r"}, CodeInvalidAgentID},
	} {
		_, err := ClockReset(setup(tc.head), tc.req, now)
		if e, ok := AsError(err); !ok || e.Code != tc.code {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
