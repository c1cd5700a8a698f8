package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/loopx-dev/loopx/internal/clock"
)

// Contention remembered between processes.
//
// Each loopx command is a process, and a process's backoff starts from
// nothing: a writer that just won a race through a server would start its
// next transaction at once, while the writers it beat are still waiting out
// their backoff, and win again (the capture effect of backoff: through one
// git daemon, 16 writers left the ones that had lost most waiting longest,
// some until they gave up). So a transaction through a server leaves, in a
// side file of its clone, how many races it lost and how long its attempts
// took; the next transaction of that clone starts with a wait in the window
// of that many lost races, as if it were still contending, unless the note
// is older than memoryFor (contention that old has passed, or the clone was
// idle). A transaction that lost nothing while such a note was in force
// leaves it one race smaller: the writers it just beat are still waiting
// out their backoff (removing the note let a winner take turn after turn:
// through one git daemon, one of 16 writers made its 45 mutations in 20 s
// while another waited 92 s for one). One that lost nothing otherwise
// removes it, so an uncontended writer never waits and never writes.

// memoryFor is how long a clone's last contention is taken into account.
const memoryFor = 3 * time.Second

// contentionMemory is the note of one clone and authority (nil: none kept,
// as for the local ref, whose writers queue on the fence instead).
type contentionMemory struct {
	s    *Store
	name string
	had  bool // a note was found
	// prev is the lost races of a note still in force (within memoryFor).
	prev int
	slot time.Duration
}

// contention returns the memory of auth's contention in s.
func (s *Store) contention(auth Authority) *contentionMemory {
	r, ok := auth.(*Remote)
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(r.Name + "\x00" + s.ref))
	return &contentionMemory{s: s, name: "loopx-contention/" + hex.EncodeToString(sum[:8])}
}

// before waits as the last transaction's contention says.
func (m *contentionMemory) before(ctx context.Context, p RetryPolicy) error {
	if m == nil {
		return nil
	}
	data, _ := m.s.ReadSideFile(m.name)
	if data == nil {
		return nil
	}
	m.had = true
	lost, slot, at, ok := parseContention(data)
	if !ok {
		return nil
	}
	age := m.s.clock.Since(at)
	if lost == 0 || age < 0 || age > memoryFor {
		return nil
	}
	m.prev, m.slot = lost, slot
	// The window of that contention at its peak (not of an old loser's
	// priority, whose window has shrunk again).
	if err := clock.Sleep(ctx, m.s.clock, p.WithBase(slot).PeakDelay(lost, rand.Float64())); err != nil {
		return fmt.Errorf("gitstore: %w", err)
	}
	return nil
}

// after notes what this transaction met (best effort: it is advice).
func (m *contentionMemory) after(lost int, slot time.Duration) {
	if m == nil {
		return
	}
	if lost == 0 && m.prev > 1 {
		// Won at once, but the clone was contending a moment ago: the
		// others it beat are still waiting; keep yielding, a little less.
		lost, slot = m.prev-1, m.slot
	}
	if lost == 0 {
		if m.had {
			_ = m.s.RemoveSideFile(m.name)
		}
		return
	}
	_ = m.s.WriteSideFile(m.name, formatContention(lost, slot, m.s.clock.Now()), false)
}

func formatContention(lost int, slot time.Duration, at time.Time) []byte {
	return fmt.Appendf(nil, "%d %d %d\n", lost, slot.Microseconds(), at.UnixMilli())
}

func parseContention(data []byte) (lost int, slot time.Duration, at time.Time, ok bool) {
	var us, ms int64
	if n, err := fmt.Sscanf(string(data), "%d %d %d\n", &lost, &us, &ms); err != nil || n != 3 || lost < 0 || us < 0 {
		return 0, 0, time.Time{}, false
	}
	return lost, time.Duration(us) * time.Microsecond, time.UnixMilli(ms), true
}
