package loopx_test

import (
	"compress/zlib"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServerHookHugeRecord: a push whose commit holds a 300 MB loopx.yaml
// (zeros: 400 kB compressed, so a push carries it cheaply) is refused by the
// server hook without the hook inflating it: every record is refused by
// the size in its object's header (corrupt_record), so the hook's peak
// memory stays that of a small push (it was 812 MB). The hook runs as git
// runs it: the pushed objects in a quarantine folder.
func TestServerHookHugeRecord(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a 300 MB blob")
	}
	srv, bare := hookedServer(t, "file")
	dir := machine(t, srv.url("state"))
	must(t, dir, "goal", "create", "--goal-id", "g")
	head := git(t, bare, "rev-parse", "refs/loopx/state")

	// The push's objects, as git keeps them while the hook runs.
	q := filepath.Join(t.TempDir(), "incoming")
	env := []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(bare, "objects"), "GIT_QUARANTINE_PATH=" + q}
	const size = 300 << 20
	blob := writeZeroBlob(t, q, size)
	var entries strings.Builder
	for _, line := range strings.Split(git(t, bare, "ls-tree", head), "\n") {
		if !strings.HasSuffix(line, "\tloopx.yaml") {
			entries.WriteString(line + "\n")
		}
	}
	entries.WriteString("100644 blob " + blob + "\tloopx.yaml\n")
	tree, out, err := gitIn(t, bare, env, entries.String(), "mktree")
	if err != nil {
		t.Fatal(out)
	}
	// Two commits recording a request (goal create's): deciding the
	// second's on its parent reads the parent's loopx.yaml, as the hook
	// judges every new commit on its parent.
	msg := git(t, bare, "log", "-1", "--format=%B", "--grep=Loopx-Request", "refs/loopx/state")
	first, out, err := gitIn(t, bare, env, msg+"\n", "commit-tree", tree, "-p", head)
	if err != nil {
		t.Fatal(out)
	}
	second, out, err := gitIn(t, bare, env, msg+"\n", "commit-tree", tree, "-p", first)
	if err != nil {
		t.Fatal(out)
	}

	cmd := exec.Command(loopxWrapper(t), "server-hook", "pre-receive", "--format", "text", "--repo", bare)
	cmd.Dir = bare
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_DIR="+bare), env...)
	cmd.Stdin = strings.NewReader(head + " " + second + " refs/loopx/state\n")
	output, err := cmd.CombinedOutput()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak := ru.Maxrss * 1024 // kilobytes on Linux
		t.Logf("the hook refused a %d MB record with a peak of %d MB resident", size>>20, peak>>20)
		if peak > 150<<20 {
			t.Errorf("the hook's peak memory was %d MB for a %d MB record", peak>>20, size>>20)
		}
	}
	if err == nil {
		t.Fatalf("the hook accepted the push:\n%s", output)
	}
	if !strings.Contains(string(output), "corrupt_record") || !strings.Contains(string(output), "loopx.yaml") ||
		!strings.Contains(string(output), "over the 1048576-byte (1 MiB) limit") {
		t.Fatalf("the hook's refusal does not name the oversized record:\n%s", output)
	}
}

// writeZeroBlob writes a blob of n zeros as a loose object into objDir,
// streamed, and returns its name.
func writeZeroBlob(t *testing.T, objDir string, n int64) string {
	t.Helper()
	header := fmt.Sprintf("blob %d\x00", n)
	h := sha1.New()
	io.WriteString(h, header)
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(buf)) {
		h.Write(buf[:min(left, int64(len(buf)))])
	}
	name := fmt.Sprintf("%x", h.Sum(nil))
	path := filepath.Join(objDir, name[:2], name[2:])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := zlib.NewWriterLevel(f, zlib.BestSpeed)
	io.WriteString(zw, header)
	for left := n; left > 0; left -= int64(len(buf)) {
		zw.Write(buf[:min(left, int64(len(buf)))])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}
