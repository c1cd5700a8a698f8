//go:build !unix

package agent

import "os"

// ForwardedSignals are the signals `loopx run` passes on to its command.
var ForwardedSignals = []os.Signal{os.Interrupt}

// terminate stops the command (no SIGTERM here: it is killed).
func terminate(p *os.Process) { _ = p.Kill() }

// exitStatus is the command's status.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

// signalStatus is the status of a process ended by sig.
func signalStatus(sig os.Signal) int { return 1 }
