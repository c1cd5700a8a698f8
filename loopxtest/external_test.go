package loopxtest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// userTest is the test file of a project that uses the kit, as the README
// shows it.
const userTest = `package usesloopx

import (
	"testing"

	"github.com/loopx-dev/loopx/loopxtest"
)

func TestMain(m *testing.M) {
	loopxtest.Main(m)
}

func TestScripts(t *testing.T) {
	loopxtest.Run(t, loopxtest.Options{}) // testdata/*.txtar
}
`

// brokenScript asserts what is not so: a suite that holds it must fail.
const brokenScript = `exec loopx init
exec loopx goal create --goal-id g
exec loopx todo add --todo-id todo_lexer --text 'Write the lexer'
exec loopx todo show --todo-id todo_lexer
jq .todo.status
stdout '^done$'
`

// TestOutsideModule builds a module outside this repository that imports
// the kit (go.mod requires loopx and replaces it with this checkout), and
// runs its go test: the README's script passes, and a broken script fails.
// Offline: GOPROXY=off, so the module cache must hold the dependencies
// (building this repository put them there); go.sum is this repository's,
// which lists every module the kit needs.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a new module (seconds): not with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rootMod := readFile(t, filepath.Join(root, "go.mod"))
	if !strings.HasPrefix(rootMod, "module github.com/loopx-dev/loopx\n") {
		t.Fatalf("%s is not loopx's module", root)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).FindString(rootMod)
	script := readFile(t, filepath.Join("testdata", "claim.txtar"))

	// The README shows the very test file and script the module runs.
	readme := readFile(t, filepath.Join(root, "README.md"))
	for name, text := range map[string]string{"the user's test file": userTest, "testdata/claim.txtar": script} {
		if !strings.Contains(readme, text) {
			t.Errorf("README.md does not show %s as the module runs it:\n%s", name, text)
		}
	}

	mod := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/usesloopx\n\n"+goLine+"\n\n"+
		"require github.com/loopx-dev/loopx v0.0.0\n\n"+
		"replace github.com/loopx-dev/loopx => "+root+"\n")
	write("go.sum", readFile(t, filepath.Join(root, "go.sum")))
	write("scripts_test.go", userTest)
	write("testdata/claim.txtar", script)

	goTest := func() (string, error) {
		cmd := exec.Command(goBin, "test", "-count=1", "-v", "./...")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(),
			"GOFLAGS=-mod=mod", // go.mod gains the kit's dependencies as indirect requirements
			"GOPROXY=off",      // no network: the module cache only
			"GOWORK=off", "GOTOOLCHAIN=local")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		t.Logf("go test in %s: %v (%s)", mod, err, time.Since(start).Round(time.Millisecond))
		return out.String(), err
	}

	// Building this repository caches the modules it compiles, but the new
	// module resolves loopx's whole module graph (-mod=mod), which also
	// names modules that only their own tests use (go-spew, under
	// filepath-securejoin). Load that graph once, with this machine's own
	// settings, so that a fresh module cache holds every go.mod it needs.
	list := exec.Command(goBin, "list", "-m", "all")
	list.Dir = root
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("go list -m all in %s (loads the module graph into the cache): %v\n%s", root, err, out)
	}

	out, err := goTest()
	if err != nil {
		t.Fatalf("the module's go test failed: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestScripts/claim", "ok  \texample.com/usesloopx"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	write("testdata/broken.txtar", brokenScript)
	out, err = goTest()
	if err == nil {
		t.Fatalf("go test passed with a broken script:\n%s", out)
	}
	for _, want := range []string{
		"--- PASS: TestScripts/claim",
		"--- FAIL: TestScripts/broken",
		"FAIL: testdata/broken.txtar:6: no match for `^done$` found in stdout",
		"FAIL\texample.com/usesloopx",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
