//go:build unix

package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
)

// injectAt makes every pass through point fail with errno until restored.
func injectAt(t testing.TB, point string, errno syscall.Errno) (hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	restore := fault.Set(func(p string) error {
		if p == point {
			hits.Add(1)
			return errno
		}
		return nil
	})
	t.Cleanup(restore)
	return hits
}

func transactPut(s *Store, path, data string) (Hash, error) {
	return s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{Changes: []Change{put(path, data)}, Info: CommitInfo{Message: "put " + path}}, nil
	})
}

// A full disk (or a read-only file system) at each stage of a commit: the
// commit fails with ErrIO and the OS message, the ref is unchanged, nothing
// is left behind, and the same commit applies once the space is back.
// Past the rename (the ref directory's fsync) the ref has moved: still
// ErrIO, and the error says the ref moved.
func TestCommitIOErrorAtEachStage(t *testing.T) {
	for _, point := range []string{"twin", "objects", "pack-index", "fsync", "pack-rename", "ref-lock", "ref-rename", "ref-dir-sync"} {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS} {
			t.Run(point+"/"+errno.Error(), func(t *testing.T) {
				dir := newRepo(t)
				s := openT(t, dir, Options{})
				before := commitT(t, s, put("a", "a"))
				restore := fault.Set(func(p string) error {
					if p == point {
						return errno
					}
					return nil
				})
				_, err := transactPut(s, "b", "b")
				restore()
				if !errors.Is(err, ErrIO) || !errors.Is(err, errno) || !strings.Contains(err.Error(), errno.Error()) {
					t.Fatalf("commit: %v, want ErrIO with %q", err, errno.Error())
				}
				head, _ := s.Head()
				if point == "ref-dir-sync" {
					if head == before || !strings.Contains(err.Error(), "the ref moved") {
						t.Fatalf("after the rename: head %s, error %v", shortHash(head), err)
					}
					return
				}
				if head != before {
					t.Fatalf("the ref moved to %s", head)
				}
				if left := tmpNames(t, s); len(left) != 0 {
					t.Fatalf("left behind: %v", left)
				}
				if _, err := os.Stat(filepath.Join(s.CommonDir(), filepath.FromSlash(DefaultRef)+".lock")); err == nil {
					t.Fatal("ref lock left behind")
				}
				h, err := transactPut(s, "b", "b")
				if err != nil {
					t.Fatalf("retry: %v", err)
				}
				if c, _ := s.readCommitLocked(h); len(c.parents) != 1 || c.parents[0] != before {
					t.Fatalf("retry is not one commit on the old head: %+v", c)
				}
				if got := readT(t, snapT(t, s), "b"); got != "b" {
					t.Fatalf("read %q", got)
				}
				fsckT(t, dir)
			})
		}
	}
}

func (s *Store) readCommitLocked(h Hash) (*commitData, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readCommit(h)
}

// A fetch that cannot store what it received (a full disk) is ErrIO, not
// "remote unavailable": the remote is fine, this repository is not. Both
// where git writes the objects (an objects/xx folder that is a file: git
// cannot create the object) and where loopx makes them durable.
func TestFetchIOError(t *testing.T) {
	bare := newBare(t)
	a := remoteClient(t, bare)
	c1 := pushCommit(t, a, ZeroHash, put("x/1", "1"), put("x/2", "2"))
	b := remoteClient(t, bare)

	// git cannot write: one of the objects' folders is a file.
	blocked := ""
	for _, line := range strings.Split(runGitT(t, bare, "rev-list", "--objects", c1.String()), "\n") {
		h, ok := parseHash(strings.Fields(line)[0])
		if !ok {
			t.Fatalf("rev-list: %q", line)
		}
		dir := filepath.Dir(b.odb.loosePath(h))
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(dir, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			blocked = dir
			break
		}
	}
	if blocked == "" {
		t.Fatal("every object folder exists already")
	}
	_, err := b.Fetch(context.Background(), "origin")
	if !errors.Is(err, ErrIO) || errors.Is(err, ErrRemoteUnavailable) || errors.Is(err, ErrRemoteRejected) {
		t.Fatalf("git cannot write: fetch: %v", err)
	}
	os.Remove(blocked)

	// loopx cannot make them durable.
	hits := injectAt(t, "fetch-objects", syscall.ENOSPC)
	_, err = b.Fetch(context.Background(), "origin")
	fault.Set(nil)
	if hits.Load() == 0 || !errors.Is(err, ErrIO) || errors.Is(err, ErrRemoteUnavailable) {
		t.Fatalf("fetch-objects: fetch: %v", err)
	}
	if tr, _ := b.ReadRef(b.TrackingRef("origin")); !tr.IsZero() {
		t.Fatalf("the tracking ref moved to %s before the objects were durable", tr)
	}
	if left := tmpNames(t, b); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if h, err := b.Fetch(context.Background(), "origin"); err != nil || h != c1 {
		t.Fatalf("fetch after: %v %v", h, err)
	}
}

// A <ref>.lock that git left (no loopx twin): ErrBusy as a RefLockError
// naming the file and its age, and the file is left in place.
func TestStaleGitRefLock(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	head := commitT(t, s, put("a", "a"))
	lock := filepath.Join(s.CommonDir(), filepath.FromSlash(DefaultRef)+".lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-5 * time.Minute)
	os.Chtimes(lock, old, old)
	_, err := transactPut(s, "b", "b")
	var le *RefLockError
	if !errors.Is(err, ErrBusy) || !errors.As(err, &le) {
		t.Fatalf("commit under git's lock: %v", err)
	}
	if le.Path != lock || le.Age < 5*time.Minute || le.Age > 6*time.Minute || le.LoopxPid != 0 {
		t.Fatalf("lock error %+v", le)
	}
	for _, want := range []string{lock, " old)", "(5m", "if no git process is running, remove it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("git's lock was removed: %v", err)
	}
	if h, _ := s.Head(); h != head {
		t.Fatal("ref moved")
	}
	os.Remove(lock)
	if _, err := transactPut(s, "b", "b"); err != nil {
		t.Fatal(err)
	}
}

// The server's own ref lock is taken (a concurrent push holds it): the
// server refuses the update with "cannot lock ref". That is a lost
// compare-and-swap (ErrConflict: re-read, decide again), never a refusal,
// whether or not the follow-up listing of the server's refs works.
func TestPushServerRefLockTaken(t *testing.T) {
	for _, listingFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("listing-fails=%v", listingFails), func(t *testing.T) {
			bare := newBare(t)
			s := remoteClient(t, bare)
			c1 := pushCommit(t, s, ZeroHash, put("a", "a"))
			serverLock := filepath.Join(bare, filepath.FromSlash(DefaultRef)+".lock")
			if err := os.WriteFile(serverLock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			c2, err := s.WriteCommit(c1, []Change{put("b", "b")}, CommitInfo{Message: "b"})
			if err != nil {
				t.Fatal(err)
			}
			if listingFails {
				testHook = func(p string) {
					if p == "push-answered" {
						os.Rename(bare, bare+".away")
					}
				}
				defer func() { testHook = nil }()
			}
			err = s.Push(context.Background(), "origin", c1, c2)
			testHook = nil
			os.Rename(bare+".away", bare)
			if !errors.Is(err, ErrConflict) || errors.Is(err, ErrRemoteRejected) || !strings.Contains(err.Error(), "cannot lock ref") {
				t.Fatalf("push: %v", err)
			}
			if got := runGitT(t, bare, "rev-parse", DefaultRef); got != c1.String() {
				t.Fatalf("server moved to %s", got)
			}
			os.Remove(serverLock)
			if err := s.Push(context.Background(), "origin", c1, c2); err != nil {
				t.Fatalf("push once the lock is gone: %v", err)
			}
		})
	}
}

// gitDaemon serves base on 127.0.0.1 (git://); it returns the port.
func gitDaemon(t testing.TB, base string) int {
	t.Helper()
	out, _ := exec.Command("git", "daemon", "-h").CombinedOutput()
	if !strings.Contains(string(out), "usage") {
		t.Skipf("git daemon is not available: %s", strings.TrimSpace(string(out)))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--base-path="+base, "--export-all", "--enable=receive-pack", base)
	cmd.Env = gitEnvTest()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return port
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("git daemon did not start")
	return 0
}

// cutPackProxy forwards to target and, while armed, cuts a connection a
// few bytes after the server started sending a pack ("PACK").
type cutPackProxy struct {
	l     net.Listener
	armed atomic.Bool
	// whole cuts after the whole read that holds "PACK" (git writes one
	// pkt-line per write, so the cut falls between two of them), else in
	// the middle of a pkt-line.
	whole atomic.Bool
	cuts  atomic.Int32
	wg    sync.WaitGroup
}

func newCutPackProxy(t testing.TB, target string) *cutPackProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutPackProxy{l: l}
	t.Cleanup(func() { l.Close(); p.wg.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c, target) }()
		}
	}()
	return p
}

func (p *cutPackProxy) serve(c net.Conn, target string) {
	defer c.Close()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				s.Write(buf[:n])
			}
			if err != nil {
				s.(*net.TCPConn).CloseWrite()
				return
			}
		}
	}()
	buf := make([]byte, 4096)
	var seen []byte
	packAt := 0
	for {
		n, err := s.Read(buf)
		if n > 0 {
			data := buf[:n]
			if p.armed.Load() {
				seen = append(seen, data...)
				if p.whole.Load() {
					// Forward whole pkt-lines only; stop two after the one
					// that starts the pack.
					for {
						if len(seen) < 4 {
							break
						}
						var n int
						fmt.Sscanf(string(seen[:4]), "%04x", &n)
						if n < 4 {
							n = 4 // flush and delimiter packets
						}
						if len(seen) < n {
							break
						}
						pkt := seen[:n]
						seen = seen[n:]
						c.Write(pkt)
						if packAt == 0 && bytes.Contains(pkt, []byte("PACK")) {
							packAt = 1
						} else if packAt > 0 {
							if packAt++; packAt > 2 {
								p.cuts.Add(1)
								return
							}
						}
					}
					if err != nil {
						return
					}
					continue
				}
				if i := bytes.Index(seen, []byte("PACK")); i >= 0 && len(seen) > i+40 {
					// Send what came before and 20 bytes of the pack.
					c.Write(data[:max(0, len(data)-(len(seen)-(i+24)))])
					p.cuts.Add(1)
					return
				}
			}
			c.Write(data)
		}
		if err != nil {
			return
		}
	}
}

// A fetch cut off mid-pack (the server, or the connection, died) is
// ErrRemoteUnavailable: transient, nothing stored, the tracking ref
// unchanged; the same fetch succeeds afterwards.
func TestFetchCutOffMidPack(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("between-pkt-lines=%v", whole), func(t *testing.T) { fetchCutOff(t, whole) })
	}
	// A fetch big enough to be kept as a pack (storeAsPack).
	t.Run("kept-as-pack", func(t *testing.T) {
		old := loosePackLimit
		loosePackLimit = 10
		defer func() { loosePackLimit = old }()
		fetchCutOff(t, true)
	})
}

func fetchCutOff(t *testing.T, whole bool) {
	base := t.TempDir()
	bare := filepath.Join(base, "state.git")
	runGitT(t, base, "init", "-q", "--bare", bare)
	a := remoteClient(t, bare)
	var changes []Change
	// Incompressible content, so that the pack spans many pkt-lines.
	rnd := rand.New(rand.NewPCG(1, 2))
	want := ""
	for i := 0; i < 200; i++ {
		b := make([]byte, 2048)
		for j := range b {
			b[j] = byte(rnd.Uint32())
		}
		want = string(b)
		changes = append(changes, put(fmt.Sprintf("d/%03d", i), want))
	}
	c1 := pushCommit(t, a, ZeroHash, changes...)
	port := gitDaemon(t, base)
	proxy := newCutPackProxy(t, fmt.Sprintf("127.0.0.1:%d", port))
	url := fmt.Sprintf("git://%s/state.git", proxy.l.Addr())
	dir := newRepo(t)
	runGitT(t, dir, "remote", "add", "origin", url)
	b := openT(t, dir, Options{})
	proxy.armed.Store(true)
	proxy.whole.Store(whole)
	_, err := b.Fetch(context.Background(), "origin")
	if proxy.cuts.Load() == 0 {
		t.Fatalf("the proxy did not cut the fetch: %v", err)
	}
	t.Logf("fetch cut off: %v", err)
	if !errors.Is(err, ErrRemoteUnavailable) || errors.Is(err, ErrIO) || errors.Is(err, ErrRemoteRejected) {
		t.Fatalf("fetch cut off: %v", err)
	}
	if tr, _ := b.ReadRef(b.TrackingRef("origin")); !tr.IsZero() {
		t.Fatalf("tracking ref moved to %s", tr)
	}
	proxy.armed.Store(false)
	if h, err := b.Fetch(context.Background(), "origin"); err != nil || h != c1 {
		t.Fatalf("fetch again: %v %v", h, err)
	}
	if got := readT(t, mustSnap(t, b, c1), "d/199"); got != want {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
}

func mustSnap(t testing.TB, s *Store, h Hash) *Snapshot {
	t.Helper()
	sn, err := s.Snapshot(h)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}
