package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Test processes re-exec the test binary as a worker when GITSTORE_WORKER
// is set (see TestMain).
const (
	envWorker = "GITSTORE_WORKER"
	envRepo   = "GITSTORE_REPO"
	envID     = "GITSTORE_ID"
	envN      = "GITSTORE_N"
	envHook   = "GITSTORE_HOOK_SLEEP"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envWorker); mode != "" {
		os.Exit(worker(mode))
	}
	os.Exit(m.Run())
}

// worker runs Transact in a loop, committing "w<id>/<i>.txt", and prints
// each new head on stdout. mode "transact" stops after GITSTORE_N commits;
// "loop" runs until killed.
func worker(mode string) int {
	if strings.HasPrefix(mode, "fence-") {
		return fenceWorker(mode)
	}
	repo, id := os.Getenv(envRepo), os.Getenv(envID)
	n, _ := strconv.Atoi(os.Getenv(envN))
	if at := os.Getenv("GITSTORE_BLOCK_AT"); at != "" {
		testHook = func(point string) {
			if point == at {
				fmt.Println("BLOCKED " + point)
				time.Sleep(time.Hour) // until killed
			}
		}
		mode, n = "transact", 1
	} else if os.Getenv(envHook) != "" {
		testHook = func(string) { time.Sleep(time.Duration(time.Now().UnixNano()%3) * time.Millisecond) }
	}
	s, err := Open(repo, Options{FenceTimeout: 2 * time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	if os.Getenv("GITSTORE_FETCH") != "" {
		// A read's fetch, without the fence.
		h, err := s.Fetch(context.Background(), os.Getenv("GITSTORE_FETCH"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "fetch:", err)
			return 1
		}
		fmt.Println(h)
		return 0
	}
	for i := 0; mode == "loop" || i < n; i++ {
		p := fmt.Sprintf("w%s/%04d.txt", id, i)
		h, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
			return &Proposal{
				Changes: []Change{{Path: p, Data: []byte("worker " + id + " item " + strconv.Itoa(i) + "\n")}},
				Info:    CommitInfo{Message: "add " + p, AuthorName: "worker " + id, AuthorEmail: "w@example.com"},
			}, nil
		})
		if errors.Is(err, ErrConflict) {
			// A foreign writer (the interop test's git) won MaxAttempts
			// times in a row: try again.
			fmt.Fprintln(os.Stderr, "conflict:", err)
			i--
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "transact:", err)
			return 1
		}
		fmt.Println(h)
	}
	return 0
}

// startWorker starts a worker process; its stdout is collected in out.
func startWorker(t testing.TB, mode, repo string, id, n int, hookSleep bool, out *bytes.Buffer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		envWorker+"="+mode, envRepo+"="+repo, envID+"="+strconv.Itoa(id), envN+"="+strconv.Itoa(n))
	if hookSleep {
		cmd.Env = append(cmd.Env, envHook+"=1")
	}
	cmd.Stdout = out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// gitEnvTest isolates git from the user's configuration.
func gitEnvTest() []string {
	return append(gitEnv(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
}

// runGitT runs git in dir and returns its trimmed stdout, failing the test
// on error.
func runGitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := tryGit(dir, "", args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func tryGit(dir, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnvTest()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
}

// newRepo makes a fresh non-bare repository with one commit on main.
func newRepo(t testing.TB) string {
	t.Helper()
	return newRepoIn(t, t.TempDir())
}

// fastTempDir returns a temporary directory on a memory file system when
// one is available (/dev/shm), else t.TempDir(). Tests that commit
// thousands of times but do not test durability use it: on some disks a
// file creation alone costs a millisecond.
func fastTempDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "gitstore-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// newRepoIn makes a fresh non-bare repository in dir with one commit on
// main.
func newRepoIn(t testing.TB, dir string) string {
	t.Helper()
	requireGit(t)
	runGitT(t, dir, "-c", "init.defaultBranch=main", "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("user content\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	runGitT(t, dir, "add", "README")
	runGitT(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// commitT commits changes on top of the current head under the fence.
func commitT(t testing.TB, s *Store, changes ...Change) Hash {
	t.Helper()
	unlock, err := s.Lock(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	head, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Commit(head, changes, CommitInfo{Message: "test", When: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func put(path, data string) Change { return Change{Path: path, Data: []byte(data)} }
func del(path string) Change       { return Change{Path: path, Delete: true} }

func snapT(t testing.TB, s *Store) *Snapshot {
	t.Helper()
	head, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot(head)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// readT returns the content at path, or "<missing>".
func readT(t testing.TB, sn *Snapshot, path string) string {
	t.Helper()
	data, ok, err := sn.Read(path)
	if err != nil {
		t.Fatalf("Read(%q): %v", path, err)
	}
	if !ok {
		return "<missing>"
	}
	return string(data)
}

func walkT(t testing.TB, sn *Snapshot, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	var last string
	err := sn.Walk(dir, func(p string, data []byte) error {
		if p <= last {
			t.Errorf("Walk order: %q after %q", p, last)
		}
		last = p
		m[p] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fsckT(t testing.TB, dir string) {
	t.Helper()
	if out, err := tryGit(dir, "", "fsck", "--strict", "--no-progress"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

// firstParentChain returns the first-parent history of rev, newest first,
// checking that it is linear (no merges anywhere in it).
func firstParentChain(t testing.TB, dir, rev string) []string {
	t.Helper()
	fp := strings.Fields(runGitT(t, dir, "rev-list", "--first-parent", rev))
	all := strings.Fields(runGitT(t, dir, "rev-list", rev))
	if len(fp) != len(all) {
		t.Fatalf("history of %s is not linear: %d first-parent commits, %d in all", rev, len(fp), len(all))
	}
	return fp
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
