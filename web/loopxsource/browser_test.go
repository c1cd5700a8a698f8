package loopxsource_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loopx-dev/loopx/lease"
)

// markup is a todo text that would run script if it reached the page as HTML.
const markup = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2"><b>bold</b>`

// TestBrowserBoardFollowsLeases: in a real browser, the board shows the
// todos (markup as text, nothing of it run), and a lease acquired by
// another loopx process appears on it with a running countdown, without a
// reload.
func TestBrowserBoardFollowsLeases(t *testing.T) {
	dir := newStore(t)
	loopx(t, dir, "todo", "add", "--todo-id", "todo_lexer", "--text", "Write the lexer", "--required-write-scope", "src/lexer/**")
	loopx(t, dir, "todo", "add", "--todo-id", "todo_markup", "--text", markup)
	url := startWeb(t, dir)
	ctx := newBrowser(t, 1200, 900)

	do(t, ctx, 30*time.Second,
		chromedp.Navigate(url+"/goals/g"),
		chromedp.WaitVisible(chromedp.CSS(`#todo-todo_lexer`)),
		// The page is live before the lease comes: its event stream is open.
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
	)
	if got := text(t, ctx, `#todo-todo_lexer .text`); got != "Write the lexer" {
		t.Fatalf("todo_lexer shows %q", got)
	}
	markupText := text(t, ctx, `#todo-todo_markup .text`)
	pwned := eval[int](t, ctx, `window.pwned === undefined ? 0 : window.pwned`)
	imgs := eval[int](t, ctx, `document.querySelectorAll('main img, main b').length`)
	eval[int](t, ctx, `window.__noReload = 42`)
	if markupText != markup || pwned != 0 || imgs != 0 {
		t.Fatalf("markup todo: shown %q, pwned %d, %d elements made from it", markupText, pwned, imgs)
	}
	if eval[int](t, ctx, `document.querySelectorAll('#held #todo-todo_lexer').length`) != 0 {
		t.Fatal("todo_lexer is held before anybody acquired it")
	}

	// Another process acquires the lease.
	loopx(t, dir, "task-lease", "acquire", "--todo-id", "todo_lexer", "--owner", "agent-b",
		"--idempotency-key", "exec-1", "--ttl-seconds", "300", "--write-scope", "src/lexer/**")

	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(`#held #todo-todo_lexer time.countdown`)))
	first := text(t, ctx, `#held #todo-todo_lexer time.countdown`)
	if owner := text(t, ctx, `#held #todo-todo_lexer .hold a`); owner != "agent-b" {
		t.Errorf("the lease shows owner %q", owner)
	}
	time.Sleep(2500 * time.Millisecond)
	second := text(t, ctx, `#held #todo-todo_lexer time.countdown`)
	marker := eval[int](t, ctx, `window.__noReload || 0`)
	a, b := secondsOf(t, first), secondsOf(t, second)
	if !(b < a && a-b <= 5 && a <= 300 && a > 280) {
		t.Errorf("countdown went from %q to %q", first, second)
	}
	if marker != 42 {
		t.Errorf("the page was reloaded (its script state is gone)")
	}
}

// secondsOf reads a countdown's "4m 59s left".
func secondsOf(t *testing.T, s string) int {
	t.Helper()
	m := regexp.MustCompile(`^(?:(\d+)m )?(\d+)s left$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("countdown %q", s)
	}
	min, _ := strconv.Atoi(m[1])
	sec, _ := strconv.Atoi(m[2])
	return min*60 + sec
}

// TestBrowserForgedCommitShownUnverified: following the board's link to a
// todo's history shows a state commit forged with git (the lease's owner
// edited, the message kept) as not verified, unattributed, while the
// honest ones are verified.
func TestBrowserForgedCommitShownUnverified(t *testing.T) {
	dir := newStore(t)
	loopx(t, dir, "todo", "add", "--todo-id", "todo_lexer", "--text", "Write the lexer")
	loopx(t, dir, "task-lease", "acquire", "--todo-id", "todo_lexer", "--owner", "agent-a",
		"--idempotency-key", "exec-1", "--ttl-seconds", "600")
	// The acquire's state commit is the head's parent (the head is its
	// board commit): edit its lease record and drop the board on top.
	edit := filepath.Join(t.TempDir(), "edit")
	git(t, dir, "worktree", "add", "-q", "--detach", edit, "refs/loopx/state~1")
	leaseFile := filepath.Join(edit, lease.LeasePath("g", "todo_lexer"))
	data, err := os.ReadFile(leaseFile)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(data), "owner: agent-a", "owner: agent-b", 1)
	if forged == string(data) {
		t.Fatalf("no owner line in %s", data)
	}
	if err := os.WriteFile(leaseFile, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, edit, "-c", "user.name=loopx", "-c", "user.email=loopx@loopx.invalid", "commit", "-q", "-a", "--amend", "-C", "HEAD")
	git(t, dir, "update-ref", "refs/loopx/state", git(t, edit, "rev-parse", "HEAD"))

	url := startWeb(t, dir)
	ctx := newBrowser(t, 1200, 900)
	do(t, ctx, 30*time.Second,
		chromedp.Navigate(url+"/goals/g"),
		chromedp.WaitVisible(chromedp.CSS(`#todo-todo_lexer a.tid`)),
		chromedp.Click(chromedp.CSS(`#todo-todo_lexer a.tid`)),
		chromedp.WaitVisible(chromedp.CSS(`ol.commits`)),
	)
	path := eval[string](t, ctx, `location.pathname`)
	badCount := eval[int](t, ctx, `document.querySelectorAll('.commit.integrity-invalid').length`)
	okCount := eval[int](t, ctx, `document.querySelectorAll('.commit.integrity-verified').length`)
	bad := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.commit.integrity-invalid')).map(e => e.innerText)`)
	good := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.commit.integrity-verified')).map(e => e.innerText)`)
	if path != "/goals/g/todos/todo_lexer" {
		t.Fatalf("the link led to %s", path)
	}
	if badCount != 1 || okCount != 1 {
		t.Fatalf("%d commits not verified, %d verified; want 1 and 1:\n%v\n%v", badCount, okCount, bad, good)
	}
	if !strings.Contains(bad[0], "does not verify") || !strings.Contains(bad[0], "task lease acquire") || strings.Contains(bad[0], "by agent-a") {
		t.Errorf("the forged commit shows:\n%s", bad[0])
	}
	if !strings.Contains(good[0], "✓ verified") || !strings.Contains(good[0], "todo add") {
		t.Errorf("the honest commit shows:\n%s", good[0])
	}
}
