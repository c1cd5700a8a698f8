package loopx_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerStaleRefLock: a git receive-pack killed on the server leaves its
// ref's lock file behind, and git never removes it: every push then fails
// with "cannot lock ref … File exists". That is not a decided refusal: after
// a few seconds of retries loopx says store_busy (exit 3), naming the lock,
// and pushes work again once the server's operator removes it.
func TestServerStaleRefLock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a git daemon and ten seconds of retries")
	}
	srv, _ := daemonServer(t)
	bare := bareRepo(t, srv.base, "state")
	dir := machine(t, srv.url("state"))
	must(t, dir, "goal", "create", "--goal-id", "g")
	lock := filepath.Join(bare, "refs", "loopx", "state.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := loopx(t, dir, nil, "agent", "register", "--goal-id", "g", "--agent-id", "agent-a")
	if r.code != 3 || r.errCode() != "store_busy" || !strings.Contains(r.raw, "state.lock") || !strings.Contains(r.raw, "operator can remove") {
		t.Fatalf("push against a stale server lock: exit %d %s", r.code, r.raw)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("gave up after %v", d)
	}
	os.Remove(lock)
	if r := must(t, dir, "agent", "register", "--goal-id", "g", "--agent-id", "agent-a"); r.out["status"] != "applied" {
		t.Fatalf("after the lock is gone: %s", r.raw)
	}
}
