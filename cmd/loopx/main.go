// Command loopx divides work between agents with claims and fenced task
// leases kept on a Git ref. See the README.
package main

import (
	"os"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
)

func main() { os.Exit(cli.Main()) }
