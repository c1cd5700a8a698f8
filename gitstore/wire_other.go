//go:build !unix

package gitstore

import "os/exec"

// detach: GIT_TERMINAL_PROMPT=0 is all there is elsewhere.
func detach(cmd *exec.Cmd) {}
