package gitstore

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"a": true, "a/b/c.yaml": true, ".gitignore": true, ".github/x": true, "a.git": true, "x/.gitx": true,
		"..a": true, "a..": true, "...": true, "git~2": true, "é/ü": true, "a b/c d": true, "a:b": true,
		"": false, "/": false, "/a": false, "a/": false, "a//b": false, ".": false, "..": false, "a/./b": false,
		"a/../b": false, ".git": false, ".GIT": false, "a/.Git/b": false, "a\\b": false, "a\x00b": false,
		".git.": false, ".git ": false, ".git. .": false, "git~1": false, "GIT~1": false,
		".git::$INDEX_ALLOCATION": false, ".g\u200cit": false, "\ufeff.git": false,
	} {
		if got := ValidPath(p); got != want {
			t.Errorf("ValidPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzValidPath checks that every path ValidPath accepts is one git itself
// would accept in a tree, by the rules the store relies on.
func FuzzValidPath(f *testing.F) {
	for _, seed := range []string{"a", "a/b", ".git", "a/../b", "a//b", "/a", "a\\b", "git~1", ".g\u200cit", ".GIT.", "x/.git:y", "\xff/\xfe", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ok := ValidPath(p)
		err := validatePath(p)
		if ok != (err == nil) {
			t.Fatalf("ValidPath(%q)=%v but validatePath=%v", p, ok, err)
		}
		if !ok {
			return
		}
		if p == "" || p[0] == '/' || strings.ContainsAny(p, "\x00\\") {
			t.Fatalf("accepted %q", p)
		}
		comps := splitPath(p)
		if strings.Join(comps, "/") != p {
			t.Fatalf("split/join of %q", p)
		}
		for _, c := range comps {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("accepted %q: component %q", p, c)
			}
			folded := strings.ToLower(strings.TrimRight(stripHFSIgnorable(c), ". "))
			if folded == ".git" || folded == "git~1" {
				t.Fatalf("accepted %q: component %q", p, c)
			}
			if !utf8.ValidString(c) {
				continue // git accepts any bytes but NUL and '/'
			}
		}
		// Every prefix directory of a valid path is a valid directory.
		for i := range p {
			if p[i] == '/' && !ValidPath(p[:i]) {
				t.Fatalf("%q valid but its parent %q is not", p, p[:i])
			}
		}
	})
}

// TestParseRequestRef: a request ref names the store's ref it is for and
// the request's id; anything else is not a request.
func TestParseRequestRef(t *testing.T) {
	cases := []struct {
		ref, store, id string
		ok             bool
	}{
		{"refs/loopx/requests/loopx/state/0123abcd", "refs/loopx/state", "0123abcd", true},
		{"refs/loopx/requests/heads/loopx/x1", "refs/heads/loopx", "x1", true},
		{"refs/loopx/requests/state", "", "", false},        // no store ref
		{"refs/loopx/requests/loopx/state/", "", "", false}, // no id
		{"refs/loopx/state", "", "", false},
		{"refs/heads/main", "", "", false},
	}
	for _, c := range cases {
		store, id, ok := ParseRequestRef(c.ref)
		if store != c.store || id != c.id || ok != c.ok {
			t.Errorf("ParseRequestRef(%q) = %q, %q, %v; want %q, %q, %v", c.ref, store, id, ok, c.store, c.id, c.ok)
		}
	}
	s := &Store{ref: "refs/loopx/state"}
	if store, id, ok := ParseRequestRef(s.RequestRef("abc")); !ok || store != "refs/loopx/state" || id != "abc" {
		t.Errorf("RequestRef does not parse back: %q %q %v", store, id, ok)
	}
}
