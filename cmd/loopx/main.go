// Command loopx divides work between agents with claims and fenced task
// leases kept on a Git ref. See the README.
package main

import (
	"os"
	"runtime/debug"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
)

// A loopx process lives for one command, usually a few milliseconds: its
// garbage is collected only once the heap nears memLimit, unless GOGC or
// GOMEMLIMIT say otherwise. (At 10,000 todos this saves ~4 ms of a 23 ms
// `todo add`; the largest command, a full list, peaks near 150 MB.)
const memLimit = 256 << 20

func main() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(memLimit)
	}
	os.Exit(cli.Main())
}
