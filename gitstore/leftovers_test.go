package gitstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tmpNames lists the loopx temporary files of objects/pack and the
// ref-lock twins of the common dir.
func tmpNames(t testing.TB, s *Store) []string {
	t.Helper()
	var out []string
	for _, n := range readDirNames(filepath.Join(s.CommonDir(), "objects", "pack")) {
		if _, ok := tmpFilePid(n); ok {
			out = append(out, n)
		}
	}
	for _, n := range readDirNames(s.CommonDir()) {
		if strings.HasPrefix(n, refLockTmpStart) {
			out = append(out, n)
		}
	}
	return out
}

func fenceMarks(t testing.TB, s *Store) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.CommonDir(), fenceFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func marked(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}

// A writer killed while its pack and index were temporary files (and its
// ref-lock twin existed) leaves them; the next write, holding the fence,
// removes them, and never git's own temporary files nor git's ref locks.
func TestDeadWriterTmpFilesRemovedOnNextWrite(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	commitT(t, s, put("a", "a"))
	if marked(fenceMarks(t, s)) {
		t.Fatalf("fence marks after a clean commit: %v", fenceMarks(t, s))
	}
	cmd, lines := startBlockingWorker(t, dir, "pack-temp-written")
	select {
	case <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not block")
	}
	cmd.Process.Kill()
	cmd.Wait()
	left := tmpNames(t, s)
	pid := strconv.Itoa(cmd.Process.Pid)
	kinds := map[string]bool{}
	for _, n := range left {
		if strings.Contains(n, pid) {
			kinds[n[:strings.Index(n, pid)]] = true
		}
	}
	if !kinds[tmpPackPrefix] || !kinds[tmpIdxPrefix] || !kinds[refLockTmpStart] {
		t.Fatalf("the killed writer left %v, want its temporary pack, index and twin", left)
	}
	// git's own temporary files and a lock on another ref, all old.
	packDir := filepath.Join(s.CommonDir(), "objects", "pack")
	gitFiles := []string{
		filepath.Join(packDir, "tmp_pack_Xy12Zq"),
		filepath.Join(packDir, "tmp_idx_Xy12Zq"),
		filepath.Join(s.CommonDir(), "refs", "heads", "main.lock"),
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, f := range gitFiles {
		if err := os.WriteFile(f, []byte("git's"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(f, old, old)
	}

	commitT(t, s, put("b", "b"))
	if left := tmpNames(t, s); len(left) != 0 {
		t.Fatalf("after the next write: %v left", left)
	}
	for _, f := range gitFiles {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("git's %s was touched: %v", f, err)
		}
	}
	if marked(fenceMarks(t, s)) {
		t.Fatalf("fence marks not cleared: %v", fenceMarks(t, s))
	}
	fsckT(t, dir)
}

// Without a mark, a write does not look for leftovers (it costs one pread):
// a dead writer's file that no mark announces stays until gc's hourly
// sweep.
func TestNoMarkNoScan(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	commitT(t, s, put("a", "a"))
	stray := filepath.Join(s.CommonDir(), "objects", "pack", tmpPackPrefix+strconv.Itoa(deadPid(t))+"_1")
	if err := os.WriteFile(stray, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	commitT(t, s, put("b", "b"))
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("an unannounced file was scanned for and removed: %v", err)
	}
	// A side file's temporary file (a cache being saved when its process
	// was killed), and the GC state's.
	side := filepath.Join(s.CommonDir(), sideTmpStart+strconv.Itoa(deadPid(t))+".7")
	gcTmp := filepath.Join(s.CommonDir(), gcStateTmp+strconv.Itoa(deadPid(t)))
	for _, f := range []string{side, gcTmp} {
		if err := os.WriteFile(f, []byte("half a cache"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Announced (as a writer without the fence does), they go.
	s.markTemp()
	if b := fenceMarks(t, s); len(b) < 2 || b[fenceMarkUnfenced] == 0 {
		t.Fatalf("unfenced mark not set: %v", b)
	}
	commitT(t, s, put("c", "c"))
	for _, f := range []string{stray, side, gcTmp} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("announced dead file %s kept", filepath.Base(f))
		}
	}
	if marked(fenceMarks(t, s)) {
		t.Fatalf("marks left: %v", fenceMarks(t, s))
	}
	// A side file written now leaves nothing behind but the announcement.
	if err := s.WriteSideFile("loopx-cache/x", []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReadSideFile("loopx-cache/x"); string(got) != "x" {
		t.Fatalf("side file %q", got)
	}
	if left := readDirNames(s.CommonDir()); strings.Contains(strings.Join(left, " "), sideTmpStart) {
		t.Fatalf("side file temporary left: %v", left)
	}
}

// A fetch (a read, without the fence) killed while its objects were in its
// quarantine folder (in objects/pack, where git wrote them) leaves the
// folder, announced; the next write removes it. A live process's temporary file is kept, and so is the
// mark, until that process is gone.
func TestDeadFetchTmpFilesRemovedOnNextWrite(t *testing.T) {
	t.Parallel()
	bare := newBare(t)
	a := remoteClient(t, bare)
	c1 := pushCommit(t, a, ZeroHash, put("x/1", "1"), put("x/2", "2"), put("y/3", "3"))
	dir := newRepo(t)
	runGitT(t, dir, "remote", "add", "origin", bare)
	s := openT(t, dir, Options{})

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envWorker+"=block", envRepo+"="+dir, envID+"=f",
		"GITSTORE_BLOCK_AT=fetch-quarantined", "GITSTORE_FETCH=origin")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "BLOCKED") {
		t.Fatalf("fetch worker: %q", buf[:n])
	}
	cmd.Process.Kill()
	cmd.Wait()
	left := tmpNames(t, s)
	if len(left) == 0 || !strings.HasPrefix(left[0], tmpFetchPrefix) {
		t.Fatalf("the killed fetch left %v, want its quarantine", left)
	}
	if objs, _ := filepath.Glob(filepath.Join(s.CommonDir(), "objects", "pack", left[0], "??", "*")); len(objs) == 0 {
		t.Fatalf("the quarantine %s holds no fetched object", left[0])
	}
	// Fetched objects are not in the repository before they are durable.
	if s.hasCommit(c1) {
		t.Fatal("the fetched commit is visible before the fetch made it durable")
	}
	if b := fenceMarks(t, s); len(b) < 2 || b[fenceMarkUnfenced] == 0 {
		t.Fatalf("the fetch did not announce its temporary files: %v", b)
	}
	// A live fetcher's file (this test process's sleeping child).
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	live := filepath.Join(s.CommonDir(), "objects", "pack", tmpObjPrefix+strconv.Itoa(sleeper.Process.Pid)+"_1")
	if err := os.WriteFile(live, nil, 0o444); err != nil {
		t.Fatal(err)
	}

	commitT(t, s, put("b", "b"))
	if left := tmpNames(t, s); len(left) != 1 || filepath.Base(live) != left[0] {
		t.Fatalf("after the next write: %v, want only the live one", left)
	}
	if b := fenceMarks(t, s); b[fenceMarkUnfenced] == 0 {
		t.Fatal("the mark was cleared while a live writer's file remains")
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	commitT(t, s, put("c", "c"))
	if left := tmpNames(t, s); len(left) != 0 || marked(fenceMarks(t, s)) {
		t.Fatalf("after the live writer died: %v, marks %v", left, fenceMarks(t, s))
	}
	if h, err := s.Fetch(context.Background(), "origin"); err != nil || h.IsZero() {
		t.Fatalf("fetch again: %v %v", h, err)
	}
	fsckT(t, dir)
}
