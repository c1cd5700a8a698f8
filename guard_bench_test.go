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
)

// BenchmarkGuardCheck measures `loopx guard check` on a store of 10,000
// todos with 0 and with 1,000 effective leases (each on its own scope
// seed/<i>/**, all held by seed-agent), in four ways:
//
//	api        loopx.Open + GuardCheck + Close on explicit paths (in process)
//	cli-staged one `loopx guard check --staged` process (what the hook runs)
//	commit     `git commit` of one staged file with the pre-commit hook
//	no-verify  the same commit without the hook (--no-verify), for comparison
//
// The checked paths are src/a.go, docs/x.md and seed/500/x.go, as
// seed-agent: the last one is inside seed-agent's own lease, so every lease
// is decoded and the covering one is judged effective. The clock is fixed at
// the seed time (leases expire a day later).
func BenchmarkGuardCheck(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	paths := []string{"src/a.go", "docs/x.md", "seed/500/x.go"}
	for _, leases := range []int{0, 1000} {
		dir := newStore(b, "g", "seed-agent")
		seedTodos(b, dir, 10000, leases)
		hookExe := installBenchHook(b, dir)
		// No background auto-gc after the benchmark's commits: it would add
		// noise and race with the removal of the temporary folder.
		git(b, dir, "config", "gc.auto", "0")
		git(b, dir, "config", "maintenance.auto", "false")
		for _, p := range paths {
			writeBench(b, filepath.Join(dir, p), "base\n")
		}
		git(b, dir, "add", "src", "docs", "seed")
		git(b, dir, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "--no-verify", "-m", "base")
		env := []string{"LOOPX_NOW=" + now.Format(time.RFC3339), "LOOPX_AGENT_ID=seed-agent"}

		b.Run(fmt.Sprintf("leases=%d/api", leases), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := lx.Open(lx.Options{Dir: dir, Now: func() time.Time { return now }})
				if err != nil {
					b.Fatal(err)
				}
				res, err := audit.New(s).GuardCheck("seed-agent", false, paths)
				s.Close()
				if err != nil {
					b.Fatal(err)
				}
				if d := res.Data; !d.Allowed || d.Paths != len(paths) && leases > 0 {
					b.Fatalf("unexpected result %+v", d)
				}
			}
		})
		for _, p := range paths {
			writeBench(b, filepath.Join(dir, p), "staged\n")
		}
		git(b, dir, "add", "src", "docs", "seed")
		b.Run(fmt.Sprintf("leases=%d/cli-staged", leases), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := loopx(b, dir, env, "guard", "check", "--staged")
				if r.code != 0 || r.out["allowed"] != true {
					b.Fatalf("guard check: exit %d %s", r.code, r.raw)
				}
			}
		})
		round := 0 // b.Run calls each function more than once: keep contents new
		for _, mode := range []string{"commit", "no-verify"} {
			b.Run(fmt.Sprintf("leases=%d/%s", leases, mode), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					round++
					for _, p := range paths {
						writeBench(b, filepath.Join(dir, p), fmt.Sprintf("round %d\n", round))
					}
					git(b, dir, "add", "src", "docs", "seed")
					args := []string{"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "bench"}
					if mode == "no-verify" {
						args = append(args, "--no-verify")
					}
					cmd := exec.Command("git", args...)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), env...)
					b.StartTimer()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("git commit (%s, hook %s): %v\n%s", mode, hookExe, err, out)
					}
				}
			})
		}
	}
}

// installBenchHook installs the guard's pre-commit hook in dir, pointing at a
// small wrapper that runs this test binary as loopx (see TestMain).
func installBenchHook(b *testing.B, dir string) string {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	exe := filepath.Join(b.TempDir(), "loopx")
	script := "#!/bin/sh\nLOOPX_TEST_CLI=1 exec '" + strings.ReplaceAll(self, "'", `'\''`) + "' \"$@\"\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	s, err := lx.Open(lx.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := audit.New(s).GuardInstall(exe); err != nil {
		b.Fatal(err)
	}
	return exe
}

func writeBench(b *testing.B, path, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}
