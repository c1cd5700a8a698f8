package loopxsource_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScreenshots takes the screenshots of docs/ (each page of `loopx web`
// on a demo store, and the board in a narrow window) when
// LOOPX_WEB_SCREENSHOTS=1:
//
//	LOOPX_WEB_SCREENSHOTS=1 go test -run TestScreenshots ./web/loopxsource/
//
// The demo store's story is dated from a fixed time and the server runs at
// a fixed clock (LOOPX_NOW), so the pictures change only when the pages
// do. Without the variable it builds the same store and checks the pages
// render, without writing anything.
func TestScreenshots(t *testing.T) {
	out := ""
	if os.Getenv("LOOPX_WEB_SCREENSHOTS") == "1" {
		out = filepath.Join("..", "..", "docs")
	} else if testing.Short() {
		t.Skip("builds a demo store and drives a browser")
	}
	dir, now := demoStore(t)
	url := startWebEnv(t, dir, []string{"LOOPX_NOW=" + now.Format(time.RFC3339)})
	shots := []struct {
		file, path, wait string
		width, height    int
	}{
		{"web-board.png", "/goals/parser", "#todo-todo_lexer", 1280, 1000},
		{"web-timeline.png", "/goals/parser/timeline", "svg.tl", 1280, 720},
		{"web-history.png", "/goals/parser/todos/todo_lexer", "ol.commits", 1100, 1000},
		{"web-agent.png", "/goals/parser/agents/agent-b", "#h-holds", 1100, 760},
		{"web-narrow.png", "/goals/parser", "#todo-todo_lexer", 390, 844},
	}
	for _, s := range shots {
		ctx := newBrowser(t, s.width, s.height)
		do(t, ctx, 30*time.Second,
			chromedp.EmulateViewport(int64(s.width), int64(s.height)),
			chromedp.Navigate(url+s.path),
			chromedp.WaitVisible(chromedp.CSS(s.wait)),
			chromedp.WaitVisible(chromedp.CSS("#live.on")),
		)
		png := value(t, ctx, chromedp.CaptureScreenshot())
		if len(png) < 1000 {
			t.Fatalf("%s: a %d-byte screenshot", s.file, len(png))
		}
		if out != "" {
			if err := os.WriteFile(filepath.Join(out, s.file), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// demoStore tells a short story on goal parser, each step at its own
// minute from a fixed start, and returns the store and the time to show it
// at: leases in force, one transferred, one taken over after it lapsed and
// one lapsed since, a claim, a todo blocked by a dependency and one by a
// scope, a done todo, a todo whose text is markup, commits signed by
// agent-a's key, and a last commit whose message was edited by hand (it
// does not verify).
func demoStore(t *testing.T) (string, time.Time) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	key := filepath.Join(t.TempDir(), "agent-a")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "agent-a", "-f", key).CombinedOutput(); err != nil {
		t.Skipf("ssh-keygen: %v %s", err, out)
	}
	at := func(min int, args ...string) {
		t.Helper()
		env := []string{"LOOPX_NOW=" + t0.Add(time.Duration(min)*time.Minute).Format(time.RFC3339), "LOOPX_SIGNING_KEY=" + key,
			"SSH_AUTH_SOCK="}
		loopxEnv(t, dir, env, args...)
	}
	at(0, "init")
	at(0, "goal", "create", "--goal-id", "parser", "--title", "Ship the parser")
	at(0, "agent", "register", "--agent-id", "agent-a", "--signing-key", key+".pub")
	at(0, "agent", "register", "--agent-id", "agent-b")
	at(0, "agent", "register", "--agent-id", "agent-c")
	for _, td := range [][]string{
		{"todo_lexer", "Write the lexer", "P1", "--required-write-scope", "src/lexer/**"},
		{"todo_parser", "Parse expressions", "P1", "--depends-on", "todo_lexer", "--required-write-scope", "src/parser/**"},
		{"todo_ast", "Define the AST nodes", "P2", "--required-write-scope", "src/ast/**"},
		{"todo_errors", "Error messages with line and column", "P2", "--required-write-scope", "src/**"},
		{"todo_docs", "Document the grammar", "P3", "--required-write-scope", "docs/**"},
		{"todo_bench", "Benchmark the lexer", "P3"},
		{"todo_tests_ci", "Run the tests in CI", "P2"},
		{"todo_fuzz", "Fuzz the parser", "P3", "--depends-on", "todo_parser"},
		{"todo_escape", `Show <b>user text</b> as text: <script>alert(1)</script>`, "P4"},
	} {
		at(1, append([]string{"todo", "add", "--todo-id", td[0], "--text", td[1], "--priority", td[2]}, td[3:]...)...)
	}
	at(5, "task-lease", "acquire", "--todo-id", "todo_ast", "--owner", "agent-a", "--idempotency-key", "ast-1", "--ttl-seconds", "1800")
	at(10, "task-lease", "acquire", "--todo-id", "todo_bench", "--owner", "agent-c", "--idempotency-key", "bench-1", "--ttl-seconds", "600")
	at(20, "task-lease", "transfer", "--todo-id", "todo_ast", "--owner", "agent-a", "--idempotency-key", "ast-1", "--expected-version", "1",
		"--new-owner", "agent-b", "--new-idempotency-key", "ast-2", "--ttl-seconds", "3600")
	at(30, "task-lease", "acquire", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "lexer-1", "--ttl-seconds", "7200")
	at(40, "todo", "claim", "--todo-id", "todo_docs", "--agent-id", "agent-c", "--claim-ttl-minutes", "240")
	at(45, "todo", "complete", "--todo-id", "todo_tests_ci", "--agent-id", "agent-b", "--evidence", "PR #12 merged")
	at(60, "task-lease", "acquire", "--todo-id", "todo_bench", "--owner", "agent-b", "--idempotency-key", "bench-2", "--ttl-seconds", "1800")
	at(70, "task-lease", "renew", "--todo-id", "todo_ast", "--owner", "agent-b", "--idempotency-key", "ast-2", "--expected-version", "2", "--ttl-seconds", "3600")
	at(100, "task-lease", "renew", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "lexer-1", "--expected-version", "1", "--ttl-seconds", "7200")
	// The renew (the head: it changes no board) is edited by hand: its
	// message now names another actor. Its tree is untouched.
	edit := filepath.Join(t.TempDir(), "edit")
	git(t, dir, "worktree", "add", "-q", "--detach", edit, "refs/loopx/state")
	msg := git(t, edit, "log", "-1", "--format=%B")
	forged := strings.ReplaceAll(msg, "agent-a", "agent-c")
	if forged == msg {
		t.Fatalf("no actor in %q", msg)
	}
	cmd := exec.Command("git", "-c", "user.name=loopx", "-c", "user.email=loopx@loopx.invalid", "commit", "-q", "--amend", "--allow-empty", "-F", "-")
	cmd.Dir = edit
	cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE="+t0.Add(100*time.Minute).Format(time.RFC3339))
	cmd.Stdin = strings.NewReader(forged)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("amend: %v %s", err, out)
	}
	git(t, dir, "update-ref", "refs/loopx/state", git(t, edit, "rev-parse", "HEAD"))
	return dir, t0.Add(115 * time.Minute)
}
