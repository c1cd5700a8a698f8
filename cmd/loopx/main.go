// Command loopx divides work between agents with claims and fenced task
// leases kept on a Git ref. See the README.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

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
	os.Exit(profiled(cli.Main))
}

// profiled runs main, writing its CPU profile to
// $LOOPX_CPUPROFILE.<command>.<pid>
// when that is set (a developer's aid: the benches' processes are many and
// short, so each writes its own, for `go tool pprof` to merge).
func profiled(main func() int) int {
	prefix := os.Getenv("LOOPX_CPUPROFILE")
	if prefix == "" {
		return main()
	}
	what := "cmd"
	for _, a := range os.Args[1:] {
		if a == "run" || a == "server-hook" || a == "mcp" || a == "web" {
			what = a
			break
		}
	}
	f, err := os.Create(fmt.Sprintf("%s.%s.%d", prefix, what, os.Getpid()))
	if err != nil {
		return main()
	}
	defer f.Close()
	if pprof.StartCPUProfile(f) != nil {
		return main()
	}
	defer pprof.StopCPUProfile()
	return main()
}
