package gitstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommitWritesOnePack: a commit's new objects land in one pack that
// git verifies and reads, with no loose object; the pack is named in the
// GC state file.
func TestCommitWritesOnePack(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	packDir := filepath.Join(s.CommonDir(), "objects", "pack")
	before, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	looseBefore, _ := objectDirUsage(s.odb.objDir)
	h := commitT(t, s, put("goals/g/todos/ab/todo_x.yaml", "id: x\n"), put("goals/g/goal.yaml", "g\n"))
	after, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	if len(after) != len(before)+1 {
		t.Fatalf("%d packs after one commit, %d before", len(after), len(before))
	}
	if loose, _ := objectDirUsage(s.odb.objDir); loose != looseBefore {
		t.Fatalf("%d loose objects written", loose-looseBefore)
	}
	idx := after[len(after)-1]
	out := runGitT(t, dir, "verify-pack", "-v", idx)
	// 2 blobs, 5 trees (root, goals, g, todos, ab), 1 commit.
	if n := strings.Count(out, " blob ") + strings.Count(out, " tree ") + strings.Count(out, " commit "); n != 8 {
		t.Fatalf("pack holds %d objects:\n%s", n, out)
	}
	if got := runGitT(t, dir, "show", h.String()+":goals/g/todos/ab/todo_x.yaml"); got != "id: x" {
		t.Fatalf("git reads %q", got)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(idx), "pack-"), ".idx")
	if st, _ := readGCState(s.CommonDir()); len(st.cpacks) == 0 || st.cpacks[len(st.cpacks)-1].String() != name {
		t.Fatalf("state lists %v, want %s last", st.cpacks, name)
	}
	// Another process (a fresh Store) reads it.
	if files := walkT(t, snapT(t, openT(t, dir, Options{})), ""); files["goals/g/goal.yaml"] != "g\n" {
		t.Fatalf("fresh store reads %v", files)
	}
	fsckT(t, dir)
	// What a dead writer left behind is removed by GC once an hour old;
	// anything recent is left alone.
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	objDir := s.odb.objDir
	stale := []string{
		filepath.Join(packDir, "tmp_pack_loopx_1_1"),
		filepath.Join(packDir, "tmp_idx_loopx_1_1"),
		filepath.Join(objDir, "ab", "tmp_obj_loopx_1_2"),
		filepath.Join(packDir, "pack-"+strings.Repeat("1", 40)+".pack"), // no .idx
	}
	fresh := filepath.Join(packDir, "tmp_pack_loopx_1_3")
	for _, n := range append(stale, fresh) {
		os.MkdirAll(filepath.Dir(n), 0o777)
		if err := os.WriteFile(n, []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range stale {
		os.Chtimes(n, old, old)
	}
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range stale {
		if _, err := os.Stat(n); !os.IsNotExist(err) {
			t.Errorf("%s kept: %v", n, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a recent temporary file was removed: %v", err)
	}
	// The store's own packs are intact.
	if files := walkT(t, snapT(t, openT(t, dir, Options{})), ""); files["goals/g/goal.yaml"] != "g\n" {
		t.Fatalf("after GC: %v", files)
	}
	fsckT(t, dir)
}
