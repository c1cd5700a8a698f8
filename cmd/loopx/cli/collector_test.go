package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestCollectForBigWork: gc's collector is paced by its heap (GOGC=50, no
// memory limit) unless the environment chose one, which it keeps.
func TestCollectForBigWork(t *testing.T) {
	percent0 := debug.SetGCPercent(100)
	debug.SetGCPercent(percent0)
	limit0 := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent0)
		debug.SetMemoryLimit(limit0)
	})
	for _, c := range []struct {
		name, gogc, gomemlimit string
		percent                int
		limit                  int64
	}{
		{"environment silent", "", "", bigWorkGCPercent, math.MaxInt64},
		{"GOGC chosen", "200", "", -1, 48 << 20},
		{"GOMEMLIMIT chosen", "", "1GiB", -1, 48 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			t.Setenv("GOMEMLIMIT", c.gomemlimit)
			// What main.go leaves for the short commands.
			debug.SetGCPercent(-1)
			debug.SetMemoryLimit(48 << 20)
			collectForBigWork()
			percent := debug.SetGCPercent(-1)
			limit := debug.SetMemoryLimit(-1)
			if percent != c.percent || limit != c.limit {
				t.Fatalf("GC percent %d, memory limit %d; want %d, %d", percent, limit, c.percent, c.limit)
			}
		})
	}
}
