// Package soak is the switch between the two tiers of loopx's tests. The
// default tier is what `go test ./...` runs: every behaviour, at a scale
// that keeps the whole suite within a few minutes on two cores and steady
// on a loaded machine. The soak tier (LOOPX_SOAK=1, which .ci/run sets)
// runs the same tests longer and bigger: the 8×100 process races, the
// long linearizability runs, every transport of the remote races, big
// stores; and the tests that only make sense at that scale.
package soak

import (
	"os"
	"testing"
)

// Env is the variable that turns the soak tier on ("1").
const Env = "LOOPX_SOAK"

// Enabled reports whether this is a soak run.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Pick returns quick in the default tier and long in a soak run.
func Pick[T any](quick, long T) T {
	if Enabled() {
		return long
	}
	return quick
}

// Only skips t outside a soak run; why says what the test soaks.
func Only(t testing.TB, why string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("soak test (%s): run with %s=1", why, Env)
	}
}
