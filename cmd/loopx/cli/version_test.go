package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildVersion: every way a binary can come to be, and the version it
// reports.
func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		s := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}}
		if modified != "" {
			s = append(s, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return s
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	main := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Path: modulePath + "/cmd/loopx", Main: debug.Module{Path: modulePath, Version: version}, Settings: settings}
	}
	embedded := func(deps ...*debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Path: "example.com/tool", Main: debug.Module{Path: "example.com/tool", Version: "v9.9.9"},
			Deps: deps, Settings: vcs(rev, "false")}
	}
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "devel"},
		{"go install ...@v1.2.3", main("v1.2.3"), "v1.2.3"},
		{"a prerelease tag", main("v1.3.0-rc.1"), "v1.3.0-rc.1"},
		{"go install ...@commit (pseudo-version)", main("v0.0.0-20260102150405-0123456789ab"), "v0.0.0-20260102150405-0123456789ab"},
		{"go build in a checkout with changes", main("v1.2.4-0.20260102150405-0123456789ab+dirty"), "v1.2.4-0.20260102150405-0123456789ab+dirty"},
		{"(devel) without VCS information", main("(devel)"), "devel"},
		{"empty version", main(""), "devel"},
		{"(devel) at a clean commit", main("(devel)", vcs(rev, "false")...), "devel+0123456789ab"},
		{"(devel) with changes", main("(devel)", vcs(rev, "true")...), "devel+0123456789ab.dirty"},
		{"(devel) with a short revision", main("(devel)", vcs("abc123", "")...), "devel+abc123"},
		{"embedded: the version the program requires",
			embedded(&debug.Module{Path: "github.com/other/x", Version: "v2.0.0"}, &debug.Module{Path: modulePath, Version: "v1.2.3"}), "v1.2.3"},
		{"embedded: replaced by another module version",
			embedded(&debug.Module{Path: modulePath, Version: "v1.2.3", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.2.3-fork.1"}}), "v1.2.3-fork.1"},
		{"embedded: replaced by a directory",
			embedded(&debug.Module{Path: modulePath, Version: "v0.0.0", Replace: &debug.Module{Path: "../loopx"}}), "devel"},
		{"embedded: the program's own VCS says nothing of loopx",
			embedded(&debug.Module{Path: "github.com/other/x", Version: "v2.0.0"}), "devel"},
		{"a module whose path only starts like loopx's",
			&debug.BuildInfo{Main: debug.Module{Path: modulePath + "-fork", Version: "v3.0.0"}}, "devel"},
	}
	for _, c := range cases {
		if got := buildVersion(c.bi); got != c.want {
			t.Errorf("%s: buildVersion = %q, want %q", c.name, got, c.want)
		}
	}
}

// buildLoopx builds ./cmd/loopx with extra go build flags into dir and
// returns the binary.
func buildLoopx(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "loopx")
	args := append(append([]string{"build", "-o", bin}, flags...), "..")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// pseudoRev finds the commit in a pseudo-version (v0.0.0-20260102150405-0123456789ab).
var pseudoRev = regexp.MustCompile(`-(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+dirty)?$`)

// runVersion runs `bin version` in JSON and returns the version field.
func runVersion(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"version", "--format", "json"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	var res struct {
		OK          bool   `json:"ok"`
		Version     string `json:"version"`
		StoreFormat int    `json:"store_format"`
	}
	if err := json.Unmarshal(out, &res); err != nil || !res.OK || res.StoreFormat == 0 {
		t.Fatalf("%s version: %q (%v)", bin, out, err)
	}
	return res.Version
}

// TestBuiltBinaryVersion builds the real binary: with -ldflags -X the
// release version is what it reports; without, it reports what its own
// build information says (as `go version -m` reads it from the file).
func TestBuiltBinaryVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds loopx (seconds): not with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	dir := t.TempDir()

	const release = "v7.8.9-test.1"
	bin := buildLoopx(t, dir, "-ldflags", "-X github.com/loopx-dev/loopx/cmd/loopx/cli.Version="+release)
	if got := runVersion(t, bin); got != release {
		t.Errorf("built with -X ...Version=%s: loopx version says %q", release, got)
	}
	out, err := exec.Command(bin, "--version", "--format", "text").Output()
	if err != nil || !strings.HasPrefix(string(out), "loopx "+release+" (store format ") {
		t.Errorf("loopx --version --format text: %q (%v), want loopx %s (store format N)", out, err, release)
	}

	// Without -ldflags: the build information. -buildvcs=true stamps the
	// commit when the checkout is a Git repository the go command knows
	// (not a linked worktree, whose .git is a file); either way the binary
	// must report what its build information says.
	bin = buildLoopx(t, dir, "-buildvcs=true")
	js, err := exec.Command("go", "version", "-m", "-json", bin).Output()
	if err != nil {
		t.Fatalf("go version -m -json: %v", err)
	}
	var bi debug.BuildInfo
	if err := json.Unmarshal(js, &bi); err != nil {
		t.Fatalf("go version -m -json: %v\n%s", err, js)
	}
	if bi.Main.Path != modulePath {
		t.Fatalf("the binary's main module is %q", bi.Main.Path)
	}
	want := buildVersion(&bi)
	if got := runVersion(t, bin); got != want || got == "" {
		t.Errorf("built without -ldflags (main module %s %s): loopx version says %q, want %q", bi.Main.Path, bi.Main.Version, got, want)
	}
	t.Logf("main module version %q -> %q", bi.Main.Version, want)
	// A VCS-stamped pseudo-version names the commit it was built from:
	// this checkout's HEAD.
	if m := pseudoRev.FindStringSubmatch(want); m != nil {
		head, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatalf("git rev-parse HEAD: %v", err)
		}
		if !strings.HasPrefix(string(head), m[1]) {
			t.Errorf("version %q names commit %s, but HEAD is %s", want, m[1], head)
		}
	}
}
