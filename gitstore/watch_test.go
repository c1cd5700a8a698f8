package gitstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// expectSignal waits for the watch to fire (a generous bound: the test
// asserts that it fires, not how fast).
func expectSignal(t *testing.T, rw *RefWatch, what string) {
	t.Helper()
	select {
	case <-rw.C:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no signal from the ref watch", what)
	}
}

// drain drops a pending signal, so the next expectSignal sees a new one.
func drain(rw *RefWatch) {
	time.Sleep(50 * time.Millisecond) // events of the last change may still come
	select {
	case <-rw.C:
	default:
	}
}

func TestWatchRef(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	// Watch before the ref exists: the folders on the way are created by
	// the first commit.
	rw := s.WatchRef()
	defer rw.Close()
	if !rw.Native() {
		t.Skip("no file notifications here: callers poll")
	}
	h1 := commitT(t, s, put("a", "1"))
	expectSignal(t, rw, "first commit (ref and its folder created)")
	drain(rw)

	commitT(t, s, put("a", "2"))
	expectSignal(t, rw, "commit")
	drain(rw)

	// git's own writers are seen too.
	runGitT(t, dir, "update-ref", DefaultRef, h1.String())
	expectSignal(t, rw, "git update-ref")
	drain(rw)

	// Packed: the loose ref is removed, and later changes of packed-refs
	// (git rewrites it by rename) are seen.
	runGitT(t, dir, "pack-refs", "--all")
	expectSignal(t, rw, "pack-refs")
	drain(rw)
	if _, err := os.Stat(filepath.Join(s.CommonDir(), "refs/loopx/state")); err == nil {
		t.Fatal("pack-refs left the loose ref")
	}
	runGitT(t, dir, "update-ref", "refs/heads/other", h1.String())
	runGitT(t, dir, "pack-refs", "--all")
	expectSignal(t, rw, "packed-refs rewritten")
	drain(rw)

	// After packing, a commit creates the loose ref again.
	commitT(t, s, put("a", "3"))
	expectSignal(t, rw, "commit after packing")
	drain(rw)

	// Unrelated refs leave it quiet.
	runGitT(t, dir, "update-ref", "refs/heads/quiet", h1.String())
	select {
	case <-rw.C:
		t.Fatal("signal for an unrelated ref")
	case <-time.After(200 * time.Millisecond):
	}
}

func TestWatchRefClosed(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	rw := s.WatchRef()
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal("second close:", err)
	}
	commitT(t, s, put("a", "1"))
}
