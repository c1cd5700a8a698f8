package agent

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel send the command SIGTERM when run dies
// (even by SIGKILL), so no work goes on without a lease being renewed.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
