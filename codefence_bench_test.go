package loopx_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/gitstore"
)

// fenceBenchNow is a time at which the leases seedTodos makes are in force
// (they run from 2026-01-01T00:00Z for a day).
var fenceBenchNow = time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)

// fenceBenchLoopx is the loopx a benchmark's hooks run: $LOOPX_BENCH_BIN
// when set (a built loopx: `go build -o /tmp/loopx ./cmd/loopx`), else this
// test binary behind a shell wrapper (see TestMain), which starts slower.
func fenceBenchLoopx(b *testing.B) string {
	if exe := os.Getenv("LOOPX_BENCH_BIN"); exe != "" {
		return exe
	}
	return loopxWrapper(b)
}

// fenceBenchRepo is a store of 10,000 todos with 1,000 effective leases
// (seed/<i>/**, all seed-agent's), a base commit on main and 50 work
// commits on top, each changing 3 paths: src/a.go, docs/x.md and
// seed/<20i>/x.go, the last inside seed-agent's own lease, named by the
// commit's Loopx-Agent and Loopx-Lease trailers. It returns the repository
// and its 51 commits, oldest first.
func fenceBenchRepo(b *testing.B) (string, []string) {
	b.Helper()
	dir := newStore(b, "g", "seed-agent")
	seedTodos(b, dir, 10000, 1000)
	git(b, dir, "config", "gc.auto", "0")
	git(b, dir, "config", "maintenance.auto", "false")
	id := []string{"-c", "user.name=Bench", "-c", "user.email=bench@example.com"}
	git(b, dir, append(id, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")...)
	commits := []string{git(b, dir, "rev-parse", "HEAD")}
	for i := 0; i < 50; i++ {
		for _, p := range []string{"src/a.go", "docs/x.md", fmt.Sprintf("seed/%d/x.go", 20*i)} {
			writeBench(b, filepath.Join(dir, p), fmt.Sprintf("commit %d\n", i))
		}
		git(b, dir, "add", "-A", "src", "docs", "seed")
		msg := fmt.Sprintf("work %d\n\nLoopx-Agent: seed-agent\nLoopx-Lease: g/todo_seed_%06d@1", i, 20*i)
		git(b, dir, append(id, "commit", "-q", "--no-verify", "-m", msg)...)
		commits = append(commits, git(b, dir, "rev-parse", "HEAD"))
	}
	return dir, commits
}

// BenchmarkServerHookCode measures the server hook's code fence (contract
// section 9; target under 20 ms per pushed code commit) on a store of
// 10,000 todos with 1,000 effective leases: the check a pre-receive hook
// process runs (Open on the bare server repository, ServerHookPreReceive,
// Close) for a push of 1 and of 50 work commits to refs/heads/main. The
// pushed objects are in the server repository under no ref (as in git's
// quarantine while the hook runs), the branch at the commit before them.
// Every commit passes: each path is checked against every lease.
func BenchmarkServerHookCode(b *testing.B) {
	dir, commits := fenceBenchRepo(b)
	server := filepath.Join(b.TempDir(), "server.git")
	git(b, dir, "init", "-q", "--bare", server)
	git(b, dir, "push", "-q", server, commits[0]+":refs/heads/main", "refs/loopx/state", "HEAD:refs/incoming/push")
	git(b, server, "update-ref", "-d", "refs/incoming/push")
	tip := commits[len(commits)-1]
	for _, n := range []int{1, 50} {
		b.Run(fmt.Sprintf("commits=%d", n), func(b *testing.B) {
			old := commits[len(commits)-1-n]
			git(b, server, "update-ref", "refs/heads/main", old)
			up := audit.ReceiveUpdate{Old: gitstore.ParseHash(old), New: gitstore.ParseHash(tip), Ref: "refs/heads/main"}
			hook := func() {
				s, err := lx.Open(lx.Options{Dir: server, Now: func() time.Time { return fenceBenchNow }})
				if err != nil {
					b.Fatal(err)
				}
				res, err := audit.New(s).ServerHookPreReceive(audit.ServerHookRequest{Updates: []audit.ReceiveUpdate{up}, Now: fenceBenchNow})
				s.Close()
				if err != nil {
					b.Fatalf("the hook refused an honest push: %v", err)
				}
				if res.Data.CodeChecked != n {
					b.Fatalf("judged %d commits, want %d", res.Data.CodeChecked, n)
				}
			}
			hook() // the server's first check builds its derived caches (loopx-cache/)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				hook()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/float64(n), "ms/commit")
		})
	}
}

// BenchmarkServerHookCodePush measures a real `git push` of one work
// commit to refs/heads/main of a bare repository (file transport) whose
// pre-receive hook `loopx server-hook install` wrote (hook), and of the
// same push to a repository without it (no-hook), on the store of
// BenchmarkServerHookCode: the difference is what the hook costs a pusher,
// its process start and store opening included. The hook runs
// fenceBenchLoopx; the branch is set back after each push.
func BenchmarkServerHookCodePush(b *testing.B) {
	dir, commits := fenceBenchRepo(b)
	env := []string{"LOOPX_NOW=" + fenceBenchNow.Format(time.RFC3339)} // the hook inherits it over a path remote
	for _, mode := range []string{"hook", "no-hook"} {
		server := filepath.Join(b.TempDir(), "server.git")
		git(b, dir, "init", "-q", "--bare", server)
		git(b, dir, "push", "-q", server, commits[len(commits)-2]+":refs/heads/main", "refs/loopx/state")
		if mode == "hook" {
			must(b, dir, "server-hook", "install", "--repo", server, "--loopx", fenceBenchLoopx(b))
		}
		push := func(b *testing.B) {
			cmd := exec.Command("git", "push", "-q", server, "HEAD:refs/heads/main")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("push (%s): %v\n%s", mode, err, out)
			}
			b.StopTimer()
			git(b, server, "update-ref", "refs/heads/main", commits[len(commits)-2])
			b.StartTimer()
		}
		push(b) // the server's first check builds its derived caches (loopx-cache/)
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				push(b)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/push")
		})
	}
}

// BenchmarkCommitMsgHook measures what the commit-msg hook (`loopx guard
// commit-msg`, installed alone) adds to a `git commit` (target under 30
// ms): the same commit of one path inside seed-agent's own lease, on the
// store of 10,000 todos with 1,000 effective leases, with the hook
// (commit-msg) and without it (--no-verify skips it), side by side. The
// hook runs fenceBenchLoopx.
func BenchmarkCommitMsgHook(b *testing.B) {
	dir := newStore(b, "g", "seed-agent")
	seedTodos(b, dir, 10000, 1000)
	git(b, dir, "config", "gc.auto", "0")
	git(b, dir, "config", "maintenance.auto", "false")
	s, err := lx.Open(lx.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	_, err = audit.New(s).GuardInstallHook(audit.GuardHookCommitMsg, fenceBenchLoopx(b))
	s.Close()
	if err != nil {
		b.Fatal(err)
	}
	env := []string{"LOOPX_NOW=" + fenceBenchNow.Format(time.RFC3339), "LOOPX_AGENT_ID=seed-agent"}
	path := filepath.Join(dir, "seed", "500", "x.go")
	round := 0 // b.Run calls each function more than once: keep contents new
	commit := func(b *testing.B, mode string) {
		b.StopTimer()
		round++
		writeBench(b, path, fmt.Sprintf("round %d\n", round))
		git(b, dir, "add", path)
		args := []string{"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "bench"}
		if mode == "no-hook" {
			args = append(args, "--no-verify")
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		b.StartTimer()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git commit (%s): %v\n%s", mode, err, out)
		}
	}
	commit(b, "commit-msg") // the first run builds the derived caches (loopx-cache/)
	for _, mode := range []string{"commit-msg", "no-hook"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				commit(b, mode)
			}
			b.StopTimer()
			msg := git(b, dir, "log", "-1", "--format=%B")
			if named := strings.Contains(msg, "Loopx-Lease: g/todo_seed_000500@1"); named != (mode == "commit-msg") {
				b.Fatalf("%s: the commit's message:\n%s", mode, msg)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/commit")
		})
	}
}
