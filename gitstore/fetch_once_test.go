package gitstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A fetch is one git command, one connection: it lists the ref and brings
// what is missing together (no ls-remote before it), whether the head is
// missing here, already here, or absent on the server; the head it returns
// is the server's, read from a FETCH_HEAD of its own, and the repository's
// FETCH_HEAD is left alone.
func TestFetchIsOneGitCommand(t *testing.T) { // not parallel: it swaps gitBinary
	requireGit(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	log := filepath.Join(t.TempDir(), "git.log")
	wrapper := filepath.Join(t.TempDir(), "git")
	script := "#!/bin/sh\nfor a in \"$@\"; do case $a in ls-remote|fetch|push) echo $a >>" + log + ";; esac; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := gitBinary
	gitBinary = wrapper
	defer func() { gitBinary = saved }()
	calls := func() []string {
		data, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.Fields(string(data))
	}
	ctx := context.Background()
	bare := newBare(t)
	a, b := remoteClient(t, bare), remoteClient(t, bare)

	if h, err := b.Fetch(ctx, "origin"); err != nil || !h.IsZero() {
		t.Fatalf("fetch of an absent ref: %v %v", h, err)
	}
	if got := calls(); strings.Join(got, " ") != "fetch" {
		t.Fatalf("fetch of an absent ref ran git %v, want one fetch", got)
	}
	c1 := pushCommit(t, a, ZeroHash, put("a", "1"))
	calls()
	h, err := b.Fetch(ctx, "origin")
	if err != nil || h != c1 || !b.hasCommit(c1) {
		t.Fatalf("fetch of a missing head: %v %v (have it: %v)", h, err, b.hasCommit(c1))
	}
	if got := calls(); strings.Join(got, " ") != "fetch" {
		t.Fatalf("fetch of a missing head ran git %v, want one fetch", got)
	}
	if h, err := b.Fetch(ctx, "origin"); err != nil || h != c1 {
		t.Fatalf("fetch of a head already here: %v %v", h, err)
	}
	if got := calls(); strings.Join(got, " ") != "fetch" {
		t.Fatalf("fetch of a head already here ran git %v, want one fetch", got)
	}
	if _, err := os.Stat(filepath.Join(b.gitDir, "FETCH_HEAD")); err == nil {
		t.Fatal("the fetch wrote the repository's FETCH_HEAD")
	}
	if tr, _ := readRef(b.commonDir, b.TrackingRef("origin")); tr != c1 {
		t.Fatalf("tracking ref at %v, want %v", tr, c1)
	}
}
