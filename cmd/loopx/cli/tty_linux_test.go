package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: a real terminal without a person.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestIsTerminal: only a terminal is a terminal; /dev/null is a character
// device but a script's sink (issue 15), so its output is JSON.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	_, pts := openPTY(t)
	t.Setenv("LOOPX_FORMAT", "")
	for _, c := range []struct {
		name   string
		f      *os.File
		tty    bool
		format string
	}{
		{"/dev/null", null, false, "json"},
		{"pipe", w, false, "json"},
		{"regular file", file, false, "json"},
		{"pseudo-terminal", pts, true, "text"},
	} {
		if got := isTerminal(c.f); got != c.tty {
			t.Errorf("isTerminal(%s) = %v, want %v", c.name, got, c.tty)
		}
		if got := defaultFormat(c.f); got != c.format {
			t.Errorf("defaultFormat(%s) = %q, want %q", c.name, got, c.format)
		}
	}
}
