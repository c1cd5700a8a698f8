package gitstore

import (
	"context"
	"testing"
	"time"
)

func TestBackoffExponent(t *testing.T) {
	// The window grows over growFor lost races, then shrinks back to one
	// slot: a writer that has lost many races in a row retries soonest.
	for _, c := range []struct{ lost, exp int }{
		{0, 1}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 3}, {6, 2}, {7, 1}, {8, 0}, {9, 0}, {50, 0},
	} {
		if got := backoffExp(c.lost); got != c.exp {
			t.Errorf("backoffExp(%d) = %d, want %d", c.lost, got, c.exp)
		}
	}
}

func TestBackoffWindow(t *testing.T) {
	p := RetryPolicy{Initial: 2 * time.Millisecond, Max: 2 * time.Second}
	top := func(n time.Duration) time.Duration { return n - 1 } // the window's end
	bottom := func(time.Duration) time.Duration { return 0 }
	for _, c := range []struct {
		name     string
		exp      int
		slot     time.Duration
		lo, hiEx time.Duration // the window [lo, hiEx)
	}{
		{"a slot of 50 ms, first loss", 1, 50 * time.Millisecond, 2 * time.Millisecond, 100 * time.Millisecond},
		{"four losses: 16 slots", 4, 50 * time.Millisecond, 2 * time.Millisecond, 800 * time.Millisecond},
		{"capped at Max", 6, 50 * time.Millisecond, 2 * time.Millisecond, 2 * time.Second},
		{"one slot", 0, 50 * time.Millisecond, 2 * time.Millisecond, 50 * time.Millisecond},
		{"a slot shorter than Initial counts as Initial", 1, time.Microsecond, 2 * time.Millisecond, 4 * time.Millisecond},
		{"no slot measured yet", 0, 0, 2 * time.Millisecond, 2 * time.Millisecond},
	} {
		lo, hi := p.window(c.exp, c.slot, bottom), p.window(c.exp, c.slot, top)
		want := c.hiEx - 1
		if c.hiEx == c.lo {
			want = c.lo
		}
		if lo != c.lo || hi != want {
			t.Errorf("%s: window [%v, %v], want [%v, %v]", c.name, lo, hi, c.lo, want)
		}
	}
	// The random draw stays inside the window.
	for i := 0; i < 1000; i++ {
		if d := p.next(3, 10*time.Millisecond); d < 2*time.Millisecond || d >= 80*time.Millisecond {
			t.Fatalf("next(3, 10ms) = %v, outside [2ms, 80ms)", d)
		}
	}
}

func TestContentionMemory(t *testing.T) {
	s := openT(t, newRepoIn(t, t.TempDir()), Options{})
	if s.contention(LocalRef()) != nil {
		t.Fatal("the local ref keeps a contention note (its writers queue on the fence)")
	}
	r := &Remote{Name: "origin"}
	p := RetryPolicy{Initial: time.Millisecond, Max: 2 * time.Second}
	waited := func() time.Duration {
		m := s.contention(r)
		t0 := time.Now()
		if err := m.before(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	// Nothing noted: no wait, and a transaction that lost nothing writes
	// nothing.
	s.contention(r).after(0, time.Second)
	if data, _ := s.ReadSideFile(s.contention(r).name); data != nil {
		t.Fatalf("an uncontended transaction wrote %q", data)
	}
	// A transaction that lost races leaves a note; the next one starts
	// with a wait in that contention's window (4 losses of 100 ms
	// attempts: up to 1.6 s, drawn at random; a draw under 20 ms 20 times
	// in a row has odds below 10^-26).
	s.contention(r).after(4, 100*time.Millisecond)
	longest := time.Duration(0)
	for i := 0; i < 20 && longest < 20*time.Millisecond; i++ {
		longest = max(longest, waited())
	}
	if longest < 20*time.Millisecond {
		t.Fatalf("after a contended transaction the next never waited (longest %v)", longest)
	}
	// A note older than memoryFor is ignored; an uncontended transaction
	// removes the note.
	if err := s.WriteSideFile(s.contention(r).name, formatContention(4, 100*time.Millisecond, time.Now().Add(-memoryFor-time.Second)), false); err != nil {
		t.Fatal(err)
	}
	if d := waited(); d > 15*time.Millisecond {
		t.Fatalf("a stale note made the transaction wait %v", d)
	}
	m := s.contention(r)
	_ = m.before(context.Background(), p)
	m.after(0, 0)
	if data, _ := s.ReadSideFile(m.name); data != nil {
		t.Fatalf("note left after an uncontended transaction: %q", data)
	}
	// Another remote (or ref) has its own note.
	if s.contention(&Remote{Name: "backup"}).name == s.contention(r).name {
		t.Fatal("two remotes share a note")
	}
	// A damaged note is ignored.
	if err := s.WriteSideFile(m.name, []byte("garbage"), false); err != nil {
		t.Fatal(err)
	}
	if d := waited(); d > 15*time.Millisecond {
		t.Fatalf("a damaged note made the transaction wait %v", d)
	}
}
