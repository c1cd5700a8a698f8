package main

import (
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
)

func main() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(256 << 20)
	f, _ := os.Create(os.Getenv("PROF"))
	pprof.StartCPUProfile(f)
	n := 0
	for i := 0; i < 20; i++ {
		n = cli.Main()
	}
	pprof.StopCPUProfile()
	os.Exit(n)
}
