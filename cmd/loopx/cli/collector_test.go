package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestCollectPacedByHeap: gc and verify --history (GOGC=50), run, web and
// mcp (GOGC=100) get a collector paced by their heap, without the short
// commands' memory limit, unless the environment chose one, which they
// keep.
func TestCollectPacedByHeap(t *testing.T) {
	percent0 := debug.SetGCPercent(100)
	debug.SetGCPercent(percent0)
	limit0 := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent0)
		debug.SetMemoryLimit(limit0)
	})
	for _, c := range []struct {
		name, gogc, gomemlimit string
		collect                func()
		percent                int
		limit                  int64
	}{
		{"big work, environment silent", "", "", collectForBigWork, 50, math.MaxInt64},
		{"long run, environment silent", "", "", collectForLongRun, 100, math.MaxInt64},
		{"big work, GOGC chosen", "200", "", collectForBigWork, -1, 48 << 20},
		{"long run, GOGC chosen", "200", "", collectForLongRun, -1, 48 << 20},
		{"big work, GOMEMLIMIT chosen", "", "1GiB", collectForBigWork, -1, 48 << 20},
		{"long run, GOMEMLIMIT chosen", "", "1GiB", collectForLongRun, -1, 48 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			t.Setenv("GOMEMLIMIT", c.gomemlimit)
			// What main.go leaves for the short commands.
			debug.SetGCPercent(-1)
			debug.SetMemoryLimit(48 << 20)
			c.collect()
			percent := debug.SetGCPercent(-1)
			limit := debug.SetMemoryLimit(-1)
			if percent != c.percent || limit != c.limit {
				t.Fatalf("GC percent %d, memory limit %d; want %d, %d", percent, limit, c.percent, c.limit)
			}
		})
	}
}
