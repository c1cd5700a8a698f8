package agent

import (
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

func TestWaitable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{lease.Errorf(lease.CodeTodoLeaseConflict, "x"), true},
		{lease.Errorf(lease.CodeWriteScopeConflict, "x"), true},
		{lease.Errorf(lease.CodeClaimConflict, "x"), true},
		{lease.Errorf(lease.CodeVersionMismatch, "x"), false},
		{lease.Errorf(lease.CodeIdempotencyKeyReuse, "x"), false},
		{lease.Errorf(lease.CodeTodoNotFound, "x"), false},
		{lease.Errorf(lease.CodeStoreBusy, "x"), false},
		{lease.Errorf(lease.CodeRemoteUnavailable, "x"), false},
		{errString("plain"), false},
	}
	for _, c := range cases {
		if got := Waitable(c.err); got != c.want {
			t.Errorf("Waitable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	no, yes := false, true
	claimCases := []struct {
		res  *loopx.Result[lease.TodoResult]
		want bool
	}{
		{nil, false},
		{&loopx.Result[lease.TodoResult]{Envelope: loopx.Envelope{Status: lease.StatusNoChange}, Data: lease.TodoResult{Claimed: &no}}, true},
		{&loopx.Result[lease.TodoResult]{Envelope: loopx.Envelope{Status: lease.StatusNoChange}, Data: lease.TodoResult{Claimed: &yes}}, false}, // re-claim of its own todo
		{&loopx.Result[lease.TodoResult]{Envelope: loopx.Envelope{Status: lease.StatusApplied}, Data: lease.TodoResult{Claimed: &yes}}, false},
		{&loopx.Result[lease.TodoResult]{Envelope: loopx.Envelope{Status: lease.StatusNoChange}, Data: lease.TodoResult{}}, false},
	}
	for i, c := range claimCases {
		if got := nothingClaimed(c.res); got != c.want {
			t.Errorf("case %d: nothingClaimed = %v, want %v", i, got, c.want)
		}
	}
}

func TestPollPolicy(t *testing.T) {
	p := DefaultPollPolicy
	var got []time.Duration
	d := time.Duration(0)
	for i := 0; i < 10; i++ {
		d = p.nextInterval(d)
		got = append(got, d)
	}
	want := []time.Duration{200 * time.Millisecond, 320 * time.Millisecond, 512 * time.Millisecond, 819200 * time.Microsecond,
		1310720 * time.Microsecond, 2097152 * time.Microsecond, 3355443200 * time.Nanosecond, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("intervals %v, want %v", got, want)
		}
	}
	for _, c := range []struct {
		r    float64
		want time.Duration
	}{{0, 2500 * time.Millisecond}, {0.5, 3750 * time.Millisecond}, {0.999999, 4999997500 * time.Nanosecond}} {
		if got := jitterUpper(5*time.Second, c.r); got != c.want {
			t.Errorf("jitterUpper(5s, %v) = %v, want %v", c.r, got, c.want)
		}
	}
}
