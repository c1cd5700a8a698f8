//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || aix)

package cli

import "os"

// isTerminal is the best guess where there is no termios: a character
// device that is not the null device.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}
