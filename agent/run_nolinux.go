//go:build !linux

package agent

import "os/exec"

// setDeathSignal is Linux only: elsewhere a command outlives a run killed
// by SIGKILL (its lease still expires).
func setDeathSignal(cmd *exec.Cmd) {}
