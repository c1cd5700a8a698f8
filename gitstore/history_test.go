package gitstore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeFileT writes a file of the working tree at dir.
func writeFileT(t *testing.T, dir, name, data string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestChangedPathsMatchesGit compares ChangedPaths with `git diff-tree -r
// --no-renames` (combined, -c, for merges) on commits of every kind.
func TestChangedPathsMatchesGit(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	git := func(args ...string) string { return runGitT(t, dir, args...) }
	var commits []string
	commit := func(msg string) {
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", msg)
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	commits = append(commits, git("rev-parse", "HEAD")) // root
	writeFileT(t, dir, "src/a.go", "a\n", 0o644)
	writeFileT(t, dir, "src/deep/b.go", "b\n", 0o644)
	writeFileT(t, dir, "docs/x.md", "x\n", 0o644)
	commit("add")
	writeFileT(t, dir, "src/a.go", "a2\n", 0o644)
	commit("modify")
	writeFileT(t, dir, "src/a.go", "a2\n", 0o755)
	commit("mode only")
	if err := os.Rename(filepath.Join(dir, "src/deep/b.go"), filepath.Join(dir, "src/deep/c.go")); err != nil {
		t.Fatal(err)
	}
	commit("rename")
	if err := os.Symlink("a.go", filepath.Join(dir, "src/link")); err != nil {
		t.Fatal(err)
	}
	commit("symlink")
	os.RemoveAll(filepath.Join(dir, "docs"))
	writeFileT(t, dir, "docs", "now a file\n", 0o644)
	commit("dir becomes a file")
	commit("empty")
	// A clean merge and a merge that edits a path itself.
	git("checkout", "-q", "-b", "side", "HEAD~2")
	writeFileT(t, dir, "side.txt", "s\n", 0o644)
	writeFileT(t, dir, "src/a.go", "side\n", 0o644)
	commit("side")
	git("checkout", "-q", "main")
	git("merge", "-q", "--no-ff", "--no-edit", "-X", "ours", "side")
	commits = append(commits, git("rev-parse", "HEAD"))
	git("reset", "-q", "--hard", "HEAD~1")
	git("merge", "-q", "--no-ff", "--no-commit", "-X", "ours", "side")
	writeFileT(t, dir, "src/a.go", "resolved by hand\n", 0o644)
	writeFileT(t, dir, "merge-only.txt", "m\n", 0o644)
	git("add", "-A")
	git("commit", "-q", "--no-edit")
	commits = append(commits, git("rev-parse", "HEAD"))
	// Merges that throw a side's change away: -s ours (side.txt and
	// src/a.go as the base had them), and a conflict resolved by taking
	// main's side; a clean octopus merge.
	git("reset", "-q", "--hard", "HEAD~1")
	git("merge", "-q", "--no-edit", "-s", "ours", "side")
	commits = append(commits, git("rev-parse", "HEAD"))
	git("reset", "-q", "--hard", "HEAD~1")
	git("checkout", "-q", "-b", "side3", "HEAD")
	writeFileT(t, dir, "side3.txt", "3\n", 0o644)
	commit("side3")
	git("checkout", "-q", "main")
	git("merge", "-q", "--no-edit", "side", "side3")
	commits = append(commits, git("rev-parse", "HEAD"))
	git("reset", "-q", "--hard", "HEAD~1")
	writeFileT(t, dir, "src/a.go", "main's\n", 0o644)
	commit("main edits a")
	git("merge", "-q", "--no-ff", "--no-edit", "-X", "ours", "side")
	commits = append(commits, git("rev-parse", "HEAD"))

	s := openT(t, dir, Options{})
	names := func(args ...string) []string {
		var out []string
		for _, p := range strings.Split(git(append([]string{"diff-tree", "-r", "--root", "--no-renames", "--name-only", "--no-commit-id"}, args...)...), "\n") {
			if p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	for _, c := range commits {
		var want []string
		if parents := strings.Fields(git("rev-list", "--parents", "-n1", c))[1:]; len(parents) > 1 {
			// A merge: what differs from every parent (git's combined
			// diff), and each side's change from the merge base that the
			// merge does not keep.
			want = names("-c", c)
			base := git(append([]string{"merge-base", "--octopus"}, parents...)...)
			for _, p := range parents {
				kept := names(p, c)
				for _, path := range names(base, p) {
					if slices.Contains(kept, path) && !slices.Contains(want, path) {
						want = append(want, path)
					}
				}
			}
		} else {
			want = names(c)
		}
		slices.Sort(want)
		got, err := s.ChangedPaths(ParseHash(c))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s (%s): ChangedPaths = %q, git diff-tree = %q", c[:12], git("log", "-1", "--format=%s", c), got, want)
		}
		// ChangedFiles: the same paths, a deletion where the commit has no
		// file, a symlink's target where it has a link (what git ls-tree
		// and cat-file say).
		files, err := s.ChangedFiles(ParseHash(c))
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			if f.Path != got[i] {
				t.Fatalf("ChangedFiles[%d] = %q, ChangedPaths %q", i, f.Path, got[i])
			}
			entry := strings.Fields(git("ls-tree", c, "--", f.Path))
			if f.Deleted != (len(entry) == 0) {
				t.Errorf("%s %s: deleted %v, ls-tree %q", c[:12], f.Path, f.Deleted, entry)
			}
			if isLink := len(entry) > 0 && entry[0] == "120000"; f.Symlink != isLink || (isLink && f.Link != git("cat-file", "blob", entry[2])) {
				t.Errorf("%s %s: symlink %v %q, ls-tree %q", c[:12], f.Path, f.Symlink, f.Link, entry)
			}
		}
	}
}

func TestRevListAndResolve(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	git := func(args ...string) string { return runGitT(t, dir, args...) }
	base := git("rev-parse", "HEAD")
	git("commit", "-q", "--allow-empty", "-m", "one")
	one := git("rev-parse", "HEAD")
	git("commit", "-q", "--allow-empty", "-m", "two")
	two := git("rev-parse", "HEAD")
	s := openT(t, dir, Options{})

	h, err := s.ResolveCommit("main~1")
	if err != nil || h.String() != one {
		t.Fatalf("ResolveCommit(main~1) = %s, %v; want %s", h, err, one)
	}
	for _, bad := range []string{"nope", "", "--all", "main\nHEAD", base + "^{tree}x"} {
		if _, err := s.ResolveCommit(bad); !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("ResolveCommit(%q) = %v, want ErrUnknownRevision", bad, err)
		}
	}
	got, err := s.RevList([]Hash{ParseHash(two)}, []Hash{ParseHash(base)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != one || got[1].String() != two {
		t.Fatalf("RevList = %v, want [%s %s] (oldest first)", got, one, two)
	}
	// --not --remotes: a remote-tracking ref at one hides base and one.
	git("update-ref", "refs/remotes/origin/main", one)
	got, err = s.RevList([]Hash{ParseHash(two)}, nil, true)
	if err != nil || len(got) != 1 || got[0].String() != two {
		t.Fatalf("RevList not remotes = %v, %v; want [%s]", got, err, two)
	}
	if s.HasCommit(ParseHash(strings.Repeat("ab", 20))) || !s.HasCommit(ParseHash(two)) {
		t.Fatal("HasCommit is wrong")
	}
}

// TestRevListNew: the commits a ref update brings that none of the counted
// refs has; a commit the repository holds only under other refs (a tag,
// annotated or not) is listed, one under a counted branch is not.
func TestRevListNew(t *testing.T) {
	dir := newRepo(t)
	git := func(args ...string) string { return runGitT(t, dir, args...) }
	base := git("rev-parse", "HEAD")
	var cs []string
	for i := 0; i < 4; i++ {
		git("commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", i))
		cs = append(cs, git("rev-parse", "HEAD"))
	}
	git("update-ref", "refs/heads/main", base)
	git("update-ref", "refs/tags/light", cs[0])
	git("tag", "-a", "-m", "annotated", "annotated", cs[1])
	s := openT(t, dir, Options{})
	heads := func(ref string) bool { return strings.HasPrefix(ref, "refs/heads/") }
	tags := func(ref string) bool { return strings.HasPrefix(ref, "refs/tags/") }
	check := func(name string, counts func(string) bool, want []string) {
		t.Helper()
		got, err := s.RevListNew([]Hash{ParseHash(cs[3])}, counts)
		if err != nil {
			t.Fatal(err)
		}
		var gs []string
		for _, h := range got {
			gs = append(gs, h.String())
		}
		if !slices.Equal(gs, want) {
			t.Errorf("%s: RevListNew = %v, want %v", name, gs, want)
		}
	}
	check("branches: the tagged commits are new to them", heads, cs)
	check("every ref", nil, cs[2:])
	check("tags (an annotated tag counts as its commit)", tags, cs[2:])
	check("no ref", func(string) bool { return false }, append([]string{base}, cs...))
	git("update-ref", "refs/heads/topic", cs[2])
	check("a branch has them", heads, cs[3:])
}

func TestFirstParentTimes(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := 0; i < 4; i++ {
		// Author and committer times differ: the committer's is reported.
		cmd := exec.Command("git", "commit", "-q", "--allow-empty", "-m", "c")
		cmd.Dir = dir
		cmd.Env = append(gitEnvTest(),
			"GIT_AUTHOR_DATE="+t0.Add(-time.Duration(i)*time.Hour).Format(time.RFC3339),
			"GIT_COMMITTER_DATE="+t0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		want = append([]string{runGitT(t, dir, "rev-parse", "HEAD")}, want...)
	}
	s := openT(t, dir, Options{})
	var got []string
	var times []time.Time
	err := s.FirstParentTimes(ParseHash(want[0]), func(h Hash, when time.Time) (bool, error) {
		got = append(got, h.String())
		times = append(times, when)
		return len(got) < 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want[:3]) {
		t.Fatalf("walk = %v, want %v", got, want[:3])
	}
	for i, w := range times {
		if !w.Equal(t0.Add(time.Duration(3-i) * time.Hour)) {
			t.Fatalf("time %d = %v, want the committer time %v", i, w, t0.Add(time.Duration(3-i)*time.Hour))
		}
	}
}

// TestDirHash: the tree name of a folder changes exactly when a file under
// it does.
func TestDirHash(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	c1 := commitT(t, s, put("goals/g/leases/00/a.yaml", "a"), put("goals/g/todos/00/a.yaml", "t"))
	c2 := commitT(t, s, put("goals/g/todos/00/a.yaml", "t2"))
	c3 := commitT(t, s, put("goals/g/leases/00/a.yaml", "a2"))
	hash := func(rev Hash, d string) Hash {
		sn, err := s.Snapshot(rev)
		if err != nil {
			t.Fatal(err)
		}
		h, err := sn.DirHash(d)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h1, h2 := hash(c1, "goals/g/leases"), hash(c2, "goals/g/leases"); h1.IsZero() || h1 != h2 {
		t.Fatalf("untouched folder: %s, %s", h1, h2)
	}
	if hash(c2, "goals/g/leases") == hash(c3, "goals/g/leases") {
		t.Fatal("a changed file left its folder's hash alone")
	}
	if want := runGitT(t, dir, "rev-parse", c3.String()+":goals/g/leases"); hash(c3, "goals/g/leases").String() != want {
		t.Fatalf("DirHash is not git's tree name %s", want)
	}
	for _, d := range []string{"goals/h", "goals/g/leases/00/a.yaml"} {
		if h := hash(c3, d); !h.IsZero() {
			t.Fatalf("DirHash(%s) = %s, want zero (missing, or a file)", d, h)
		}
	}
	if h := hash(ZeroHash, "goals"); !h.IsZero() {
		t.Fatal("empty snapshot")
	}
}
