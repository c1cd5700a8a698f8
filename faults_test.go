package loopx_test

// Faults seen from the command line (issue 12, items 3, 4, 6, 7): every
// failure that is not a decision exits 3, nothing is half-written, and the
// retry with the same arguments applies the request once (or reports it
// replayed). Real processes throughout: the test binary runs as loopx
// (process_test.go), with write errors injected at each stage of a commit
// (LOOPX_TEST_FAULT, below), a full tmpfs, a read-only bind mount of .git,
// and a git daemon killed during fetch and during push.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/fault"
	"github.com/loopx-dev/loopx/internal/soak"
)

// In a loopx child process, LOOPX_TEST_FAULT=<point>:<errno> makes every
// pass through that fault point of gitstore fail with that errno
// (ENOSPC, EROFS, EACCES, EIO), as the kernel would; <point>:HANG stops
// the process there until it is killed.
func init() {
	spec := os.Getenv("LOOPX_TEST_FAULT")
	if os.Getenv("LOOPX_TEST_CLI") != "1" || spec == "" {
		return
	}
	point, name, _ := strings.Cut(spec, ":")
	if name == "HANG" {
		// Stop there until killed.
		fault.Set(func(p string) error {
			if p == point {
				time.Sleep(time.Hour)
			}
			return nil
		})
		return
	}
	errno := map[string]syscall.Errno{"ENOSPC": syscall.ENOSPC, "EROFS": syscall.EROFS, "EACCES": syscall.EACCES, "EIO": syscall.EIO}[name]
	if errno == 0 {
		panic("LOOPX_TEST_FAULT: unknown errno " + name)
	}
	fault.Set(func(p string) error {
		if p == point {
			return errno
		}
		return nil
	})
}

func stateRef(t testing.TB, dir string) string {
	t.Helper()
	return git(t, dir, "rev-parse", "refs/loopx/state")
}

// wantStoreIO checks an exit 3 store_io whose message carries the OS's.
func wantStoreIO(t testing.TB, r result, osMsg string) {
	t.Helper()
	if r.code != 3 || r.errCode() != "store_io" || !strings.Contains(r.raw, osMsg) {
		t.Fatalf("want exit 3 store_io with %q, got exit %d: %s", osMsg, r.code, r.raw)
	}
}

// acquireArgs is one acquire request, the same in every attempt.
func acquireArgs(todo, key string) []string {
	return []string{"task-lease", "acquire", "--goal-id", "g", "--todo-id", todo, "--owner", "a",
		"--idempotency-key", key, "--ttl-seconds", "600"}
}

// TestFaultInjectedAtEachCommitStage: a write error at each stage of a
// commit (ref-lock twin, objects, pack index, fsync, pack rename, ref lock,
// ref rename) exits 3 store_io with the OS message and leaves the ref
// unchanged; the same arguments then apply once. After the rename (the
// ref's directory fsync) the ref has moved: still exit 3, and the retry is
// replayed, never a second application.
func TestFaultInjectedAtEachCommitStage(t *testing.T) {
	t.Parallel()
	dir := newStore(t, "g", "a")
	stages := []struct{ point, errno, msg string }{
		{"twin", "ENOSPC", "no space left on device"},
		{"objects", "ENOSPC", "no space left on device"},
		{"pack-index", "ENOSPC", "no space left on device"},
		{"fsync", "EIO", "input/output error"},
		{"pack-rename", "EROFS", "read-only file system"},
		{"ref-lock", "EACCES", "permission denied"},
		{"ref-rename", "ENOSPC", "no space left on device"},
		{"ref-dir-sync", "EIO", "input/output error"},
	}
	for i, st := range stages {
		todo := fmt.Sprintf("todo_stage_%d", i)
		must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", todo, "--text", st.point)
		args := acquireArgs(todo, "k")
		before := stateRef(t, dir)
		r := loopx(t, dir, []string{"LOOPX_TEST_FAULT=" + st.point + ":" + st.errno}, args...)
		wantStoreIO(t, r, st.msg)
		after := stateRef(t, dir)
		wantStatus := "applied"
		if st.point == "ref-dir-sync" {
			if after == before {
				t.Fatalf("%s: the ref did not move", st.point)
			}
			wantStatus = "replayed"
		} else if after != before {
			t.Fatalf("%s: the ref moved from %s to %s", st.point, before, after)
		}
		r = must(t, dir, args...)
		// Past the pack's rename (ref-lock, ref-rename) the failed attempt
		// left its objects and the retry makes the identical commit: it is
		// still this retry that applies it (the ref never moved before).
		if r.out["status"] != wantStatus {
			t.Fatalf("%s: retry: %s, want %s", st.point, r.raw, wantStatus)
		}
		if r = must(t, dir, args...); r.out["status"] != "replayed" {
			t.Fatalf("%s: again: %s", st.point, r.raw)
		}
	}
	if n := countOps(t, dir, "task-lease.acquire"); n != len(stages) {
		t.Fatalf("%d acquire commits, want %d (one per request)", n, len(stages))
	}
	checkLinear(t, dir)
	// Nothing a failed writer made is left: no temporary file, no lock.
	if out := git(t, dir, "count-objects", "-v"); !strings.Contains(out, "garbage: 0") {
		t.Errorf("garbage in the object directory:\n%s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".git", "loopx-reflock.*")); len(m) != 0 {
		t.Errorf("twins left: %v", m)
	}
}

// TestFaultKilledWriterLeftovers: a loopx writer killed (kill -9) while
// its pack and index are temporary files leaves them, with its ref-lock
// twin; the next write removes them, and the killed request's retry
// applies once.
func TestFaultKilledWriterLeftovers(t *testing.T) {
	t.Parallel()
	dir := newStore(t, "g", "a")
	must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_killed", "--text", "x")
	before := stateRef(t, dir)
	exe, _ := os.Executable()
	args := acquireArgs("todo_killed", "k")
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOPX_TEST_CLI=1", "LOOPX_FORMAT=json", "LOOPX_TEST_FAULT=fsync:HANG")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	tmps := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "tmp_*_loopx_*"))
		t, _ := filepath.Glob(filepath.Join(dir, ".git", "loopx-reflock.*"))
		return append(m, t...)
	}
	for i := 0; len(tmps()) < 3; i++ {
		if i > 1000 {
			t.Fatalf("the writer did not reach the fsync: %v", tmps())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if left := tmps(); len(left) != 3 {
		t.Fatalf("the killed writer left %v, want its pack, index and twin", left)
	}
	if got := stateRef(t, dir); got != before {
		t.Fatal("the ref moved")
	}
	r := must(t, dir, args...)
	if r.out["status"] != "applied" {
		t.Fatalf("retry: %s", r.raw)
	}
	if left := tmps(); len(left) != 0 {
		t.Fatalf("after the next write: %v", left)
	}
	if out := git(t, dir, "count-objects", "-v"); !strings.Contains(out, "garbage: 0") {
		t.Errorf("garbage:\n%s", out)
	}
	checkLinear(t, dir)
}

// mountTmpfs mounts a tmpfs of size bytes on a new folder, or skips.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the injected-fault test covers a full disk", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes to name until the file system is full.
func fill(t *testing.T, name string) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4096, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// TestFaultFullDisk: on a full file system (a small tmpfs), a mutation
// exits 3 store_io with the OS message, the ref unchanged, and reads still
// work; once space is back the same arguments apply once.
func TestFaultFullDisk(t *testing.T) {
	t.Parallel()
	base := mountTmpfs(t, "16m")
	dir := filepath.Join(base, "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, dir, "init")
	must(t, dir, "goal", "create", "--goal-id", "g")
	must(t, dir, "agent", "register", "--goal-id", "g", "--agent-id", "a")
	must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_full", "--text", "x")
	before := stateRef(t, dir)
	filler := filepath.Join(base, "filler")
	fill(t, filler)

	args := acquireArgs("todo_full", "k1")
	for _, a := range [][]string{args, {"todo", "add", "--goal-id", "g", "--todo-id", "todo_more", "--text", "y"}} {
		wantStoreIO(t, loopx(t, dir, nil, a...), "no space left on device")
	}
	if got := stateRef(t, dir); got != before {
		t.Fatalf("the ref moved on a full disk: %s → %s", before, got)
	}
	if r := must(t, dir, "todo", "show", "--goal-id", "g", "--todo-id", "todo_full"); r.out["todo_id"] != "todo_full" {
		t.Fatalf("read on a full disk: %s", r.raw)
	}
	os.Remove(filler)
	if r := must(t, dir, args...); r.out["status"] != "applied" {
		t.Fatalf("after space returned: %s", r.raw)
	}
	if r := must(t, dir, args...); r.out["status"] != "replayed" {
		t.Fatalf("again: %s", r.raw)
	}
	if n := countOps(t, dir, "task-lease.acquire"); n != 1 {
		t.Fatalf("%d acquire commits", n)
	}
	checkLinear(t, dir)
}

// TestFaultReadOnlyRepository: with .git read-only (a read-only bind
// mount: as root, permission bits do not stop writes), a mutation exits 3
// store_io ("read-only file system"), the ref unchanged, reads work; once
// writable again the same arguments apply once.
func TestFaultReadOnlyRepository(t *testing.T) {
	t.Parallel()
	dir := newStore(t, "g", "a")
	must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_readonly", "--text", "x")
	gitDir := filepath.Join(dir, ".git")
	if out, err := exec.Command("mount", "--bind", gitDir, gitDir).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here (%v: %s); run as root where mount is allowed to test a read-only repository", err, bytes.TrimSpace(out))
	}
	mounted := true
	unmount := func() {
		if mounted {
			exec.Command("umount", gitDir).Run()
			mounted = false
		}
	}
	t.Cleanup(unmount)
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", gitDir).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only (%v: %s)", err, bytes.TrimSpace(out))
	}
	before := stateRef(t, dir)
	args := acquireArgs("todo_readonly", "k1")
	wantStoreIO(t, loopx(t, dir, nil, args...), "read-only file system")
	if got := stateRef(t, dir); got != before {
		t.Fatalf("the ref moved: %s → %s", before, got)
	}
	if r := must(t, dir, "todo", "list", "--goal-id", "g"); r.code != 0 {
		t.Fatalf("read: %s", r.raw)
	}
	unmount()
	if r := must(t, dir, args...); r.out["status"] != "applied" {
		t.Fatalf("writable again: %s", r.raw)
	}
	if n := countOps(t, dir, "task-lease.acquire"); n != 1 {
		t.Fatalf("%d acquire commits", n)
	}
}

// killProxy forwards TCP connections to a git daemon and, when armed for a
// phase, kills the daemon (its whole process group) at that moment of the
// next matching conversation: "fetch" once the server is sending a pack,
// "push" once the client has sent its pack (the server may or may not have
// applied it). The daemon stays down until restarted.
type killProxy struct {
	l      net.Listener
	target string
	kill   func()
	armed  atomic.Value // "", "fetch" or "push"
	kills  atomic.Int32
}

func newKillProxy(t testing.TB, target string, kill func()) *killProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &killProxy{l: l, target: target, kill: kill}
	p.armed.Store("")
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *killProxy) addr() string { return p.l.Addr().String() }

func (p *killProxy) fire(phase string) bool {
	if p.armed.CompareAndSwap(phase, "") {
		p.kills.Add(1)
		p.kill()
		return true
	}
	return false
}

func (p *killProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	var kind atomic.Value // "upload" or "receive", from the request line
	kind.Store("")
	done := make(chan struct{}, 2)
	go func() { // client → server
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if kind.Load() == "" {
					switch {
					case bytes.Contains(buf[:n], []byte("git-upload-pack")):
						kind.Store("upload")
					case bytes.Contains(buf[:n], []byte("git-receive-pack")):
						kind.Store("receive")
					}
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
				if kind.Load() == "receive" && bytes.Contains(buf[:n], []byte("PACK")) && p.fire("push") {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // server → client
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				if kind.Load() == "upload" && bytes.Contains(buf[:n], []byte("PACK")) && p.fire("fetch") {
					c.Write(buf[:n/2]) // half of what the server had sent
					return
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	<-done
}

// randomText is incompressible text, so that fetching it takes a pack of
// many pkt-lines.
func randomText(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestFaultDaemonKilled: a git daemon killed while a client fetches (the
// pack half sent) and while it pushes (its pack sent, the answer not yet
// heard): the client exits 3 (remote_unavailable), never 1; after the
// daemon restarts, the same arguments converge: the request is on the
// server exactly once, applied or replayed.
func TestFaultDaemonKilled(t *testing.T) {
	t.Parallel()
	srv, d := daemonServer(t)
	bare := bareRepo(t, srv.base, "state")
	proxy := newKillProxy(t, fmt.Sprintf("127.0.0.1:%d", d.port), d.kill)
	url := fmt.Sprintf("git://%s/state.git", proxy.addr())
	writer := machine(t, url)
	must(t, writer, "goal", "create", "--goal-id", "g")
	must(t, writer, "agent", "register", "--goal-id", "g", "--agent-id", "a")
	reader := machine(t, url)

	round := 0
	for _, phase := range []string{"fetch", "push", "fetch", "push"} {
		round++
		todo := fmt.Sprintf("todo_kill_%d", round)
		// Another machine adds big todos: the next fetch is a pack of many
		// pkt-lines.
		for i := 0; i < 3; i++ {
			must(t, writer, "todo", "add", "--goal-id", "g", "--todo-id", fmt.Sprintf("%s_%d", todo, i), "--text", randomText(60000))
		}
		must(t, writer, "todo", "add", "--goal-id", "g", "--todo-id", todo, "--text", "x")
		args := acquireArgs(todo, "k")
		if phase == "fetch" {
			// Killed during the fetch of a read, then of a mutation.
			proxy.armed.Store("fetch")
			r := loopx(t, reader, nil, "todo", "show", "--goal-id", "g", "--todo-id", todo)
			if proxy.armed.Load() != "" {
				t.Fatalf("round %d: the daemon was not killed during the read's fetch: %s", round, r.raw)
			}
			if r.code != 3 || r.errCode() != "remote_unavailable" {
				t.Fatalf("round %d: read during a killed fetch: exit %d %s", round, r.code, r.raw)
			}
			linRemoveServerLocks(t, bare)
			d.start()
			must(t, writer, "todo", "add", "--goal-id", "g", "--todo-id", todo+"_more", "--text", randomText(60000))
		}
		proxy.armed.Store(phase)
		r := loopx(t, reader, nil, args...)
		if proxy.armed.Load() != "" {
			t.Fatalf("round %d: the daemon was not killed during the %s: exit %d %s", round, phase, r.code, r.raw)
		}
		if r.code != 3 || r.errCode() != "remote_unavailable" {
			t.Fatalf("round %d: acquire during a killed %s: exit %d %s", round, phase, r.code, r.raw)
		}
		// Down: still exit 3.
		if r := loopx(t, reader, nil, args...); r.code != 3 {
			t.Fatalf("round %d: with the daemon down: exit %d %s", round, r.code, r.raw)
		}
		// A push killed in its receive-pack's lock window leaves the
		// ref's lock behind: the operator's part, before the restart.
		linRemoveServerLocks(t, bare)
		d.start()
		r = must(t, reader, args...)
		if s := r.out["status"]; s != "applied" && s != "replayed" {
			t.Fatalf("round %d: retry: %s", round, r.raw)
		}
		if r = must(t, reader, args...); r.out["status"] != "replayed" {
			t.Fatalf("round %d: again: %s", round, r.raw)
		}
		if n := countSubjects(git(t, bare, "log", "--format=%s", "refs/loopx/state"), "task-lease acquire g/"+todo); n != 1 {
			t.Fatalf("round %d: %d acquire commits of %s on the server", round, n, todo)
		}
	}
	serverChain(t, bare)
}

// countSubjects counts the commit subjects (one a line) that are prefix
// followed by nothing or by a space.
func countSubjects(log, prefix string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if l == prefix || strings.HasPrefix(l, prefix+" ") {
			n++
		}
	}
	return n
}

// TestFaultDaemonKilledAtRandom: two clients acquire leases on their own
// todos while the daemon is killed (8 times, 15 in a soak run) and restarted at random
// moments; every failure is exit 3, and retrying each request with the
// same arguments until it succeeds leaves each on the server exactly once.
func TestFaultDaemonKilledAtRandom(t *testing.T) {
	t.Parallel()
	srv, d := daemonServer(t)
	bare := bareRepo(t, srv.base, "state")
	url := srv.url("state")
	dirs := []string{machine(t, url), machine(t, url)}
	must(t, dirs[0], "goal", "create", "--goal-id", "g")
	must(t, dirs[0], "agent", "register", "--goal-id", "g", "--agent-id", "a")
	perClient := soak.Pick(6, 12)
	for c := range dirs {
		for n := 0; n < perClient; n++ {
			must(t, dirs[c], "todo", "add", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_rnd_%d_%d", c, n), "--text", randomText(4000))
		}
	}
	stop := make(chan struct{})
	var killer sync.WaitGroup
	killer.Add(1)
	// A bounded number of kills, so that the clients converge however
	// slow the machine is; each kill lands at a random moment of whatever
	// the clients are doing (connecting, fetching, pushing).
	kills := soak.Pick(8, 15)
	var staleLocks atomic.Int64
	go func() {
		defer killer.Done()
		for k := 0; k < kills; k++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(100+mrand.IntN(400)) * time.Millisecond):
			}
			d.kill()
			// A receive-pack killed holding the ref's lock leaves it, and
			// every later push fails until the server's operator removes
			// it (TestServerStaleRefLock): with the daemon down, do so.
			staleLocks.Add(int64(linRemoveServerLocks(t, bare)))
			time.Sleep(time.Duration(mrand.IntN(100)) * time.Millisecond)
			if err := restartDaemon(d); err != nil {
				t.Errorf("restart git daemon: %v", err)
				return
			}
		}
	}()
	var (
		mu        sync.Mutex
		exits     = map[int]int{}
		bad       []string
		clientsWG sync.WaitGroup
	)
	for c, dir := range dirs {
		clientsWG.Add(1)
		go func() {
			defer clientsWG.Done()
			for n := 0; n < perClient; n++ {
				args := acquireArgs(fmt.Sprintf("todo_rnd_%d_%d", c, n), "k")
				for attempt := 0; ; attempt++ {
					r := loopx(t, dir, nil, args...)
					mu.Lock()
					exits[r.code]++
					if r.code != 0 && r.code != 3 {
						bad = append(bad, fmt.Sprintf("%v: exit %d %s", args, r.code, r.raw))
					}
					mu.Unlock()
					if r.code != 3 || attempt > 300 {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	clientsWG.Wait()
	close(stop)
	killer.Wait()
	d.kill()
	d.start()
	t.Logf("exits: %v over %d requests; %d stale server locks removed", exits, len(dirs)*perClient, staleLocks.Load())
	for _, b := range bad {
		t.Error(b)
	}
	if exits[3] == 0 {
		t.Error("no transient failure happened: the kills missed every request")
	}
	log := git(t, bare, "log", "--format=%s", "refs/loopx/state")
	for c := range dirs {
		for n := 0; n < perClient; n++ {
			todo := fmt.Sprintf("todo_rnd_%d_%d", c, n)
			if k := countSubjects(log, "task-lease acquire g/"+todo); k != 1 {
				t.Errorf("%s acquired %d times", todo, k)
			}
		}
	}
	serverChain(t, bare)
}
