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
	// Remote polls: from 200ms, growing by 1.6 up to 5s, each in the upper
	// half of its window.
	p := DefaultPollPolicy.Remote
	want := []time.Duration{200 * time.Millisecond, 320 * time.Millisecond, 512 * time.Millisecond, 819200 * time.Microsecond,
		1310720 * time.Microsecond, 2097152 * time.Microsecond, 3355443200 * time.Nanosecond, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, hi := range want {
		if lo, got := p.Window(i + 1); got != hi || lo != hi/2 {
			t.Errorf("poll %d: window [%v, %v), want [%v, %v)", i+1, lo, got, hi/2, hi)
		}
	}
	if lo, hi := DefaultPollPolicy.Spread.Window(1); lo != 0 || hi != 20*time.Millisecond {
		t.Errorf("spread [%v, %v), want [0, 20ms)", lo, hi)
	}
}
