package gitstore

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// wtGit runs git in dir with a fixed identity and no system or global
// configuration, failing the test on error.
func wtGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// wtRepo makes an empty (unborn) repository with an isolated configuration.
func wtRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_INDEX_FILE", "")
	os.Unsetenv("GIT_INDEX_FILE")
	dir := t.TempDir()
	wtGit(t, dir, "init", "-q")
	return dir
}

func wtWrite(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wtOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func wtStaged(t *testing.T, s *Store) []string {
	t.Helper()
	got, err := s.StagedPaths()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestStagedPaths(t *testing.T) {
	dir := wtRepo(t)
	s := wtOpen(t, dir)
	if got := wtStaged(t, s); got != nil {
		t.Fatalf("empty index: got %q", got)
	}
	// Before the first commit, everything staged counts.
	wtWrite(t, dir, "a.go", "a\n")
	wtWrite(t, dir, "s p/b.go", "b\n")
	wtWrite(t, dir, "src/c.go", "c\n")
	wtWrite(t, dir, "src/keep.go", "keep\n")
	wtGit(t, dir, "add", ".")
	if got, want := wtStaged(t, s), []string{"a.go", "s p/b.go", "src/c.go", "src/keep.go"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("unborn: got %q, want %q", got, want)
	}
	wtGit(t, dir, "commit", "-q", "-m", "base")
	if got := wtStaged(t, s); got != nil {
		t.Fatalf("clean index: got %q", got)
	}
	// Modified, deleted, renamed (both sides), added; unstaged edits and
	// untracked files do not count. Run from a subfolder with
	// diff.relative set: paths stay relative to the top.
	wtWrite(t, dir, "a.go", "a2\n")
	wtGit(t, dir, "rm", "-q", "s p/b.go")
	wtGit(t, dir, "mv", "src/c.go", "src/renamed.go")
	wtWrite(t, dir, "new/ünï.go", "n\n")
	wtGit(t, dir, "add", "a.go", "new")
	wtWrite(t, dir, "src/keep.go", "unstaged\n")
	wtWrite(t, dir, "untracked.go", "u\n")
	wtGit(t, dir, "config", "diff.relative", "true")
	sub := wtOpen(t, filepath.Join(dir, "src"))
	want := []string{"a.go", "new/ünï.go", "s p/b.go", "src/c.go", "src/renamed.go"}
	if got := wtStaged(t, sub); !reflect.DeepEqual(got, want) {
		t.Fatalf("changes: got %q, want %q", got, want)
	}

	// The index a hook is given (GIT_INDEX_FILE) is the one read.
	alt := filepath.Join(t.TempDir(), "alt-index")
	wtGit(t, dir, "read-tree", "--index-output="+alt, "HEAD")
	t.Setenv("GIT_INDEX_FILE", alt)
	if got := wtStaged(t, s); got != nil {
		t.Fatalf("alternate index: got %q, want none", got)
	}
}

func TestWorktreeOpsOnBareRepo(t *testing.T) {
	dir := wtRepo(t)
	bare := filepath.Join(t.TempDir(), "bare.git")
	wtGit(t, dir, "init", "-q", "--bare", bare)
	s := wtOpen(t, bare)
	if _, err := s.StagedPaths(); !errors.Is(err, ErrNoWorkTree) {
		t.Errorf("StagedPaths: got %v, want ErrNoWorkTree", err)
	}
	if _, _, err := s.InstallHook("pre-commit", "m", "# m\n"); !errors.Is(err, ErrNoWorkTree) {
		t.Errorf("InstallHook: got %v, want ErrNoWorkTree", err)
	}
	wtGit(t, bare, "config", "loopx.agent", "agent-bare")
	if v, err := s.ConfigValue("loopx.agent"); err != nil || v != "agent-bare" {
		t.Errorf("ConfigValue in a bare repo: %q, %v", v, err)
	}
}

func TestConfigValue(t *testing.T) {
	dir := wtRepo(t)
	s := wtOpen(t, dir)
	if v, err := s.ConfigValue("loopx.agent"); err != nil || v != "" {
		t.Fatalf("unset: got %q, %v", v, err)
	}
	wtGit(t, dir, "config", "loopx.agent", "agent-a")
	if v, err := s.ConfigValue("loopx.agent"); err != nil || v != "agent-a" {
		t.Fatalf("set: got %q, %v", v, err)
	}
	// The global file counts too (git's own precedence: local wins).
	wtGit(t, dir, "config", "--global", "loopx.other", "from-global")
	if v, err := s.ConfigValue("loopx.other"); err != nil || v != "from-global" {
		t.Fatalf("global: got %q, %v", v, err)
	}
	// Trace output on stderr does not turn "unset" into an error.
	t.Setenv("GIT_TRACE", "1")
	if v, err := s.ConfigValue("loopx.unset"); err != nil || v != "" {
		t.Fatalf("unset with GIT_TRACE: got %q, %v", v, err)
	}
	if _, err := s.ConfigValue("not a key"); err == nil {
		t.Fatal("an invalid key must be an error, not unset")
	}
}

func TestHooksDir(t *testing.T) {
	dir := wtRepo(t)
	s := wtOpen(t, dir)
	got, err := s.HooksDir()
	if err != nil || got != filepath.Join(dir, ".git", "hooks") {
		t.Fatalf("default: got %q, %v", got, err)
	}
	wtGit(t, dir, "config", "core.hooksPath", "tools/hooks")
	if got, err = s.HooksDir(); err != nil || got != filepath.Join(dir, "tools", "hooks") {
		t.Fatalf("core.hooksPath: got %q, %v", got, err)
	}
	wtGit(t, dir, "config", "--unset", "core.hooksPath")
	// A linked worktree uses the common dir's hooks.
	wtWrite(t, dir, "f", "f\n")
	wtGit(t, dir, "add", "f")
	wtGit(t, dir, "commit", "-q", "-m", "base")
	wt := filepath.Join(t.TempDir(), "wt")
	wtGit(t, dir, "worktree", "add", "-q", wt)
	if got, err = wtOpen(t, wt).HooksDir(); err != nil || got != filepath.Join(dir, ".git", "hooks") {
		t.Fatalf("linked worktree: got %q, %v", got, err)
	}
}

// runHook runs the hook as git would (from the top of the working tree) and
// returns its combined output and exit code.
func runHook(t *testing.T, dir, path string) (string, int) {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

const wtMarker = "# test-guard-marker"
const wtSnippet = wtMarker + "\necho snippet ran\n"

func TestInstallHookFresh(t *testing.T) {
	dir := wtRepo(t)
	s := wtOpen(t, dir)
	os.RemoveAll(filepath.Join(dir, ".git", "hooks")) // the folder may be missing
	changed, path, err := s.InstallHook("pre-commit", wtMarker, wtSnippet)
	if err != nil || !changed || path != filepath.Join(dir, ".git", "hooks", "pre-commit") {
		t.Fatalf("install: %v %q %v", changed, path, err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "#!/bin/sh\n"+wtSnippet {
		t.Fatalf("hook = %q", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if out, code := runHook(t, dir, path); code != 0 || out != "snippet ran\n" {
		t.Fatalf("run: %q %d", out, code)
	}
	// Idempotent.
	changed, _, err = s.InstallHook("pre-commit", wtMarker, wtSnippet)
	if err != nil || changed {
		t.Fatalf("second install: changed=%v err=%v", changed, err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Fatal("second install changed the hook")
	}
	// core.hooksPath is respected.
	wtGit(t, dir, "config", "core.hooksPath", ".githooks")
	if _, path, err = s.InstallHook("pre-commit", wtMarker, wtSnippet); err != nil || path != filepath.Join(dir, ".githooks", "pre-commit") {
		t.Fatalf("hooksPath install: %q %v", path, err)
	}
}

func TestInstallHookChains(t *testing.T) {
	cases := []struct {
		name, old    string
		exec         bool
		wantOut      string
		wantCode     int
		wantSnippets int
	}{
		{"falls off its end", "#!/bin/sh\necho old ran\n", true, "old ran\nsnippet ran\n", 0, 1},
		{"ends with exit 0", "#!/bin/sh\necho old ran\nexit 0\n", true, "old ran\nsnippet ran\n", 0, 1},
		{"ends with exec", "#!/bin/sh\nexec echo old ran\n", true, "old ran\nsnippet ran\n", 0, 1},
		{"fails: the snippet does not run", "#!/bin/sh\necho old failed\nexit 7\n", true, "old failed\n", 7, 0},
		{"not executable: git would skip it", "#!/bin/sh\necho old ran\n", false, "snippet ran\n", 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := wtRepo(t)
			s := wtOpen(t, dir)
			hooks := filepath.Join(dir, ".git", "hooks")
			os.MkdirAll(hooks, 0o755)
			path := filepath.Join(hooks, "pre-commit")
			mode := os.FileMode(0o644)
			if c.exec {
				mode = 0o755
			}
			if err := os.WriteFile(path, []byte(c.old), mode); err != nil {
				t.Fatal(err)
			}
			changed, got, err := s.InstallHook("pre-commit", wtMarker, wtSnippet)
			if err != nil || !changed || got != path {
				t.Fatalf("install: %v %q %v", changed, got, err)
			}
			kept, err := os.ReadFile(path + ChainedSuffix)
			if err != nil || string(kept) != c.old {
				t.Fatalf("old hook not kept: %q %v", kept, err)
			}
			out, code := runHook(t, dir, path)
			if out != c.wantOut || code != c.wantCode {
				t.Fatalf("run: %q exit %d, want %q exit %d", out, code, c.wantOut, c.wantCode)
			}
			if changed, _, err := s.InstallHook("pre-commit", wtMarker, wtSnippet); err != nil || changed {
				t.Fatalf("second install: changed=%v err=%v", changed, err)
			}
			if _, err := os.Stat(path + ChainedSuffix + "-2"); err == nil {
				t.Fatal("second install chained again")
			}
		})
	}
}

func TestInstallHookChainedNameTaken(t *testing.T) {
	dir := wtRepo(t)
	s := wtOpen(t, dir)
	hooks := filepath.Join(dir, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	path := filepath.Join(hooks, "pre-commit")
	os.WriteFile(path+ChainedSuffix, []byte("#!/bin/sh\necho stale\n"), 0o755)
	os.WriteFile(path, []byte("#!/bin/sh\necho current\n"), 0o755)
	if _, _, err := s.InstallHook("pre-commit", wtMarker, wtSnippet); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path + ChainedSuffix); string(b) != "#!/bin/sh\necho stale\n" {
		t.Fatalf("existing chained file overwritten: %q", b)
	}
	if b, _ := os.ReadFile(path + ChainedSuffix + "-2"); string(b) != "#!/bin/sh\necho current\n" {
		t.Fatalf("current hook not kept as -2: %q", b)
	}
	if out, code := runHook(t, dir, path); code != 0 || out != "current\nsnippet ran\n" {
		t.Fatalf("run: %q %d", out, code)
	}
}

func TestInstallHookRejectsBadInput(t *testing.T) {
	dir := wtRepo(t)
	s := wtOpen(t, dir)
	for _, c := range [][3]string{{"", "m", "m"}, {"../x", "m", "m"}, {"pre-commit", "", "x"}, {"pre-commit", "#zz", "no marker here"}} {
		if _, _, err := s.InstallHook(c[0], c[1], c[2]); err == nil {
			t.Errorf("InstallHook(%q, %q, %q) = nil error", c[0], c[1], c[2])
		}
	}
}
