package gitstore

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gcCounter returns the commit counter of the GC state file.
func gcCounter(t testing.TB, s *Store) int {
	t.Helper()
	st, err := readGCState(s.CommonDir())
	if err != nil {
		t.Fatal(err)
	}
	return st.commits
}

// reflogT returns the lines of the store ref's reflog.
func reflogT(t testing.TB, s *Store) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.CommonDir(), "logs", filepath.FromSlash(s.Ref())))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// enableReflog creates the (empty) reflog of the store's ref, which is then
// appended to.
func enableReflog(t testing.TB, s *Store) {
	t.Helper()
	name := filepath.Join(s.CommonDir(), "logs", filepath.FromSlash(s.Ref()))
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, nil, 0o666); err != nil {
		t.Fatal(err)
	}
}

// countHooks counts the Commit hook points reached until the test ends.
func countHooks(t testing.TB) map[string]int {
	t.Helper()
	counts := map[string]int{}
	testHook = func(point string) { counts[point]++ }
	t.Cleanup(func() { testHook = nil })
	return counts
}

// noLeftovers checks that no ref lock or lock twin was left behind.
func noLeftovers(t testing.TB, s *Store) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(s.CommonDir(), filepath.FromSlash(s.Ref())+".lock")); err == nil {
		t.Error("ref lock left behind")
	}
	if names, _ := filepath.Glob(filepath.Join(s.CommonDir(), refLockTmpGlob)); len(names) != 0 {
		t.Errorf("twins left behind: %v", names)
	}
}

func TestTransactChain(t *testing.T) {
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	h0 := commitT(t, s, put("keep/a.txt", "a"), put("keep/deep/b.txt", "b"), put("old.txt", "old"), put("gone/x.txt", "x"))
	before := walkT(t, snapT(t, s), "")
	enableReflog(t, s)
	counter := gcCounter(t, s)
	hooks := countHooks(t)
	when1, when2 := time.Unix(1700000100, 0), time.Unix(1700000200, 0)

	var first Hash
	var nextSaw []string
	head, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{
			Changes: []Change{
				put("new/dir/one.txt", "1"),
				put("new/dir/two.txt", "2"),
				put("new/three.txt", "3"),
				put("old.txt", "changed by c1"),
				del("gone"),
				put("tmp/file", "t"),
			},
			Info: CommitInfo{Message: "first commit\n\nbody one", AuthorName: "One", When: when1},
			Next: func(h Hash) (*Proposal, error) {
				first = h
				// The Store is usable from Next (its lock is not held),
				// and the second commit must not rely on the tree cache
				// to find the first one's trees.
				nextSaw = append(nextSaw, readT(t, sn, "old.txt"))
				s.mu.Lock()
				s.trees.reset()
				s.mu.Unlock()
				return &Proposal{
					Changes: []Change{
						put("new/dir/one.txt", "1 again"), // overwrite c1's file
						del("new/dir/two.txt"),            // delete c1's file
						put("new/dir/four.txt", "4"),      // into c1's directory
						del("tmp"),                        // a directory c1 created
						put("keep/deep/c.txt", "c"),
						put("second.txt", "s"),
					},
					Info: CommitInfo{Message: "second commit", AuthorName: "Two", When: when2},
				}, nil
			},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.IsZero() || head == first || head == h0 {
		t.Fatalf("head %s, first %s, old head %s", head, first, h0)
	}
	if got, _ := s.Head(); got != head {
		t.Fatalf("Head = %s, Transact returned %s", got, head)
	}
	if len(nextSaw) != 1 || nextSaw[0] != "old" {
		t.Errorf("Next read %q through the decide snapshot", nextSaw)
	}

	// History: head → first → h0.
	var metas []CommitMeta
	if err := s.Log(head, func(c CommitMeta) (bool, error) {
		metas = append(metas, c)
		return len(metas) < 3, nil
	}); err != nil {
		t.Fatal(err)
	}
	if metas[0].Hash != head || metas[0].Parent != first || metas[1].Hash != first || metas[1].Parent != h0 || metas[2].Hash != h0 {
		t.Fatalf("history %+v", metas)
	}
	if metas[0].AuthorName != "Two" || !metas[0].When.Equal(when2) || metas[1].AuthorName != "One" || !metas[1].When.Equal(when1) {
		t.Errorf("commit metadata %+v", metas[:2])
	}

	// Trees: c1 = old + first changes, c2 = c1 + second changes.
	want1 := maps.Clone(before)
	delete(want1, "gone/x.txt")
	maps.Copy(want1, map[string]string{
		"new/dir/one.txt": "1", "new/dir/two.txt": "2", "new/three.txt": "3",
		"old.txt": "changed by c1", "tmp/file": "t",
	})
	want2 := maps.Clone(want1)
	delete(want2, "new/dir/two.txt")
	delete(want2, "tmp/file")
	maps.Copy(want2, map[string]string{
		"new/dir/one.txt": "1 again", "new/dir/four.txt": "4", "keep/deep/c.txt": "c", "second.txt": "s",
	})
	for _, c := range []struct {
		rev  Hash
		want map[string]string
	}{{first, want1}, {head, want2}} {
		sn, err := s.Snapshot(c.rev)
		if err != nil {
			t.Fatal(err)
		}
		if got := walkT(t, sn, ""); !maps.Equal(got, c.want) {
			t.Errorf("tree of %s:\n got %v\nwant %v", c.rev, got, c.want)
		}
	}

	// git agrees.
	fsckT(t, dir)
	if got := runGitT(t, dir, "log", "--format=%s", "-3", DefaultRef); got != "second commit\nfirst commit\ntest" {
		t.Errorf("git log = %q", got)
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef+"^"); got != first.String() {
		t.Errorf("git: parent of the head is %s, want %s", got, first)
	}
	if got := runGitT(t, dir, "show", DefaultRef+"^:old.txt"); got != "changed by c1" {
		t.Errorf("git show first:old.txt = %q", got)
	}

	// One ref update, one reflog entry, one round of object writes; two
	// commits counted for GC.
	if hooks["objects-written"] != 1 || hooks["ref-locked"] != 1 || hooks["ref-renamed"] != 1 {
		t.Errorf("hooks %v", hooks)
	}
	if rl := reflogT(t, s); len(rl) != 1 || !strings.HasPrefix(rl[0], h0.String()+" "+head.String()+" ") ||
		!strings.HasSuffix(rl[0], "\tloopx: second commit") {
		t.Errorf("reflog %q", rl)
	}
	if got := gcCounter(t, s); got != counter+2 {
		t.Errorf("GC counter %d, want %d", got, counter+2)
	}
	noLeftovers(t, s)
}

// TestTransactChainFromEmpty: a chain on an absent ref starts with a root
// commit.
func TestTransactChainFromEmpty(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	var first Hash
	head, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{
			Changes: []Change{put("a", "1")},
			Info:    CommitInfo{Message: "root"},
			Next: func(h Hash) (*Proposal, error) {
				first = h
				return &Proposal{Changes: []Change{del("a"), put("b", "2")}, Info: CommitInfo{Message: "on root"}}, nil
			},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := firstParentChain(t, dir, DefaultRef); len(got) != 2 || got[0] != head.String() || got[1] != first.String() {
		t.Errorf("history %v", got)
	}
	if got := walkT(t, snapT(t, s), ""); !maps.Equal(got, map[string]string{"b": "2"}) {
		t.Errorf("tree %v", got)
	}
	fsckT(t, dir)
}

func TestTransactChainNextNil(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	h0 := commitT(t, s, put("a", "1"))
	counter := gcCounter(t, s)
	calls := 0
	head, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{
			Changes: []Change{put("b", "2")},
			Info:    CommitInfo{Message: "only"},
			Next:    func(Hash) (*Proposal, error) { calls++; return nil, nil },
		}, nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("Transact = %v, %d Next calls", err, calls)
	}
	if got := runGitT(t, dir, "rev-parse", DefaultRef+"^"); got != h0.String() {
		t.Errorf("parent %s, want the old head", got)
	}
	if got := runGitT(t, dir, "log", "--format=%s", "-2", DefaultRef); got != "only\ntest" {
		t.Errorf("git log = %q", got)
	}
	if got := walkT(t, snapT(t, s), ""); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Errorf("tree %v", got)
	}
	if got := gcCounter(t, s); got != counter+1 {
		t.Errorf("GC counter %d, want %d", got, counter+1)
	}
	_ = head
	fsckT(t, dir)
}

// TestTransactChainAborts: an error from Next, or a second proposal that
// cannot be built, writes nothing.
func TestTransactChainAborts(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	h0 := commitT(t, s, put("a", "1"), put("f", "file"))
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		next func(Hash) (*Proposal, error)
		want error
	}{
		{"error", func(Hash) (*Proposal, error) { return nil, boom }, boom},
		{"error with proposal", func(Hash) (*Proposal, error) { return &Proposal{Changes: []Change{put("c", "3")}}, boom }, boom},
		{"conflict error", func(Hash) (*Proposal, error) { return nil, ErrConflict }, ErrConflict},
		{"invalid path", func(Hash) (*Proposal, error) { return &Proposal{Changes: []Change{put("../x", "3")}}, nil }, ErrInvalidPath},
		{"file as directory", func(Hash) (*Proposal, error) { return &Proposal{Changes: []Change{put("f/x", "3")}}, nil }, ErrInvalidPath},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first Hash
			decides, nexts := 0, 0
			head, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
				decides++
				return &Proposal{
					Changes: []Change{put("b", "written by the aborted chain "+c.name)},
					Info:    CommitInfo{Message: "aborted"},
					Next: func(h Hash) (*Proposal, error) {
						nexts++
						first = h
						return c.next(h)
					},
				}, nil
			})
			if !errors.Is(err, c.want) || head != h0 {
				t.Fatalf("Transact = %s, %v; want %s, %v", head, err, h0, c.want)
			}
			if decides != 1 || nexts != 1 {
				t.Errorf("%d decide calls, %d Next calls", decides, nexts)
			}
			if got, _ := s.Head(); got != h0 {
				t.Errorf("ref moved to %s", got)
			}
			if _, err := os.Stat(s.odb.loosePath(first)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the first commit was written: %v", err)
			}
			if _, err := s.Snapshot(first); err == nil {
				t.Error("the first commit is readable")
			}
			noLeftovers(t, s)
		})
	}
	fsckT(t, dir)
}

// TestTransactChainConflict: a foreign ref update between decide and the
// commit makes Transact run decide and Next again on the new head.
func TestTransactChainConflict(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"decide", "next"} {
		t.Run(where, func(t *testing.T) {
			dir := newRepo(t)
			s := openT(t, dir, Options{})
			h0 := commitT(t, s, put("a", "1"))
			var foreign string
			interfere := func(rev Hash) {
				tree := runGitT(t, dir, "rev-parse", DefaultRef+"^{tree}")
				foreign = runGitT(t, dir, "commit-tree", tree, "-p", DefaultRef, "-m", "foreign")
				runGitT(t, dir, "update-ref", DefaultRef, foreign, rev.String())
			}
			var seen, firsts []Hash
			head, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
				seen = append(seen, sn.Revision())
				if where == "decide" && len(seen) == 1 {
					interfere(sn.Revision())
				}
				n := len(seen)
				return &Proposal{
					Changes: []Change{put("b", "decide "+string(rune('0'+n)))},
					Info:    CommitInfo{Message: "one"},
					Next: func(first Hash) (*Proposal, error) {
						firsts = append(firsts, first)
						if where == "next" && len(firsts) == 1 {
							interfere(sn.Revision())
						}
						return &Proposal{Changes: []Change{put("c", "next")}, Info: CommitInfo{Message: "two"}}, nil
					},
				}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 2 || seen[0] != h0 || seen[1].String() != foreign {
				t.Fatalf("decide saw %v (old head %s, foreign %s)", seen, h0, foreign)
			}
			if len(firsts) != 2 || firsts[0] == firsts[1] {
				t.Fatalf("Next got %v", firsts)
			}
			chain := firstParentChain(t, dir, DefaultRef)
			if len(chain) < 4 || chain[0] != head.String() || chain[1] != firsts[1].String() || chain[2] != foreign || chain[3] != h0.String() {
				t.Errorf("history %v; want head, %s, foreign %s, %s", chain[:min(4, len(chain))], firsts[1], foreign, h0)
			}
			if got := walkT(t, snapT(t, s), ""); !maps.Equal(got, map[string]string{"a": "1", "b": "decide 2", "c": "next"}) {
				t.Errorf("tree %v", got)
			}
			if got := runGitT(t, dir, "log", "--format=%s", "-4", DefaultRef); got != "two\none\nforeign\ntest" {
				t.Errorf("git log = %q", got)
			}
			noLeftovers(t, s)
			fsckT(t, dir)
		})
	}
}

// TestWriteCommitChain: WriteCommit on a parent that the previous
// WriteCommit just wrote (the remote and offline paths).
func TestWriteCommitChain(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	unlock, err := s.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	w1, err := s.WriteCommit(ZeroHash, []Change{put("d/a", "1"), put("d/b", "2")}, CommitInfo{Message: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.trees.reset() // read w1's trees back from the objects
	s.mu.Unlock()
	w2, err := s.WriteCommit(w1, []Change{put("d/a", "1b"), del("d/b"), put("e/c", "3")}, CommitInfo{Message: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	w3, err := s.WriteCommit(w2, []Change{put("d/x", "x")}, CommitInfo{Message: "w3"})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(); !h.IsZero() {
		t.Fatalf("WriteCommit moved the ref to %s", h)
	}
	if err := s.UpdateRef(DefaultRef, ZeroHash, w3); err != nil {
		t.Fatal(err)
	}
	if got := walkT(t, snapT(t, s), ""); !maps.Equal(got, map[string]string{"d/a": "1b", "d/x": "x", "e/c": "3"}) {
		t.Errorf("tree %v", got)
	}
	if got := runGitT(t, dir, "log", "--format=%s", DefaultRef); got != "w3\nw2\nw1" {
		t.Errorf("git log = %q", got)
	}
	unlock()
	fsckT(t, dir)
}
