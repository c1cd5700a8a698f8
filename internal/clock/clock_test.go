package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const guard = 10 * time.Second // real time: only a failing test waits this long

func fired(c <-chan time.Time) (time.Time, bool) {
	select {
	case t := <-c:
		return t, true
	default:
		return time.Time{}, false
	}
}

func TestFakeFiresTimersWhenTheyFallDue(t *testing.T) {
	f := NewFake(t0)
	a := f.NewTimer(3 * time.Second)
	b := f.NewTimer(time.Second)
	c := f.NewTimer(5 * time.Second)
	now := f.NewTimer(0)
	if _, ok := fired(now.C()); !ok {
		t.Fatal("a timer of 0 did not fire at once")
	}
	if n := f.Waiters(); n != 3 {
		t.Fatalf("%d waiters, want 3", n)
	}
	f.Step(999 * time.Millisecond)
	for _, tm := range []Timer{a, b, c} {
		if _, ok := fired(tm.C()); ok {
			t.Fatal("a timer fired early")
		}
	}
	f.Step(time.Millisecond)
	if at, ok := fired(b.C()); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("the 1s timer: fired %v at %v", ok, at)
	}
	if !c.Stop() || c.Stop() {
		t.Fatal("Stop of a pending timer, then of a stopped one")
	}
	f.Step(10 * time.Second)
	if at, ok := fired(a.C()); !ok || !at.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("the 3s timer: fired %v at %v (the time it was stepped to)", ok, at)
	}
	if _, ok := fired(c.C()); ok {
		t.Fatal("a stopped timer fired")
	}
	if a.Stop() {
		t.Fatal("Stop of a fired timer reported it pending")
	}
	if f.Waiters() != 0 || f.Since(t0) != 11*time.Second {
		t.Fatalf("waiters %d, since %v", f.Waiters(), f.Since(t0))
	}
	f.SetTime(t0)
	if !f.Now().Equal(t0) {
		t.Fatal("SetTime")
	}
}

func TestFakeNextTimerAndBlockUntil(t *testing.T) {
	f := NewFake(t0)
	done := make(chan error)
	go func() { done <- Sleep(context.Background(), f, 2*time.Second) }()
	if d, ok := f.NextTimer(guard); !ok || d != 2*time.Second {
		t.Fatalf("NextTimer = %v %v", d, ok)
	}
	if !f.BlockUntil(1, guard) {
		t.Fatal("BlockUntil(1)")
	}
	if f.BlockUntil(2, 10*time.Millisecond) {
		t.Fatal("BlockUntil(2) with one waiter")
	}
	f.Step(time.Second)
	select {
	case <-done:
		t.Fatal("Sleep returned early")
	default:
	}
	f.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := f.NextTimer(10 * time.Millisecond); ok {
		t.Fatal("NextTimer returned a timer nobody started")
	}
}

func TestSleepHonoursItsContext(t *testing.T) {
	f := NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Sleep(ctx, f, time.Hour) }()
	if !f.BlockUntil(1, guard) {
		t.Fatal("Sleep started no timer")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep after cancel = %v", err)
	}
	if f.Waiters() != 0 {
		t.Fatal("Sleep left its timer pending")
	}
	// A done context ends even a wait of zero, and starts no timer.
	if err := Sleep(ctx, f, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on a done context = %v", err)
	}
	if err := SleepUntil(context.Background(), f, t0.Add(-time.Second)); err != nil {
		t.Fatalf("SleepUntil the past = %v", err)
	}
}

func TestReal(t *testing.T) {
	if Or(nil) != Real {
		t.Fatal("Or(nil) is not Real")
	}
	f := NewFake(t0)
	if Or(f) != f {
		t.Fatal("Or(f) is not f")
	}
	tm := Real.NewTimer(time.Hour)
	if !tm.Stop() {
		t.Fatal("a real timer of an hour was not pending")
	}
	if d := Real.Since(Real.Now()); d < 0 || d > time.Minute {
		t.Fatalf("Real.Since(Now) = %v", d)
	}
}
