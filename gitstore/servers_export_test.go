package gitstore

import (
	"fmt"
	"testing"
)

// The loopback Git servers of this package's tests, for the conformance
// suite's remote subjects (conformance_test.go, package gitstore_test).

// ServeBareForTest makes base/name.git, pushable over every transport.
func ServeBareForTest(t testing.TB, base, name string) string { return serveBare(t, base, name) }

// DaemonURLForTest serves base with git daemon on 127.0.0.1; it returns
// the URL of base's folder (append /name.git).
func DaemonURLForTest(t testing.TB, base string) string {
	return fmt.Sprintf("git://127.0.0.1:%d", gitDaemon(t, base))
}

// HTTPURLForTest serves base with git http-backend on 127.0.0.1, without
// authentication; it returns the URL of base's folder.
func HTTPURLForTest(t testing.TB, base string) string { return httpGitServer(t, base, "", "").url }

// RunGitForTest runs git in dir (the tests' environment) and returns its
// trimmed output.
func RunGitForTest(t testing.TB, dir string, args ...string) string { return runGitT(t, dir, args...) }
