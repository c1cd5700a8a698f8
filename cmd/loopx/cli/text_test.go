package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/loopx-dev/loopx/lease"
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

func TestSize(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{9728, "9.5 KiB"},
		{102400, "100 KiB"},
		{2 * 1024 * 1024, "2.0 MiB"},
		{1992294, "1.9 MiB"},
		{5 << 30, "5.0 GiB"},
		{3 << 40, "3.0 TiB"},
		{5000 << 40, "5000 TiB"},
	} {
		if got := size(c.n); got != c.want {
			t.Errorf("size(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// A detail is left out of an error's text when its message states it: as
// a word of its own, a number with no digit after it, a revision by its
// first 12 digits.
func TestMentioned(t *testing.T) {
	const rev = "11cd654af742688d6434919d98769c3f45412e0a"
	for _, c := range []struct {
		msg, s string
		want   bool
	}{
		{"todo todo_lexer is claimed by agent-a", "agent-a", true},
		{"todo todo_lexer is claimed by agent-ab", "agent-a", false},
		{"claimed by agent-a.", "agent-a", true},
		{"held by agent-a's lease", "agent-a", true},
		{"lease of g/todo_lexer", "g", true},
		{"lease of gx/todo_lexer", "g", false},
		{"expected version 3, current version is 2", "3", true},
		{"expected version 3, current version is 2", "2", true},
		{"at most 30s allowed", "30", true},
		{"at most 300s allowed", "30", false},
		{"version 3.5", "3", false},
		{"commit a3b4c5: refused", "3", false},
		{"dated 2026-01-01T02:30:00Z", "2026-01-01T02:30:00Z", true},
		{"unknown field \"txt\" in the request", "txt", true},
		{"commit 11cd654af742: refused", rev, true},
		{"the head moved", rev, false},
		{"the head moved", "", true},
	} {
		if c.s == "" {
			continue
		}
		if got := mentioned(c.msg, c.s); got != c.want {
			t.Errorf("mentioned(%q, %q) = %v, want %v", c.msg, c.s, got, c.want)
		}
	}
}

// An error's details in text: what the message says is left out, the rest
// is shown by its JSON name; a list all of whose values are said is left
// out, a revision is shortened.
func TestErrorTextDetails(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     *lease.Error
		want    []string
		without []string
	}{
		{"all said", lease.Errorf(lease.CodeClaimConflict, "todo todo_x is claimed by agent-a").With("claimed_by", "agent-a"),
			[]string{"loopx: claim_conflict: todo todo_x is claimed by agent-a\n"}, []string{"claimed"}},
		{"one not said", lease.Errorf(lease.CodeVersionMismatch, "expected version 3, current version is 2").
			With("expected_version", int64(3)).With("current_version", int64(2)).With("provider", "git").With("current_cursor", 7).
			With("revision", "11cd654af742688d6434919d98769c3f45412e0a"),
			[]string{"  revision: 11cd654af742\n"}, []string{"expected", "current", "provider", "cursor"}},
		{"a list", lease.Errorf(lease.CodeAuthorityRequired, "needs an admin (admins: root)").With("admins", []string{"root", "ops"}),
			[]string{"  admins: root, ops\n"}, nil},
		{"a list said", lease.Errorf(lease.CodeAuthorityRequired, "needs an admin (admins: root)").With("admins", []string{"root"}),
			nil, []string{"admins:"}},
		{"usage", lease.Errorf(lease.CodeUsage, "unknown flag --x").With("flag", "x"), nil, []string{"flag"}},
		{"lines", lease.Errorf(lease.CodeWriteScopeConflict, "range a..b: 2 commit(s) refused:\ncommit 1: x\ncommit 2: y"),
			[]string{"refused:\n  commit 1: x\n  commit 2: y\n"}, nil},
	} {
		var b bytes.Buffer
		errorText(&b, c.err)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: text\n%s\nlacks %q", c.name, b.String(), w)
			}
		}
		for _, w := range c.without {
			if strings.Contains(strings.SplitN(b.String(), "\n", 2)[1], w) {
				t.Errorf("%s: text\n%s\nrepeats %q under the message", c.name, b.String(), w)
			}
		}
	}
}

// A lease on one line says its state once: released (not also expired),
// expired (not also active), active until when.
func TestLeaseLine(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 20, 0, 0, time.UTC)
	l := func(status string, effective bool, expires, released string) map[string]any {
		m := map[string]any{"status": status, "effective": effective, "owner": "agent-a", "idempotency_key": "k",
			"version": "2", "epoch": "1", "expires_at": expires}
		if released != "" {
			m["released_at"] = released
		}
		return m
	}
	for _, c := range []struct {
		lease map[string]any
		want  string
	}{
		{l("active", true, "2026-01-01T00:30:00Z", ""), "active, owner agent-a, idempotency key k, version 2, epoch 1, expires in 10m"},
		{l("active", false, "2026-01-01T00:16:00Z", ""), "expired 4m ago, owner agent-a, idempotency key k, version 2, epoch 1"},
		{l("active", false, "2026-01-01T00:30:00Z", ""), "active, not effective, owner agent-a, idempotency key k, version 2, epoch 1, expires in 10m"},
		{l("released", false, "2026-01-01T00:10:00Z", "2026-01-01T00:12:00Z"), "released 8m ago, owner agent-a, idempotency key k, version 2, epoch 1"},
		{l("released", false, "2026-01-01T00:30:00Z", "2026-01-01T00:20:00Z"), "released, owner agent-a, idempotency key k, version 2, epoch 1"},
	} {
		if got := leaseLine(c.lease, now); got != c.want {
			t.Errorf("leaseLine(%v) =\n  %q\nwant\n  %q", c.lease, got, c.want)
		}
	}
}

// Who holds a todo's claim: an open todo's claim with its scope agent and
// expiry; an expired one is nobody's; a closed todo's without an expiry.
func TestClaimText(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		todo map[string]any
		want string
	}{
		{map[string]any{"status": "open"}, "nobody"},
		{map[string]any{"status": "open", "claim_expired": true}, "nobody (an earlier claim expired)"},
		{map[string]any{"status": "open", "claimed_by": "agent-a"}, "agent-a"},
		{map[string]any{"status": "open", "claimed_by": "agent-a", "claim_expires_at": "2026-01-01T00:30:00Z"}, "agent-a (expires in 30m)"},
		{map[string]any{"status": "open", "claimed_by": "lead", "claim_scope_agent_id": "worker", "claim_expires_at": "2026-01-01T00:30:00Z"},
			"lead (scope agent worker, expires in 30m)"},
		{map[string]any{"status": "done", "claimed_by": "agent-a", "claim_expires_at": "2026-01-01T00:30:00Z"}, "agent-a"},
	} {
		if got := claimText(c.todo, now); got != c.want {
			t.Errorf("claimText(%v) = %q, want %q", c.todo, got, c.want)
		}
	}
}
