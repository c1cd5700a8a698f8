package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"red \x1b[31mtext\x1b[0m", "red [31mtext[0m"},
		{"title \x1b]0;pwned\x07 bell", "title ]0;pwned bell"},
		{"carriage\r return", "carriage return"},
		{"two\nlines", "two\nlines"},
		{"tab\there", "tab here"},
		{"nul\x00 del\x7f", "nul del"},
		{"c1 \u009b2J csi", "c1 2J csi"},
		{"bad utf8 \xff\xfe", "bad utf8 \uFFFD\uFFFD"},
		{"bidi \u202egnp.exe", "bidi \uFFFDgnp.exe"},
		{"line\u2028separator", "line\nseparator"},
		{"kept \uFFFD and é and 日本", "kept \uFFFD and é and 日本"},
	} {
		if got := clean(c.in); got != c.want {
			t.Errorf("clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\nb\r\n  c\x1b"); got != "a b c" {
		t.Errorf("oneLine = %q", got)
	}
	long := strings.Repeat("é", 100)
	got := oneLine(long)
	if n := len([]rune(got)); n != 72 || !strings.HasSuffix(got, "...") {
		t.Errorf("oneLine(100 runes) = %d runes %q, want 72 ending in ...", n, got)
	}
}

func TestSafeWriterDropsControls(t *testing.T) {
	var b bytes.Buffer
	w := safeWriter{&b}
	if n, err := w.Write([]byte("ok\x1b[2J\x07\n")); err != nil || n != 8 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b.String() != "ok[2J\n" {
		t.Errorf("wrote %q", b.String())
	}
}

func TestRelativeTimes(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "now"},
		{400 * time.Millisecond, "now"},
		{45 * time.Second, "in 45s"},
		{-45 * time.Second, "45s ago"},
		{4 * time.Minute, "in 4m"},
		{-3 * time.Minute, "3m ago"},
		{4*time.Minute + 30*time.Second, "in 4m30s"},
		{2*time.Hour + 5*time.Minute, "in 2h5m"},
		{3 * time.Hour, "in 3h"},
		{-(3*24*time.Hour + 4*time.Hour), "3d4h ago"},
		{48 * time.Hour, "in 2d"},
	} {
		if got := rel(now.Add(c.d), now); got != c.want {
			t.Errorf("rel(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestTextHasNoControlCharacters renders every kind of result with hostile
// user text and checks that no control character but the newline is left.
func TestTextHasNoControlCharacters(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LOOPX_NOW", "2026-01-01T00:00:00Z")
	t.Setenv("LOOPX_FORMAT", "text")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	hostile := "x\x1b]0;pwned\x07\x1b[2J\r\x9b31m\x7f\u202e end"
	steps := [][]string{
		{"init"},
		{"goal", "create", "--goal-id", "g", "--title", hostile},
		{"agent", "register", "--agent-id", "agent-a"},
		{"todo", "add", "--todo-id", "todo_bad", "--text", hostile},
		{"todo", "update", "--todo-id", "todo_bad", "--agent-id", "agent-a", "--note", hostile},
		{"todo", "show", "--todo-id", "todo_bad"},
		{"todo", "list"},
		{"todo", "ready", "--agent-id", "agent-a"},
		{"goal", "show"},
		{"goal", "list"},
		{"agent", "list"},
		{"log"},
		{"todo", "complete", "--todo-id", "todo_bad", "--agent-id", "agent-a", "--evidence", hostile},
		{"todo", "show", "--todo-id", "todo_bad"},
		{"todo", "supersede", "--todo-id", "todo_bad", "--agent-id", "agent-a", "--reason", hostile},
		{"todo", "list", "--status", hostile},
		{"todo", "frob" + hostile},
	}
	for _, step := range steps {
		var out, errOut bytes.Buffer
		Run(append([]string{"--repo", dir}, step...), &out, &errOut)
		for _, s := range []string{out.String(), errOut.String()} {
			for _, r := range s {
				if r != '\n' && (unicode.IsControl(r) || isBidiControl(r)) {
					t.Errorf("loopx %s: output keeps %U:\n%q", strings.Join(step, " "), r, s)
					break
				}
			}
		}
	}
}
