package gitstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// diffLine is one DiffHashes call; hashes are given by content ("" for
// ZeroHash) to keep the table readable.
type diffLine struct{ path, old, new string }

func blobOf(content string) Hash {
	if content == "" {
		return ZeroHash
	}
	return hashObject(plumbing.BlobObject, []byte(content))
}

func diffT(t testing.TB, s *Store, from, to Hash, dir string) []diffLine {
	t.Helper()
	out := []diffLine{}
	err := s.DiffHashes(from, to, dir, func(p string, old, new Hash) error {
		out = append(out, diffLine{p, old.String(), new.String()})
		return nil
	})
	if err != nil {
		t.Fatalf("DiffHashes(%s, %s, %q): %v", shortHash(from), shortHash(to), dir, err)
	}
	return out
}

func commitOn(t testing.TB, s *Store, parent Hash, changes ...Change) Hash {
	t.Helper()
	unlock, err := s.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	h, err := s.Commit(parent, changes, CommitInfo{Message: "diff test", When: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDiffHashes(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	c1 := commitOn(t, s, ZeroHash,
		put("a.txt", "a1"),
		put("goals/g/todos/t1.yaml", "t1"),
		put("goals/g/todos/t2.yaml", "t2"),
		put("goals/g/meta.yaml", "m"),
		put("goals/h/todos/t9.yaml", "t9"),
		put("x/y/z.txt", "z"),
		put("w", "file w"),
		put("same/s.txt", "s"),
	)
	c2 := commitOn(t, s, c1,
		put("a.txt", "a2"),                    // modified
		del("goals/g/todos/t1.yaml"),          // deleted
		put("goals/g/todos/t3.yaml", "t3"),    // added
		put("goals/g/todos/deep/n.yaml", "n"), // added, nested
		del("x"),                              // directory replaced by a file
		put("x", "now a file"),
		del("w"), // file replaced by a directory
		put("w/inner/f.txt", "wf"),
		put("a.txt.bak", "bak"),     // sorts between a.txt and goals/
		put("b/new/dir/file", "bn"), // directory absent on the old side
	)
	c3 := commitOn(t, s, c2, del("goals")) // directory absent on the new side

	h := func(c string) string { return blobOf(c).String() }
	z := ZeroHash.String()
	for _, c := range []struct {
		name     string
		from, to Hash
		dir      string
		want     []diffLine
	}{
		{"same commit", c2, c2, "", nil},
		{"same commit, dir", c1, c1, "goals", nil},
		{"c1→c2", c1, c2, "", []diffLine{
			{"a.txt", h("a1"), h("a2")},
			{"a.txt.bak", z, h("bak")},
			{"b/new/dir/file", z, h("bn")},
			{"goals/g/todos/deep/n.yaml", z, h("n")},
			{"goals/g/todos/t1.yaml", h("t1"), z},
			{"goals/g/todos/t3.yaml", z, h("t3")},
			{"w", h("file w"), z},
			{"w/inner/f.txt", z, h("wf")},
			{"x", z, h("now a file")},
			{"x/y/z.txt", h("z"), z},
		}},
		{"c2→c1", c2, c1, "", []diffLine{
			{"a.txt", h("a2"), h("a1")},
			{"a.txt.bak", h("bak"), z},
			{"b/new/dir/file", h("bn"), z},
			{"goals/g/todos/deep/n.yaml", h("n"), z},
			{"goals/g/todos/t1.yaml", z, h("t1")},
			{"goals/g/todos/t3.yaml", h("t3"), z},
			{"w", z, h("file w")},
			{"w/inner/f.txt", h("wf"), z},
			{"x", h("now a file"), z},
			{"x/y/z.txt", z, h("z")},
		}},
		{"dir", c1, c2, "goals/g/todos", []diffLine{
			{"goals/g/todos/deep/n.yaml", z, h("n")},
			{"goals/g/todos/t1.yaml", h("t1"), z},
			{"goals/g/todos/t3.yaml", z, h("t3")},
		}},
		{"dir unchanged", c1, c2, "goals/h", nil},
		{"dir absent on both sides", c1, c2, "nope/nothing", nil},
		{"dir absent on the old side", c1, c2, "b", []diffLine{{"b/new/dir/file", z, h("bn")}}},
		{"dir is a file on the new side", c1, c2, "x", []diffLine{{"x/y/z.txt", h("z"), z}}},
		{"dir is a file on the old side", c1, c2, "w", []diffLine{{"w/inner/f.txt", z, h("wf")}}},
		{"dir deleted", c2, c3, "goals", []diffLine{
			{"goals/g/meta.yaml", h("m"), z},
			{"goals/g/todos/deep/n.yaml", h("n"), z},
			{"goals/g/todos/t2.yaml", h("t2"), z},
			{"goals/g/todos/t3.yaml", h("t3"), z},
			{"goals/h/todos/t9.yaml", h("t9"), z},
		}},
		{"from empty", ZeroHash, c1, "goals/g", []diffLine{
			{"goals/g/meta.yaml", z, h("m")},
			{"goals/g/todos/t1.yaml", z, h("t1")},
			{"goals/g/todos/t2.yaml", z, h("t2")},
		}},
		{"to empty", c3, ZeroHash, "", []diffLine{
			{"a.txt", h("a2"), z},
			{"a.txt.bak", h("bak"), z},
			{"b/new/dir/file", h("bn"), z},
			{"same/s.txt", h("s"), z},
			{"w/inner/f.txt", h("wf"), z},
			{"x", h("now a file"), z},
		}},
		{"both empty", ZeroHash, ZeroHash, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := diffT(t, s, c.from, c.to, c.dir)
			if len(got) != len(c.want) || (len(got) > 0 && !slices.Equal(got, c.want)) {
				t.Errorf("got\n%s\nwant\n%s", fmtDiff(got), fmtDiff(c.want))
			}
		})
	}

	// Invalid dir, errors from fn.
	if err := s.DiffHashes(c1, c2, "../x", func(string, Hash, Hash) error { return nil }); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("invalid dir: %v", err)
	}
	stop := errors.New("stop")
	calls := 0
	err := s.DiffHashes(c1, c2, "", func(string, Hash, Hash) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("fn error: %v after %d calls", err, calls)
	}
	// fn may use the Store (its lock is not held).
	err = s.DiffHashes(c1, c2, "goals", func(p string, old, new Hash) error {
		if new.IsZero() {
			return nil
		}
		sn, err := s.Snapshot(c2)
		if err != nil {
			return err
		}
		_, err = sn.ReadBlob(new)
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

func fmtDiff(d []diffLine) string {
	var b strings.Builder
	for _, l := range d {
		fmt.Fprintf(&b, "  %s %.7s %.7s\n", l.path, l.old, l.new)
	}
	return b.String()
}

// TestDiffHashesSkipsEqualSubtrees: unchanged subtrees are not read, and a
// missing object on a changed path is an error.
func TestDiffHashesSkipsEqualSubtrees(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	s.odb.looseOnly = true // one object is deleted below
	c1 := commitOn(t, s, ZeroHash, put("big/a/1", "1"), put("big/b/2", "2"), put("small/f", "f"))
	c2 := commitOn(t, s, c1, put("small/f", "g"))
	// Remove the tree of big/ and forget decoded trees: a diff that read it
	// would fail.
	sn, _ := s.Snapshot(c1)
	big, ok, err := s.lookup(sn.tree, []string{"big"})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := os.Remove(s.odb.loosePath(big.hash)); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.trees.reset()
	s.mu.Unlock()
	if got := diffT(t, s, c1, c2, ""); len(got) != 1 || got[0].path != "small/f" {
		t.Errorf("diff %v", got)
	}
	// Against the empty tree, big/ must be read: its absence is an error.
	err = s.DiffHashes(ZeroHash, c2, "", func(string, Hash, Hash) error { return nil })
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("missing tree: %v", err)
	}
	// So is a missing commit.
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if err := s.DiffHashes(missing, c2, "", func(string, Hash, Hash) error { return nil }); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("missing commit: %v", err)
	}
}

// TestDiffHashesRandom compares DiffHashes with a diff of two full
// WalkHashes listings, over random histories.
func TestDiffHashesRandom(t *testing.T) {
	t.Parallel()
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true
	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"a", "b", "a.x", "a-b", "c0", "todos", "todos.md"}
	randPath := func() string {
		n := 1 + rng.IntN(4)
		comps := make([]string, n)
		for i := range comps {
			comps[i] = names[rng.IntN(len(names))]
		}
		return strings.Join(comps, "/")
	}
	listing := func(rev Hash, dir string) map[string]Hash {
		m := map[string]Hash{}
		sn, err := s.Snapshot(rev)
		if err != nil {
			t.Fatal(err)
		}
		if err := sn.WalkHashes(dir, func(p string, h Hash) error { m[p] = h; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	revs := []Hash{ZeroHash}
	head := ZeroHash
	model := map[string]bool{} // the files of head
	remove := func(p string) {
		for q := range model {
			if q == p || strings.HasPrefix(q, p+"/") {
				delete(model, q)
			}
		}
	}
	for i := 0; i < 60; i++ {
		var changes []Change
		for j := rng.IntN(6); j >= 0; j-- {
			p := randPath()
			if rng.IntN(4) == 0 {
				changes = append(changes, del(p))
				remove(p)
				continue
			}
			// Clear the way: a file on a prefix of p, anything at p.
			comps := strings.Split(p, "/")
			for k := 1; k <= len(comps); k++ {
				q := strings.Join(comps[:k], "/")
				if model[q] {
					changes = append(changes, del(q))
					remove(q)
				}
			}
			// (Always delete p: a directory emptied earlier in this
			// commit is still one for the tree builder.)
			changes = append(changes, del(p), put(p, fmt.Sprintf("v%d", rng.IntN(4))))
			remove(p)
			model[p] = true
		}
		head = commitOn(t, s, head, changes...)
		revs = append(revs, head)
	}
	dirs := []string{"", "a", "todos", "a/b", "a.x/todos", "todos/a/c0"}
	checks, flips := 0, 0
	for i := 0; i < 400; i++ {
		from, to := revs[rng.IntN(len(revs))], revs[rng.IntN(len(revs))]
		d := dirs[rng.IntN(len(dirs))]
		before, after := listing(from, d), listing(to, d)
		var want []diffLine
		for p, h := range before {
			if after[p] != h {
				want = append(want, diffLine{p, h.String(), after[p].String()})
			}
		}
		for p, h := range after {
			if _, ok := before[p]; !ok {
				want = append(want, diffLine{p, ZeroHash.String(), h.String()})
			}
		}
		sort.Slice(want, func(i, j int) bool { return want[i].path < want[j].path })
		got := diffT(t, s, from, to, d)
		if len(got) != len(want) || (len(got) > 0 && !slices.Equal(got, want)) {
			t.Fatalf("DiffHashes(%s, %s, %q):\ngot\n%s\nwant\n%s", shortHash(from), shortHash(to), d, fmtDiff(got), fmtDiff(want))
		}
		checks += len(want)
		for p := range before {
			for q := range after {
				if strings.HasPrefix(q, p+"/") {
					flips++ // a file on one side, a directory on the other
				}
			}
		}
	}
	if checks < 1000 || flips < 50 {
		t.Errorf("only %d differences checked, %d file/directory flips", checks, flips)
	}
	t.Logf("%d differences, %d file/directory flips", checks, flips)
	fsckT(t, dir)
}
