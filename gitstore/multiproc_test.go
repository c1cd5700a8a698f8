package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/soak"
)

// TestMultiProcess: 8 processes × 20 Transact commits (50 in a soak run),
// each adding a file.
func TestMultiProcess(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	procs, each := 8, soak.Pick(20, 50)
	outs := make([]bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = startWorker(t, "transact", dir, i, each, false, &outs[i])
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	s := openT(t, dir, Options{})
	chain := firstParentChain(t, dir, DefaultRef)
	if len(chain) != procs*each {
		t.Fatalf("history has %d commits, want %d", len(chain), procs*each)
	}
	inChain := map[string]bool{}
	for _, h := range chain {
		inChain[h] = true
	}
	for i := range outs {
		lines := strings.Fields(outs[i].String())
		if len(lines) != each {
			t.Fatalf("worker %d reported %d commits", i, len(lines))
		}
		for _, h := range lines {
			if !inChain[h] {
				t.Errorf("worker %d commit %s not in history", i, h)
			}
		}
	}
	files := walkT(t, snapT(t, s), "")
	if len(files) != procs*each {
		t.Errorf("%d files, want %d", len(files), procs*each)
	}
	for i := 0; i < procs; i++ {
		for j := 0; j < each; j++ {
			p := fmt.Sprintf("w%d/%04d.txt", i, j)
			if want := fmt.Sprintf("worker %d item %d\n", i, j); files[p] != want {
				t.Errorf("%s = %q", p, files[p])
			}
		}
	}
	fsckT(t, dir)
}

// TestInterop: loopx workers commit with Transact while git moves the same
// ref with `git update-ref <new> <old>` and reads it with `git rev-parse`.
// No update may be lost and the ref is never missing or empty.
func TestInterop(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	root := commitT(t, s, put("root", "r"))
	procs, each := 3, soak.Pick(20, 40)
	outs := make([]bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = startWorker(t, "transact", dir, i, each, false, &outs[i])
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var gitCommits []string
	var gitFailed, reads int
	var lockFails []string
	// git writers.
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				old, err := tryGit(dir, "", "rev-parse", "--verify", DefaultRef)
				if err != nil {
					t.Errorf("rev-parse: %v", err)
					return
				}
				c, err := tryGit(dir, "", "commit-tree", old+"^{tree}", "-p", old, "-m", fmt.Sprintf("git %d.%d", g, i))
				if err != nil {
					t.Errorf("commit-tree: %v", err)
					return
				}
				_, err = tryGit(dir, "", "update-ref", DefaultRef, c, old)
				mu.Lock()
				if err == nil {
					gitCommits = append(gitCommits, c)
				} else {
					gitFailed++ // lost the race (moved meanwhile, or our lock held)
					if !strings.Contains(err.Error(), "but expected") {
						lockFails = append(lockFails, err.Error())
					}
				}
				mu.Unlock()
			}
		}()
	}
	// Readers: git's and ours.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			out, err := tryGit(dir, "", "rev-parse", "--verify", DefaultRef)
			if err != nil || len(out) != 40 {
				t.Errorf("git rev-parse saw %q, %v", out, err)
			}
			mu.Lock()
			reads++
			mu.Unlock()
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := openT(t, dir, Options{})
		for !done.Load() {
			h, err := r.Head()
			if err != nil || h.IsZero() {
				t.Errorf("Head = %v, %v", h, err)
			}
			if _, err := r.Snapshot(h); err != nil {
				t.Errorf("Snapshot(%v): %v", h, err)
			}
			mu.Lock()
			reads++
			mu.Unlock()
		}
	}()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
	// On a loaded machine the loopx workers can move the ref between every
	// git writer's rev-parse and update-ref (each of those races lost is
	// the compare-and-swap at work): the git writers go on until one of
	// theirs lands too, within a bound.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		landed := len(gitCommits)
		mu.Unlock()
		if landed > 0 {
			break
		}
	}
	done.Store(true)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	chain := firstParentChain(t, dir, DefaultRef)
	inChain := map[string]bool{}
	for _, h := range chain {
		inChain[h] = true
	}
	var loopx []string
	for i := range outs {
		loopx = append(loopx, strings.Fields(outs[i].String())...)
	}
	for _, h := range append(loopx, gitCommits...) {
		if !inChain[h] {
			t.Errorf("update %s lost", h)
		}
	}
	if want := 1 + len(loopx) + len(gitCommits); len(chain) != want {
		t.Errorf("history has %d commits, want %d (1 + %d loopx + %d git)", len(chain), want, len(loopx), len(gitCommits))
	}
	if chain[len(chain)-1] != root.String() {
		t.Error("history does not end at the root commit")
	}
	if len(loopx) != procs*each || len(gitCommits) == 0 {
		t.Errorf("%d loopx commits, %d git commits", len(loopx), len(gitCommits))
	}
	files := walkT(t, snapT(t, s), "")
	if len(files) != 1+procs*each {
		t.Errorf("%d files, want %d", len(files), 1+procs*each)
	}
	t.Logf("%d loopx commits, %d git update-refs (%d lost their CAS, %d the lock), %d reads", len(loopx), len(gitCommits), gitFailed-len(lockFails), len(lockFails), reads)
	for i, f := range lockFails {
		if i < 3 {
			t.Logf("git failure: %s", f)
		}
	}
	fsckT(t, dir)
}

// TestCrash kills workers with SIGKILL at random points of Transact. Each
// time, the ref must name a complete commit, git fsck must pass, and the
// next write must succeed (a stale <ref>.lock left by the dead process is
// recognised and removed).
func TestCrash(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{FenceTimeout: 30 * time.Second})
	commitT(t, s, put("root", "r"))
	lockPath := filepath.Join(s.CommonDir(), "refs", "loopx", "state.lock")

	check := func(what string) {
		t.Helper()
		// A fresh Store, as the next loopx command would open.
		s2 := openT(t, dir, Options{FenceTimeout: 30 * time.Second})
		head, err := s2.Head()
		if err != nil || head.IsZero() {
			t.Fatalf("%s: Head = %v, %v", what, head, err)
		}
		if n := len(walkT(t, snapT(t, s2), "")); n == 0 {
			t.Fatalf("%s: empty snapshot", what)
		}
		// The next write succeeds.
		h, err := s2.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
			return &Proposal{Changes: []Change{put("after-crash", what)}}, nil
		})
		if err != nil {
			t.Fatalf("%s: write after crash: %v", what, err)
		}
		if got := runGitT(t, dir, "rev-parse", h.String()+"^"); got != head.String() {
			t.Fatalf("%s: new commit's parent %s, want %s", what, got, head)
		}
		if _, err := os.Stat(lockPath); err == nil {
			t.Fatalf("%s: lock still there", what)
		}
	}

	// Deterministic: die while holding the ref lock (and at the other
	// hook points).
	for _, point := range []string{"objects-written", "ref-locked", "ref-renamed"} {
		cmd, lines := startBlockingWorker(t, dir, point)
		select {
		case line := <-lines:
			if line != "BLOCKED "+point {
				t.Fatalf("worker said %q", line)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("worker did not reach " + point)
		}
		cmd.Process.Kill()
		cmd.Wait()
		_, lockErr := os.Stat(lockPath)
		if (point == "ref-locked") != (lockErr == nil) {
			t.Errorf("%s: lock present = %v", point, lockErr == nil)
		}
		check("killed at " + point)
		fsckT(t, dir)
	}

	// Random kills.
	kills := soak.Pick(30, 80)
	staleLocks := 0
	for k := 0; k < kills; k++ {
		pr, pw := io.Pipe()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envWorker+"=loop", envRepo+"="+dir, envID+"="+fmt.Sprint(100+k), envHook+"=1")
		cmd.Stdout = pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		first := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(pr)
			once := false
			for sc.Scan() {
				if !once {
					close(first)
					once = true
				}
			}
			if !once {
				close(first)
			}
		}()
		select {
		case <-first:
		case <-time.After(60 * time.Second):
			t.Fatal("worker never committed")
		}
		time.Sleep(time.Duration(rand.IntN(25000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		if _, err := os.Stat(lockPath); err == nil {
			staleLocks++
		}
		check(fmt.Sprintf("kill %d", k))
		if k%5 == 4 || k == kills-1 {
			fsckT(t, dir)
		}
	}
	t.Logf("%d random kills, %d left a stale ref lock", kills, staleLocks)
	// Leftovers (twins, tmp objects) do not disturb git.
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	fsckT(t, dir)
	if names, _ := filepath.Glob(filepath.Join(s.CommonDir(), refLockTmpGlob)); len(names) != 0 {
		t.Errorf("twins left after GC: %v", names)
	}
}

// startBlockingWorker starts a worker that commits once and blocks forever
// at hook point, after printing "BLOCKED <point>".
func startBlockingWorker(t *testing.T, dir, point string) (*exec.Cmd, <-chan string) {
	t.Helper()
	pr, pw := io.Pipe()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envWorker+"=block", envRepo+"="+dir, envID+"=b", "GITSTORE_BLOCK_AT="+point)
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		pw.Close()
	})
	return cmd, lines
}
