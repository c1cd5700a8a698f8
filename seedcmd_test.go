package loopx_test

import (
	"os"
	"strconv"
	"testing"
)

// TestSeedDir seeds the store in $SEED_DIR with $SEED_TODOS todos and
// $SEED_LEASES active leases (used by bench/*.sh); skipped otherwise.
func TestSeedDir(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("SEED_DIR")
	if dir == "" {
		t.Skip()
	}
	n, leases := 10000, 0
	if v := os.Getenv("SEED_TODOS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("SEED_LEASES"); v != "" {
		leases, _ = strconv.Atoi(v)
	}
	seedTodos(t, dir, n, leases)
}
