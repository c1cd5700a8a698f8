//go:build unix

package gitstore

import (
	"os/exec"
	"syscall"
)

// detach runs cmd in a session of its own: without a controlling terminal
// ssh cannot prompt (for a passphrase, or to accept a host key) and fails
// instead of hanging; cancelling the command kills its whole process group
// (git's ssh, remote helper and pack-objects with it).
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
