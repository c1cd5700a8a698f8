//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || aix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal: whether the terminal driver
// answers for it (isatty). A character device is not enough: /dev/null is
// one, and `loopx … >/dev/null` is a script, not a person.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}
