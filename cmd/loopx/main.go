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
// `todo add`.) The limit keeps every command under 64 MiB: a warm `todo
// list` of 10,000 todos peaks at ~32 MiB and never collects; the same list
// on a cold record cache (it decodes every record) peaked at 161 MiB with a
// 256 MiB limit, 47 MiB with this one, for ~0.1 s more of collection.
const memLimit = 48 << 20

func main() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(memLimit)
	}
	os.Exit(cli.Main())
}
