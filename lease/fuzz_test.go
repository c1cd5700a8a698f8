package lease

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecodeTodo: any bytes either fail to decode, or decode to a valid todo
// whose encoding decodes back to the same bytes (the codec round-trips).
func FuzzDecodeTodo(f *testing.F) {
	f.Add([]byte("todo_id: todo_abc\ntext: x\nstatus: open\npriority: P2\ncreated_by: a\ncreated_at: 2026-01-01T00:00:00Z\nupdated_by: a\nupdated_at: 2026-01-01T00:00:00Z\n"))
	f.Add([]byte("{{{"))
	f.Add([]byte("todo_id: todo_abc\nnope: 1\n"))
	f.Add([]byte("---\na: 1\n---\nb: 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var td Todo
		if err := Decode(data, &td); err != nil {
			return
		}
		if err := td.Validate(); err != nil {
			t.Fatalf("decoded an invalid todo: %v", err)
		}
		enc := Encode(&td)
		var again Todo
		if err := Decode(enc, &again); err != nil {
			t.Fatalf("re-decode of %q: %v", enc, err)
		}
		if !bytes.Equal(Encode(&again), enc) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, Encode(&again))
		}
	})
}

// FuzzIDs: a valid id can never escape its folder in the tree layout.
func FuzzIDs(f *testing.F) {
	for _, s := range []string{"agent-a", "../x", "todo_abc", "a/b", ".git", "a..b", "todo_../x", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, ok := range map[string]bool{"goal": ValidGoalID(s), "todo": ValidTodoID(s), "key": ValidIdempotencyKey(s)} {
			if !ok {
				continue
			}
			if name != "key" && (strings.ContainsAny(s, "/\\\x00") || strings.HasPrefix(s, ".")) {
				t.Fatalf("%s id %q would escape its folder", name, s)
			}
		}
		if ValidGoalID(s) && (CheckGoalID(s) != nil) {
			t.Fatalf("ValidGoalID and CheckGoalID disagree on %q", s)
		}
		if ValidTodoID(s) {
			if p := TodoPath("g", s); !strings.HasPrefix(p, "goals/g/todos/") || strings.Count(p, "/") != 4 {
				t.Fatalf("todo %q maps to %q", s, p)
			}
		}
	})
}

// FuzzScope: a valid scope is relative and never climbs out of the worktree.
func FuzzScope(f *testing.F) {
	for _, s := range []string{"src/**", "../x", "/abs", "docs/a*.md", "a/./b", "[", "a//b", "**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidScope(s) {
			return
		}
		if strings.HasPrefix(s, "/") || strings.Contains("/"+s+"/", "/../") || strings.Contains(s, "\x00") {
			t.Fatalf("scope %q accepted", s)
		}
	})
}
