package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestOpenAndAccessors(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	s := openT(t, sub, Options{})
	if s.Ref() != DefaultRef {
		t.Errorf("Ref = %q", s.Ref())
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if wd, _ := filepath.EvalSymlinks(s.WorkDir()); wd != realDir {
		t.Errorf("WorkDir = %q, want %q", s.WorkDir(), dir)
	}
	if cd, _ := filepath.EvalSymlinks(s.CommonDir()); cd != filepath.Join(realDir, ".git") {
		t.Errorf("CommonDir = %q", s.CommonDir())
	}
	if h, err := s.Head(); err != nil || !h.IsZero() {
		t.Errorf("Head on absent ref = %v, %v", h, err)
	}
	sn, err := s.Snapshot(ZeroHash)
	if err != nil {
		t.Fatal(err)
	}
	if !sn.Revision().IsZero() || !sn.Time().IsZero() {
		t.Error("empty snapshot has a revision or time")
	}
	if got := readT(t, sn, "x"); got != "<missing>" {
		t.Error("empty snapshot has x")
	}
	if l, err := sn.List(""); err != nil || l != nil {
		t.Errorf("List on empty = %v, %v", l, err)
	}

	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Open outside a repository: %v", err)
	}
	for _, ref := range []string{"heads/x", "refs/", "refs/a..b", "refs/x.lock", "refs/a b", "refs//x"} {
		if _, err := Open(dir, Options{Ref: ref}); err == nil {
			t.Errorf("Open accepted ref %q", ref)
		}
	}
}

func TestInitRepo(t *testing.T) {
	t.Parallel()
	requireGit(t)
	dir := filepath.Join(t.TempDir(), "new")
	if err := InitRepo(dir); err != nil {
		t.Fatal(err)
	}
	s := openT(t, dir, Options{})
	commitT(t, s, put("a", "1"))
	runGitT(t, dir, "rev-parse", "--verify", DefaultRef)
	// Inside an existing repository: no-op (no nested .git).
	sub := filepath.Join(dir, "sub")
	if err := InitRepo(sub); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sub, ".git")); err == nil {
		t.Error("InitRepo created a nested repository")
	}
	fsckT(t, dir)
}

func TestBareRepo(t *testing.T) {
	t.Parallel()
	requireGit(t)
	dir := t.TempDir()
	runGitT(t, dir, "init", "-q", "--bare")
	s := openT(t, dir, Options{})
	if s.WorkDir() != "" {
		t.Errorf("WorkDir of bare = %q", s.WorkDir())
	}
	commitT(t, s, put("a/b", "x"))
	if got := runGitT(t, dir, "cat-file", "-p", DefaultRef+":a/b"); got != "x" {
		t.Errorf("git sees %q", got)
	}
	fsckT(t, dir)
}

func TestCommitReadListWalk(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 2*3600+30*60))
	unlock, err := s.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	h1, err := s.Commit(ZeroHash, []Change{
		put("todos/a.yaml", "A"),
		put("todos/b.yaml", "B"),
		put("todos/sub/deep/c.yaml", "C"),
		put("top.txt", "T"),
		put("todos.txt", "sorts before todos/ in git order"),
		put("todos-x", "sorts before todos/ too"),
		put("todos0", "sorts after todos/"),
		put("empty", ""),
	}, CommitInfo{Message: "first\n\nbody", AuthorName: "Ann", AuthorEmail: "ann@example.com",
		CommitterName: "Bot", CommitterEmail: "bot@example.com", When: when})
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if head, _ := s.Head(); head != h1 {
		t.Fatalf("Head = %v, want %v", head, h1)
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef); got != h1.String() {
		t.Fatalf("git rev-parse = %s", got)
	}
	if got := runGitT(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ad|%s", "--date=iso", DefaultRef); got != "Ann <ann@example.com>|Bot <bot@example.com>|2024-05-06 07:08:09 +0230|first" {
		t.Errorf("git log = %q", got)
	}
	sn, err := s.Snapshot(h1)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Revision() != h1 || !sn.Time().Equal(when) {
		t.Errorf("Revision/Time = %v %v", sn.Revision(), sn.Time())
	}
	for p, want := range map[string]string{
		"todos/a.yaml": "A", "todos/sub/deep/c.yaml": "C", "top.txt": "T", "empty": "",
		"todos/missing": "<missing>", "todos": "<missing>", "top.txt/x": "<missing>", "nope/x": "<missing>",
	} {
		if got := readT(t, sn, p); got != want {
			t.Errorf("Read(%q) = %q, want %q", p, got, want)
		}
	}
	list, err := sn.List("")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"empty", false}, {"todos", true}, {"todos-x", false}, {"todos.txt", false}, {"todos0", false}, {"top.txt", false}}
	if !reflect.DeepEqual(list, want) {
		t.Errorf("List root = %v", list)
	}
	list, _ = sn.List("todos")
	if !reflect.DeepEqual(list, []Entry{{"a.yaml", false}, {"b.yaml", false}, {"sub", true}}) {
		t.Errorf("List todos = %v", list)
	}
	if list, err := sn.List("missing/dir"); list != nil || err != nil {
		t.Errorf("List missing = %v, %v", list, err)
	}
	if list, err := sn.List("top.txt"); list != nil || err != nil {
		t.Errorf("List file = %v, %v", list, err)
	}
	all := walkT(t, sn, "")
	if len(all) != 8 || all["todos/sub/deep/c.yaml"] != "C" {
		t.Errorf("Walk = %v", all)
	}
	if got := walkT(t, sn, "todos"); !reflect.DeepEqual(got, map[string]string{"todos/a.yaml": "A", "todos/b.yaml": "B", "todos/sub/deep/c.yaml": "C"}) {
		t.Errorf("Walk todos = %v", got)
	}
	if got := walkT(t, sn, "nowhere"); len(got) != 0 {
		t.Errorf("Walk missing = %v", got)
	}
	stop := errors.New("stop")
	n := 0
	if err := sn.Walk("", func(string, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Walk error = %v after %d", err, n)
	}
	// git agrees on the content.
	if got := runGitT(t, dir, "ls-tree", "-r", "--name-only", DefaultRef); got != strings.Join([]string{
		"empty", "todos-x", "todos.txt", "todos/a.yaml", "todos/b.yaml", "todos/sub/deep/c.yaml", "todos0", "top.txt"}, "\n") {
		t.Errorf("git ls-tree:\n%s", got)
	}

	// Second commit: update, add, delete.
	h2 := commitT(t, s, put("todos/a.yaml", "A2"), del("todos/b.yaml"), put("new/file", "N"), del("does/not/exist"))
	sn2 := snapT(t, s)
	if sn2.Revision() != h2 {
		t.Fatal("head is not the new commit")
	}
	if readT(t, sn2, "todos/a.yaml") != "A2" || readT(t, sn2, "todos/b.yaml") != "<missing>" || readT(t, sn2, "new/file") != "N" {
		t.Error("second commit content wrong")
	}
	// The old snapshot is unchanged.
	if readT(t, sn, "todos/a.yaml") != "A" || readT(t, sn, "todos/b.yaml") != "B" {
		t.Error("old snapshot changed")
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef+"^"); got != h1.String() {
		t.Errorf("parent = %s", got)
	}
	fsckT(t, dir)
}

func TestDeleteRemovesEmptyTrees(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	commitT(t, s, put("a/b/c/d.txt", "1"), put("a/x.txt", "2"), put("z", "3"))
	commitT(t, s, del("a/b/c/d.txt"))
	sn := snapT(t, s)
	if l, _ := sn.List("a"); !reflect.DeepEqual(l, []Entry{{"x.txt", false}}) {
		t.Errorf("a = %v, want the empty b/c gone", l)
	}
	if got := runGitT(t, dir, "ls-tree", "-r", "-t", "--name-only", DefaultRef); got != "a\na/x.txt\nz" {
		t.Errorf("ls-tree = %q", got)
	}
	// Deleting a directory removes its subtree.
	commitT(t, s, put("a/q/r", "4"))
	commitT(t, s, del("a"))
	if l, _ := snapT(t, s).List(""); !reflect.DeepEqual(l, []Entry{{"z", false}}) {
		t.Errorf("root = %v", l)
	}
	// Deleting everything leaves the empty tree.
	commitT(t, s, del("z"))
	sn = snapT(t, s)
	if l, _ := sn.List(""); len(l) != 0 {
		t.Errorf("root = %v", l)
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef+"^{tree}"); got != emptyTree.String() {
		t.Errorf("tree = %s", got)
	}
	// An empty change set still commits (audit commit).
	before, _ := s.Head()
	after := commitT(t, s)
	if after == before || runGitT(t, dir, "rev-parse", DefaultRef+"^") != before.String() {
		t.Error("empty commit not made")
	}
	fsckT(t, dir)
}

func TestUnchangedSubtreesKeepHash(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	commitT(t, s, put("a/1", "1"), put("b/c/2", "2"), put("b/d/3", "3"))
	tree := func(rev string) string { return runGitT(t, dir, "rev-parse", rev) }
	a1, bc1, bd1, root1 := tree(DefaultRef+":a"), tree(DefaultRef+":b/c"), tree(DefaultRef+":b/d"), tree(DefaultRef+"^{tree}")
	commitT(t, s, put("b/d/3", "three"))
	if tree(DefaultRef+":a") != a1 || tree(DefaultRef+":b/c") != bc1 {
		t.Error("unchanged subtree rewritten")
	}
	if tree(DefaultRef+":b/d") == bd1 || tree(DefaultRef+"^{tree}") == root1 {
		t.Error("changed path not rewritten")
	}
	// Writing the same content gives the same tree.
	root2 := tree(DefaultRef + "^{tree}")
	commitT(t, s, put("b/d/3", "three"))
	if tree(DefaultRef+"^{tree}") != root2 {
		t.Error("identical rewrite changed the tree")
	}
	fsckT(t, dir)
}

func TestInvalidPaths(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	commitT(t, s, put("f", "1"), put("d/x", "2"))
	unlock, err := s.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	head, _ := s.Head()
	bad := []string{"", "/abs", "a//b", "a/", "./a", "a/./b", "a/..", "../x", ".git", ".GIT/config", "a/.Git", "a\\b",
		"nul\x00byte", ".git.", ".git ", "git~1", "GIT~1/x", ".git::$INDEX_ALLOCATION", ".g\u200cit"}
	for _, p := range bad {
		_, err := s.Commit(head, []Change{put("ok", "1"), put(p, "x")}, CommitInfo{})
		if !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Commit(%q) = %v", p, err)
		} else if p != "" && !strings.Contains(err.Error(), "invalid path") {
			t.Errorf("error does not name the path: %v", err)
		}
	}
	// File/directory clashes.
	for _, c := range []Change{put("f/x", "1"), put("d", "1")} {
		if _, err := s.Commit(head, []Change{c}, CommitInfo{}); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Commit(%q) = %v", c.Path, err)
		}
	}
	if h, _ := s.Head(); h != head {
		t.Fatal("a rejected commit moved the ref")
	}
	// Replacing is possible by deleting first.
	if _, err := s.Commit(head, []Change{del("f"), put("f/x", "1"), del("d"), put("d", "file")}, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	sn := snapT(t, s)
	for _, p := range bad {
		if _, _, err := sn.Read(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Read(%q) = %v", p, err)
		}
		if p != "" {
			if _, err := sn.List(p); !errors.Is(err, ErrInvalidPath) {
				t.Errorf("List(%q) = %v", p, err)
			}
		}
	}
	for _, p := range []string{".gitignore", "a.git", "git~2", "..a", "a..", "x/.gitx", ".g\u200cix"} {
		if !ValidPath(p) {
			t.Errorf("ValidPath(%q) = false", p)
		}
	}
	unlock()
	fsckT(t, dir)
}

func TestCASConflict(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	unlock, _ := s.Lock(context.Background(), true)
	defer unlock()
	h1, err := s.Commit(ZeroHash, []Change{put("a", "1")}, CommitInfo{})
	if err != nil {
		t.Fatal(err)
	}
	// Expecting absence when it exists.
	if _, err := s.Commit(ZeroHash, []Change{put("a", "2")}, CommitInfo{}); !errors.Is(err, ErrConflict) {
		t.Errorf("create over existing: %v", err)
	}
	h2, err := s.Commit(h1, []Change{put("a", "2")}, CommitInfo{})
	if err != nil {
		t.Fatal(err)
	}
	// Stale expected.
	if _, err := s.Commit(h1, []Change{put("a", "3")}, CommitInfo{}); !errors.Is(err, ErrConflict) {
		t.Errorf("stale expected: %v", err)
	}
	if h, _ := s.Head(); h != h2 {
		t.Error("ref moved by a lost CAS")
	}
	if _, err := os.Stat(filepath.Join(s.CommonDir(), "refs/loopx/state.lock")); err == nil {
		t.Error("lock left behind")
	}
	if names, _ := filepath.Glob(filepath.Join(s.CommonDir(), refLockTmpGlob)); len(names) != 0 {
		t.Errorf("twins left behind: %v", names)
	}
	unlock()
	fsckT(t, dir)
}

func TestPackedRefs(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	h1 := commitT(t, s, put("a", "1"))
	runGitT(t, dir, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(s.CommonDir(), "refs/loopx/state")); err == nil {
		t.Fatal("pack-refs left the loose ref")
	}
	if h, err := s.Head(); err != nil || h != h1 {
		t.Fatalf("Head from packed-refs = %v, %v; want %v", h, err, h1)
	}
	// CAS against the packed value works, and the loose ref then wins.
	unlock, _ := s.Lock(context.Background(), true)
	if _, err := s.Commit(ZeroHash, []Change{put("a", "x")}, CommitInfo{}); !errors.Is(err, ErrConflict) {
		t.Errorf("CAS vs packed: %v", err)
	}
	h2, err := s.Commit(h1, []Change{put("a", "2")}, CommitInfo{})
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(); h != h2 {
		t.Error("loose ref does not win over packed-refs")
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef); got != h2.String() {
		t.Errorf("git sees %s", got)
	}
	runGitT(t, dir, "pack-refs", "--all")
	if h, _ := s.Head(); h != h2 {
		t.Error("repacked")
	}
	fsckT(t, dir)
}

func TestLinkedWorktree(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	runGitT(t, dir, "worktree", "add", "-q", "-b", "other", wt)
	sw := openT(t, filepath.Join(wt), Options{})
	sm := openT(t, dir, Options{})
	if sw.CommonDir() != sm.CommonDir() {
		t.Fatalf("common dirs differ: %s vs %s", sw.CommonDir(), sm.CommonDir())
	}
	if sw.WorkDir() == sm.WorkDir() {
		t.Error("same WorkDir")
	}
	h := commitT(t, sw, put("from/worktree", "w"))
	if got := runGitT(t, dir, "rev-parse", DefaultRef); got != h.String() {
		t.Fatalf("main repo sees %s, want %s", got, h)
	}
	if got := readT(t, snapT(t, sm), "from/worktree"); got != "w" {
		t.Errorf("main store reads %q", got)
	}
	h2 := commitT(t, sm, put("from/main", "m"))
	if got := runGitT(t, wt, "rev-parse", DefaultRef); got != h2.String() {
		t.Errorf("worktree sees %s", got)
	}
	// Both share one fence.
	unlock, err := sm.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	sw.fenceTimeout = 50 * time.Millisecond
	if _, err := sw.Lock(context.Background(), true); !errors.Is(err, ErrBusy) {
		t.Errorf("worktree fence not shared: %v", err)
	}
	unlock()
	fsckT(t, dir)
}

func TestReflog(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	h1 := commitT(t, s, put("a", "1"))
	logFile := filepath.Join(s.CommonDir(), "logs", "refs", "loopx", "state")
	if _, err := os.Stat(logFile); err == nil {
		t.Fatal("reflog created without core.logAllRefUpdates=always")
	}
	if err := os.MkdirAll(filepath.Dir(logFile), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logFile, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	h2 := commitT(t, s, put("a", "2"))
	got := runGitT(t, dir, "reflog", "show", "--format=%H %gs", DefaultRef)
	if !strings.HasPrefix(got, h2.String()+" loopx: test") {
		t.Errorf("reflog = %q", got)
	}
	_ = h1
	fsckT(t, dir)
}

func TestLog(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	s.odb.looseOnly = true // one commit object is deleted below
	var hashes []Hash
	for i := 0; i < 50; i++ {
		unlock, _ := s.Lock(context.Background(), true)
		head, _ := s.Head()
		h, err := s.Commit(head, []Change{put("n", string(rune('a'+i%26)))}, CommitInfo{
			Message: "commit " + string(rune('A'+i%26)), AuthorName: "A", AuthorEmail: "a@x", When: time.Unix(int64(1e9+i), 0)})
		unlock()
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	// Make an old commit unreadable: a lazy Log that stops early never
	// reads it.
	old := hashes[10]
	if err := os.Remove(s.odb.loosePath(old)); err != nil {
		t.Fatal(err)
	}
	var got []CommitMeta
	err := s.Log(hashes[49], func(c CommitMeta) (bool, error) {
		got = append(got, c)
		return len(got) < 20, nil
	})
	if err != nil {
		t.Fatalf("Log read beyond its limit: %v", err)
	}
	if len(got) != 20 {
		t.Fatalf("Log gave %d commits", len(got))
	}
	for i, c := range got {
		want := hashes[49-i]
		if c.Hash != want || c.Parent != hashes[48-i] || c.AuthorName != "A" || c.AuthorEmail != "a@x" ||
			!c.When.Equal(time.Unix(int64(1e9+49-i), 0)) || c.Message != "commit "+string(rune('A'+(49-i)%26))+"\n" {
			t.Errorf("Log[%d] = %+v", i, c)
		}
	}
	// Reading on hits the missing commit.
	if err := s.Log(hashes[49], func(CommitMeta) (bool, error) { return true, nil }); err == nil {
		t.Error("Log through a missing commit succeeded")
	}
	// Full log of a short intact history ends at the root.
	n := 0
	if err := s.Log(hashes[5], func(c CommitMeta) (bool, error) { n++; return true, nil }); err != nil || n != 6 {
		t.Errorf("Log to root: %d, %v", n, err)
	}
	stop := errors.New("stop")
	if err := s.Log(hashes[5], func(CommitMeta) (bool, error) { return true, stop }); err != stop {
		t.Errorf("Log error = %v", err)
	}
}

func TestTransact(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	ctx := context.Background()
	// decide returning nil commits nothing.
	h, err := s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) { return nil, nil })
	if err != nil || !h.IsZero() {
		t.Fatalf("no-op Transact = %v, %v", h, err)
	}
	h1, err := s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{Changes: []Change{put("a", "1")}, Info: CommitInfo{Message: "one"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	h, err = s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) { return &Proposal{}, boom })
	if err != boom || h != h1 {
		t.Errorf("failing decide = %v, %v", h, err)
	}
	// A foreign writer moves the ref between the read and the commit:
	// decide runs again on the new head.
	calls := 0
	var foreign string
	h2, err := s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
		calls++
		if calls == 1 {
			tree := runGitT(t, dir, "rev-parse", DefaultRef+"^{tree}")
			foreign = runGitT(t, dir, "commit-tree", tree, "-p", DefaultRef, "-m", "foreign")
			runGitT(t, dir, "update-ref", DefaultRef, foreign, sn.Revision().String())
		} else if sn.Revision().String() != foreign {
			t.Errorf("retry saw %s, want %s", sn.Revision(), foreign)
		}
		return &Proposal{Changes: []Change{put("b", "2")}}, nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("Transact after foreign update: %v, %d calls", err, calls)
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef+"^"); got != foreign {
		t.Errorf("parent = %s, want the foreign commit", got)
	}
	// A writer that always interferes makes Transact give up.
	calls = 0
	policy := RetryPolicy{MaxAttempts: 5, Min: time.Millisecond, Factor: 2, Max: 4 * time.Millisecond, Jitter: 1}
	_, err = s.transact(ctx, LocalRef(), policy, func(sn *Snapshot) (*Proposal, error) {
		calls++
		tree := runGitT(t, dir, "rev-parse", DefaultRef+"^{tree}")
		c := runGitT(t, dir, "commit-tree", tree, "-p", DefaultRef, "-m", "foreign")
		runGitT(t, dir, "update-ref", DefaultRef, c)
		return &Proposal{Changes: []Change{put("c", "3")}}, nil
	})
	if !errors.Is(err, ErrConflict) || calls != policy.MaxAttempts {
		t.Errorf("interfered Transact = %v after %d calls", err, calls)
	}
	_ = h2
	fsckT(t, dir)
}

func TestFence(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s1 := openT(t, dir, Options{})
	s2 := openT(t, dir, Options{FenceTimeout: 150 * time.Millisecond})
	ctx := context.Background()
	unlock, err := s1.Lock(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s2.Lock(ctx, true); !errors.Is(err, ErrBusy) {
		t.Fatalf("second exclusive Lock = %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if _, err := s2.Lock(ctx, false); !errors.Is(err, ErrBusy) {
		t.Errorf("shared Lock under exclusive = %v", err)
	}
	// The same Store, another goroutine: also excluded.
	s1.fenceTimeout = 50 * time.Millisecond
	if _, err := s1.Lock(ctx, true); !errors.Is(err, ErrBusy) {
		t.Errorf("same-store Lock = %v", err)
	}
	// A cancelled context ends the wait early.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s2.fenceTimeout = time.Hour
	if _, err := s2.Lock(cctx, true); !errors.Is(err, ErrBusy) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Lock = %v", err)
	}
	s2.fenceTimeout = 150 * time.Millisecond
	unlock()
	unlock() // idempotent
	// Shared locks coexist, and exclude writers.
	r1, err := s1.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s2.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Lock(ctx, true); !errors.Is(err, ErrBusy) {
		t.Errorf("exclusive under shared = %v", err)
	}
	r1()
	r2()
	// Released: a waiting Lock gets it.
	unlock, _ = s1.Lock(ctx, true)
	go func() { time.Sleep(30 * time.Millisecond); unlock() }()
	s2.fenceTimeout = 5 * time.Second
	u, err := s2.Lock(ctx, true)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	u()
}

func TestStaleRefLock(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	h1 := commitT(t, s, put("a", "1"))
	lockPath := filepath.Join(s.CommonDir(), "refs", "loopx", "state.lock")

	// A loopx lock whose process is dead: its twin names a pid that
	// does not run (a finished child).
	twin := filepath.Join(s.CommonDir(), refLockTmpStart+strconv.Itoa(deadPid(t))+".1")
	if err := os.WriteFile(twin, []byte(strings.Repeat("0", 40)+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(twin, lockPath); err != nil {
		t.Fatal(err)
	}
	h2 := commitT(t, s, put("a", "2"))
	if got := runGitT(t, dir, "rev-parse", DefaultRef+"^"); got != h1.String() {
		t.Fatalf("parent %s", got)
	}
	if _, err := os.Stat(twin); err == nil {
		t.Error("stale twin not removed")
	}

	// A lock without a twin is git's: never removed; ErrBusy after ~1s.
	if err := os.WriteFile(lockPath, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	unlock, _ := s.Lock(context.Background(), true)
	start := time.Now()
	_, err := s.Commit(h2, []Change{put("a", "3")}, CommitInfo{})
	unlock()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "state.lock") {
		t.Errorf("Commit with git's lock = %v", err)
	}
	if d := time.Since(start); d < refLockWait {
		t.Errorf("gave up after %v", d)
	}
	if _, err := os.Stat(lockPath); err != nil {
		t.Error("git's lock removed")
	}
	if h, _ := s.Head(); h != h2 {
		t.Error("ref moved")
	}
	// Git releases it: the next commit succeeds.
	os.Remove(lockPath)
	commitT(t, s, put("a", "3"))

	// Leftover twins of dead processes are cleaned by GC.
	os.WriteFile(twin, []byte("x"), 0o666)
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(twin); err == nil {
		t.Error("leftover twin not cleaned by GC")
	}
	fsckT(t, dir)
}

// TestReadAfterForeignGC: a Store that listed the packs (or relied on a
// loose object) before another Store's GC still reads everything.
func TestReadAfterForeignGC(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	reader := openT(t, dir, Options{})
	writer := openT(t, dir, Options{})
	for i := 0; i < 30; i++ {
		commitT(t, writer, put("f"+strconv.Itoa(i), "content "+strconv.Itoa(i)))
	}
	if _, err := writer.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	sn := snapT(t, reader) // reader has now loaded the pack list
	for i := 30; i < 60; i++ {
		commitT(t, writer, put("f"+strconv.Itoa(i), "content "+strconv.Itoa(i)))
	}
	sn2 := snapT(t, reader) // reads loose objects
	for i := 0; i < 3; i++ {
		if _, err := writer.GC(context.Background()); err != nil { // new pack, merged packs, loose pruned
			t.Fatal(err)
		}
		commitT(t, writer, put("g"+strconv.Itoa(i), "x"))
	}
	reader.trees.reset()
	if got := walkT(t, sn2, ""); len(got) != 60 || got["f45"] != "content 45" {
		t.Errorf("reader after foreign GC: %d files", len(got))
	}
	if got := walkT(t, sn, ""); len(got) != 30 {
		t.Errorf("old snapshot after foreign GC: %d files", len(got))
	}
	fsckT(t, dir)
}

// TestReadsPacksWrittenByGit: after the user's own `git gc --aggressive`
// (every object in one pack, deep delta chains, loopx's packs gone), a fresh
// Store reads every file correctly through its own pack reader.
func TestReadsPacksWrittenByGit(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	w := openT(t, dir, Options{})
	want := map[string]string{}
	for i := 0; i < 120; i++ {
		name := fmt.Sprintf("d%d/f%d.yaml", i%7, i)
		content := strings.Repeat(fmt.Sprintf("line %d of a record that deltas well\n", i%13), 20+i%5)
		want[name] = content
		commitT(t, w, put(name, content))
	}
	cmd := exec.Command("git", "gc", "--aggressive", "--prune=now", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git gc: %v\n%s", err, out)
	}
	r := openT(t, dir, Options{})
	got := walkT(t, snapT(t, r), "")
	if len(got) != len(want) {
		t.Fatalf("%d files after git gc, want %d", len(got), len(want))
	}
	for name, content := range want {
		if got[name] != content {
			t.Fatalf("%s differs after git gc", name)
		}
	}
	if r.odb.fallbackReads != 0 {
		t.Fatalf("%d objects were read through the go-git fallback", r.odb.fallbackReads)
	}
}

// TestMissingObjectSettled: a reader that listed its packs before another
// process wrote new ones finds their objects (it lists the directory again
// on a miss), and an object that is nowhere is reported missing without
// asking go-git (which would load every pack's index again on each such
// lookup: a clone following a busy server looks up commits it has not
// fetched yet on every mutation). A pack this reader cannot read still
// sends the lookup to go-git.
func TestMissingObjectSettled(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	w := openT(t, dir, Options{})
	commitT(t, w, put("a.yaml", "a"))
	r := openT(t, dir, Options{})
	snapT(t, r) // lists the packs
	for i := 0; i < 3; i++ {
		commitT(t, w, put(fmt.Sprintf("b%d.yaml", i), "b")) // a pack each
	}
	head, err := w.Head()
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	if _, _, err := r.odb.read(head); err != nil {
		t.Errorf("a commit in a pack written after the reader listed its packs: %v", err)
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	for i := 0; i < 3; i++ {
		if _, _, err := r.odb.read(missing); !errors.Is(err, plumbing.ErrObjectNotFound) {
			t.Errorf("a missing object: %v, want not found", err)
		}
	}
	fallback := r.odb.fallbackReads
	r.mu.Unlock()
	if fallback != 0 {
		t.Errorf("%d lookups went to go-git, want 0", fallback)
	}

	// A pack whose index this reader cannot parse: go-git's to try.
	bad := filepath.Join(dir, ".git", "objects", "pack", "pack-"+strings.Repeat("cd", 20))
	if err := os.WriteFile(bad+".idx", []byte("not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad+".pack", []byte("not a pack"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.odb.read(missing)
	if r.odb.fallbackReads == 0 {
		t.Error("an unreadable pack: the lookup did not go to go-git")
	}
}
