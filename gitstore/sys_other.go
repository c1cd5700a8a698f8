//go:build !unix

package gitstore

import "os"

// processAlive cannot tell here: assume alive, so that only the age rule
// removes a stale loopx ref lock.
func processAlive(pid int) bool { return pid > 0 }

// syncDirUnsupported: directories cannot be fsynced on this platform.
func syncDirUnsupported(err error) bool { return true }

// diskUsage is the size of a file (allocation is not reported here).
func diskUsage(fi os.FileInfo) int64 { return fi.Size() }

// mapFile reads a file whole (no mmap here).
func mapFile(name string) ([]byte, func(), error) {
	b, err := os.ReadFile(name)
	return b, func() {}, err
}
