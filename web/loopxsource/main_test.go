package loopxsource_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
)

// The test binary doubles as the loopx binary (LOOPX_TEST_CLI=1), so these
// tests run real `loopx web` and `loopx task-lease ...` processes.
func TestMain(m *testing.M) {
	if os.Getenv("LOOPX_TEST_CLI") == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// loopx runs one loopx process in dir and returns its stdout; it fails the
// test unless the process exits 0.
func loopx(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return loopxEnv(t, dir, nil, args...)
}

// loopxEnv is loopx with more environment (e.g. LOOPX_NOW).
func loopxEnv(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LOOPX_TEST_CLI=1", "LOOPX_FORMAT=json"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("loopx %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newStore makes a repository with a loopx store, goal g and agents
// agent-a and agent-b.
func newStore(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	loopx(t, dir, "init")
	loopx(t, dir, "goal", "create", "--goal-id", "g")
	loopx(t, dir, "agent", "register", "--agent-id", "agent-a")
	loopx(t, dir, "agent", "register", "--agent-id", "agent-b")
	return dir
}

// startWeb starts `loopx web` on a free loopback port in dir and returns
// the URL it printed; the process is stopped (SIGTERM) when the test ends.
func startWeb(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return startWebEnv(t, dir, nil, args...)
}

// startWebEnv is startWeb with more environment.
func startWebEnv(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"web"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LOOPX_TEST_CLI=1", "LOOPX_FORMAT=json"), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("loopx web did not stop on SIGTERM")
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("loopx web printed no URL: %v\n%s", err, stderr.String())
	}
	var started struct {
		OK  bool   `json:"ok"`
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(line), &started); err != nil || !started.OK || !strings.HasPrefix(started.URL, "http://127.0.0.1:") {
		t.Fatalf("loopx web printed %q (%v)", line, err)
	}
	return strings.TrimSuffix(started.URL, "/")
}

// chromium finds the browser the tests drive: Debian's chromium (CI
// installs it), or another Chromium or Chrome on the PATH.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and returns a
// tab's context; it skips the test when no Chromium is installed. The
// flags keep it from reaching out to the network on its own (this
// machine's network refuses, and the browser would stall on it).
func newBrowser(t testing.TB, width, height int) context.Context {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary on the PATH (apt-get install chromium; CI installs it)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	return ctx
}

// do runs chromedp steps with a deadline.
func do(t testing.TB, ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// value runs one chromedp action that returns a value.
func value[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// text is the text of the first element css selects.
func text(t testing.TB, ctx context.Context, css string) string {
	t.Helper()
	return value(t, ctx, chromedp.Text(chromedp.CSS(css)))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	return value(t, ctx, chromedp.Evaluate[T](expr))
}
