//go:build unix

package agent

import (
	"os"
	"syscall"
)

// ForwardedSignals are the signals `loopx run` passes on to its command.
var ForwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2}

// terminate asks the command to stop (SIGTERM).
func terminate(p *os.Process) { _ = p.Signal(syscall.SIGTERM) }

// exitStatus is the command's status, 128+signal when a signal ended it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalStatus is the status of a process ended by sig: 128+sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}
