package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newBare makes a bare repository to serve as the remote (file transport:
// the real git-upload-pack and git-receive-pack, which check old values).
func newBare(t testing.TB) string {
	t.Helper()
	requireGit(t)
	dir := filepath.Join(t.TempDir(), "server.git")
	runGitT(t, filepath.Dir(dir), "init", "-q", "--bare", dir)
	return dir
}

// remoteClient makes a repository whose origin is bare, and opens its store.
func remoteClient(t testing.TB, bare string) *Store {
	t.Helper()
	dir := newRepo(t)
	runGitT(t, dir, "remote", "add", "origin", bare)
	return openT(t, dir, Options{})
}

// pushCommit writes a commit on parent and pushes it.
func pushCommit(t testing.TB, s *Store, parent Hash, changes ...Change) Hash {
	t.Helper()
	n, err := s.WriteCommit(parent, changes, CommitInfo{Message: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Push(context.Background(), "origin", parent, n); err != nil {
		t.Fatalf("push: %v", err)
	}
	return n
}

func TestRemoteFetchPush(t *testing.T) {
	t.Parallel()
	bare := newBare(t)
	a := remoteClient(t, bare)
	b := remoteClient(t, bare)
	ctx := context.Background()

	h, err := a.Fetch(ctx, "origin")
	if err != nil || !h.IsZero() {
		t.Fatalf("empty remote: %v %v", h, err)
	}
	c1 := pushCommit(t, a, ZeroHash, put("x/a.txt", "a"), put("y/b.txt", "b"))
	if got := runGitT(t, bare, "rev-parse", DefaultRef); got != c1.String() {
		t.Fatalf("server at %s, pushed %s", got, c1)
	}
	// WriteCommit moved no ref; Push set the tracking ref.
	if head, _ := a.Head(); !head.IsZero() {
		t.Fatalf("local ref moved to %s", head)
	}
	if tr, _ := a.ReadRef(a.TrackingRef("origin")); tr != c1 {
		t.Fatalf("tracking ref %s, want %s", tr, c1)
	}

	// b fetches c1 and its objects become readable.
	h, err = b.Fetch(ctx, "origin")
	if err != nil || h != c1 {
		t.Fatalf("fetch: %v %v", h, err)
	}
	sn, err := b.Snapshot(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := readT(t, sn, "y/b.txt"); got != "b" {
		t.Fatalf("fetched content %q", got)
	}
	c2 := pushCommit(t, b, c1, put("y/c.txt", "c"))

	// a's push on the old head loses the compare-and-swap.
	stale, err := a.WriteCommit(c1, []Change{put("x/z.txt", "z")}, CommitInfo{Message: "stale"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Push(ctx, "origin", c1, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale push: %v", err)
	}
	// A fetch brings only what a lacks, and a can build on it.
	if h, err = a.Fetch(ctx, "origin"); err != nil || h != c2 {
		t.Fatalf("fetch: %v %v", h, err)
	}
	c3 := pushCommit(t, a, c2, put("x/z.txt", "z"))
	runGitT(t, bare, "fsck", "--strict", "--no-dangling")
	if got := firstParentChain(t, bare, DefaultRef); len(got) != 3 || got[0] != c3.String() {
		t.Fatalf("server chain %v", got)
	}
	if h, err := b.LsRemote(ctx, "origin"); err != nil || h != c3 {
		t.Fatalf("ls-remote: %v %v", h, err)
	}
}

// A push sends only the objects of the new commit that its parent lacks:
// the server (which unpacks a small push into loose objects) gains exactly
// the commit, the root tree, d07's tree and the new blob.
func TestRemotePushIsSmall(t *testing.T) {
	t.Parallel()
	bare := newBare(t)
	s := remoteClient(t, bare)
	var changes []Change
	for i := 0; i < 300; i++ {
		changes = append(changes, put(fmt.Sprintf("d%02d/f%03d.txt", i%30, i), fmt.Sprint(i)))
	}
	c1 := pushCommit(t, s, ZeroHash, changes...)
	c2, err := s.WriteCommit(c1, []Change{put("d07/new.txt", "new")}, CommitInfo{Message: "small"})
	if err != nil {
		t.Fatal(err)
	}
	before := looseObjects(t, bare)
	if err := s.Push(context.Background(), "origin", c1, c2); err != nil {
		t.Fatal(err)
	}
	if got := looseObjects(t, bare) - before; got != 4 {
		t.Fatalf("the server gained %d objects, want 4", got)
	}
	runGitT(t, bare, "fsck", "--strict", "--no-dangling")
}

// looseObjects counts the loose objects of a repository (git dir).
func looseObjects(t testing.TB, gitDir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(gitDir, "objects", "??", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// A hook's refusal is ErrRemoteRejected with its message; nothing moves.
func TestRemoteRejected(t *testing.T) {
	t.Parallel()
	bare := newBare(t)
	s := remoteClient(t, bare)
	c1 := pushCommit(t, s, ZeroHash, put("a", "a"))
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'no more, says the hook' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c2, err := s.WriteCommit(c1, []Change{put("b", "b")}, CommitInfo{Message: "refused"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Push(context.Background(), "origin", c1, c2)
	if !errors.Is(err, ErrRemoteRejected) || !strings.Contains(err.Error(), "no more, says the hook") {
		t.Fatalf("push: %v", err)
	}
	if got := runGitT(t, bare, "rev-parse", DefaultRef); got != c1.String() {
		t.Fatalf("server moved to %s", got)
	}
}

func TestRemoteErrors(t *testing.T) {
	t.Parallel()
	s := remoteClient(t, newBare(t))
	ctx := context.Background()
	if _, err := s.Fetch(ctx, "nosuch"); !errors.Is(err, ErrNoRemote) {
		t.Fatalf("unknown remote: %v", err)
	}
	if _, err := s.Fetch(ctx, "git://127.0.0.1:1/x.git"); !errors.Is(err, ErrRemoteUnavailable) {
		t.Fatalf("closed port: %v", err)
	}
	if _, err := s.Fetch(ctx, filepath.Join(t.TempDir(), "missing.git")); !errors.Is(err, ErrRemoteRejected) {
		t.Fatalf("missing repository: %v", err)
	}
	if _, err := s.Fetch(ctx, "http://127.0.0.1:1/x.git"); !errors.Is(err, ErrRemoteUnavailable) {
		t.Fatalf("closed http port: %v", err)
	}
}

// A large fetch is kept as a pack (fsynced, indexed) and is readable.
func TestRemoteFetchLargePack(t *testing.T) {
	old := loosePackLimit
	loosePackLimit = 10
	defer func() { loosePackLimit = old }()
	bare := newBare(t)
	a := remoteClient(t, bare)
	var changes []Change
	for i := 0; i < 50; i++ {
		changes = append(changes, put(fmt.Sprintf("f/%03d", i), fmt.Sprint("content ", i)))
	}
	c1 := pushCommit(t, a, ZeroHash, changes...)
	b := remoteClient(t, bare)
	h, err := b.Fetch(context.Background(), "origin")
	if err != nil || h != c1 {
		t.Fatalf("fetch: %v %v", h, err)
	}
	packs, _ := filepath.Glob(filepath.Join(b.CommonDir(), "objects", "pack", "pack-*.idx"))
	if len(packs) == 0 {
		t.Fatal("no pack kept")
	}
	sn, err := b.Snapshot(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := readT(t, sn, "f/049"); got != "content 49" {
		t.Fatalf("read %q", got)
	}
	c2 := pushCommit(t, b, c1, put("f/050", "x"))
	if got := runGitT(t, bare, "rev-parse", DefaultRef); got != c2.String() {
		t.Fatalf("server at %s", got)
	}
}

func TestUpdateRef(t *testing.T) {
	t.Parallel()
	s := openT(t, newRepo(t), Options{})
	c1 := commitT(t, s, put("a", "a"))
	ref := "refs/loopx/test/x"
	if err := s.UpdateRef(ref, ZeroHash, c1); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRef(ref, ZeroHash, c1); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	if got := runGitT(t, s.CommonDir(), "rev-parse", ref); got != c1.String() {
		t.Fatalf("git sees %s", got)
	}
	if err := s.UpdateRef(ref, c1, ZeroHash); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.ReadRef(ref); !h.IsZero() {
		t.Fatalf("deleted ref reads %s", h)
	}
	if ok, _ := s.IsAncestor(ZeroHash, c1, 10); !ok {
		t.Fatal("zero is an ancestor")
	}
}

// A clone that follows a busy server keeps what it fetches as packs (more
// than loosePackLimit objects: one pack, not a file and an fsync per
// object), counts them with its own packs, and the automatic GC merges
// them once there are more than maxOwnPacks, though the clone committed
// nothing itself (a server decided its mutations).
func TestFetchedPacksAreMerged(t *testing.T) {
	bare := newBare(t)
	a := remoteClient(t, bare)
	b := remoteClient(t, bare)
	b.gcSpread = 0 // the threshold itself
	idxs := func() int {
		m, _ := filepath.Glob(filepath.Join(b.CommonDir(), "objects", "pack", "pack-*.idx"))
		return len(m)
	}
	head := ZeroHash
	for round := 0; round <= maxOwnPacks; round++ {
		var changes []Change
		for i := 0; i < 40; i++ { // two or three mutations' objects
			changes = append(changes, put(fmt.Sprintf("r%02d/%03d", round, i), fmt.Sprint("content ", round, " ", i)))
		}
		head = pushCommit(t, a, head, changes...)
		if h, err := b.Fetch(context.Background(), "origin"); err != nil || h != head {
			t.Fatalf("fetch %d: %v %v", round, h, err)
		}
	}
	st, err := readGCState(b.CommonDir())
	if err != nil {
		t.Fatal(err)
	}
	if n := idxs(); n <= maxOwnPacks || len(st.cpacks) <= maxOwnPacks {
		t.Fatalf("%d packs, %d counted: each fetch should have kept one", n, len(st.cpacks))
	}
	b.MaybeGC()
	if n := idxs(); n > 2 {
		t.Fatalf("%d packs after the automatic GC", n)
	}
	sn, err := b.Snapshot(head)
	if err != nil {
		t.Fatal(err)
	}
	if got := readT(t, sn, "r00/000"); got != "content 0 0" {
		t.Fatalf("read %q", got)
	}
}
