package lease

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"pgregory.net/rapid"
)

// TestGlobMatch: the matcher's reading of patterns, doublestar's quirks
// included; every row is also checked against doublestar.Match itself.
func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"src/**", "src/a.go", true},
		{"src/**", "src", true}, // "/**" at the end also matches nothing
		{"src/**", "srcx", false},
		{"src/*", "src/a/b", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/.go", true},
		{"**", "a/b/c", true},
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/yb", false},
		{"a**", "a/b", false}, // not at a segment start: one '*'
		{"a**", "ab", true},
		{"**a", "x/a", false},
		{"**a", "xa", true},
		{"a/**b", "a/x/b", false},
		{"a***", "ab", true},
		{"a***", "a", false}, // the rest "**" of "a***" after "a" is not zero-length for doublestar
		{"a*", "a", true},
		{"a*{,x}", "a", false}, // a brace after the rest's first byte is not expanded at the end
		{"a*{,x}", "ab", true},
		{"a{,*}", "a", true},
		{"a/{**,x}/b", "a/q/r/b", true},
		{"a/**{/b,}", "a/q/b", true},    // "**{" is one '*': "*/b" ...
		{"a/**{/b,}", "a/q/r/b", false}, // ... which cannot cross two segments
		{"{a,b}/c", "b/c", true},
		{"{a,b/c}/d", "b/c/d", true},
		{"{a,{b,c}x}y", "cxy", true},
		{"{a,{b,c}x}y", "cy", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"[ab]c", "bc", true},
		{"[!ab]c", "cc", true},
		{"[!ab]c", "bc", false},
		{"[^a-c]x", "dx", true},
		{"[a-]x", "-x", true},
		{"[-a]x", "-x", true},
		{"[+--]x", ",x", true},
		{"a[!x]b", "a/b", true}, // a negated class matches '/' (refused in requests)
		{"é?", "éü", true},
		{"[à-ü]", "é", true},
		{"\xff", "\xfe", true}, // invalid bytes decode to U+FFFD: equal
		{"a,b", "a,b", true},   // a comma outside braces is literal
		{"a]", "a]", true},
		{"src", "src/a.go", false}, // Match, not ScopeCovers
	}
	for _, c := range cases {
		g, ok := compileGlob(c.pattern)
		if !ok {
			t.Fatalf("compileGlob(%q) failed", c.pattern)
		}
		if got := g.Match(c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
		if ds, err := doublestar.Match(c.pattern, c.path); err != nil || ds != c.want {
			t.Errorf("doublestar.Match(%q, %q) = %v, %v: the table is wrong", c.pattern, c.path, ds, err)
		}
	}
}

// TestGlobCompileRefuses: what doublestar refuses, and escapes, do not
// compile.
func TestGlobCompileRefuses(t *testing.T) {
	for _, p := range []string{"a[", "a[]", "a[!]", "a[^]x", "{a", "a}", "{a,{b}", "a\\*", "[a-"} {
		if _, ok := compileGlob(p); ok {
			t.Errorf("compileGlob(%q) succeeded", p)
		}
	}
	for _, p := range []string{"{}", "{,}", "[]]", "[!]]", "a[]]b"} {
		_, ok := compileGlob(p)
		if want := doublestar.ValidatePattern(p); ok != want {
			t.Errorf("compileGlob(%q) = %v, doublestar.ValidatePattern = %v", p, ok, want)
		}
	}
}

// globAlphabet are the pieces random patterns are made of: everything
// doublestar gives a meaning to except escapes, in small doses.
var globAlphabet = []string{"a", "b", "/", "*", "**", "?", "{", "}", ",", "[a]", "[!a]", "[a-b]",
	"[/]", "[/a]", "[+-0]", "[!/a]", "[^/]", "-", "]", "é", "\xff", ".", "[é-ü]", "[!]a]", "**/", "/**"}

// pathAlphabet are the pieces random paths are made of.
var pathAlphabet = []string{"a", "b", "/", "-", "]", "é", "\xff", "\xfe", "*", "{", ",", "+", ".", "ñ", "ab"}

func drawGlob(t *rapid.T, label string) string {
	n := rapid.IntRange(1, 9).Draw(t, label+"_len")
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(rapid.SampledFrom(globAlphabet).Draw(t, label))
	}
	return b.String()
}

func drawPath(t *rapid.T, label string) string {
	n := rapid.IntRange(0, 7).Draw(t, label+"_len")
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(rapid.SampledFrom(pathAlphabet).Draw(t, label))
	}
	return b.String()
}

// checkAgainstDoublestar is the property both the random test and the
// fuzz test check: for a scope loopx accepts the matcher answers exactly
// as doublestar.Match, on any path (repository paths or not); for any
// pattern that compiles it finds every match doublestar finds (doublestar
// only ever reports a match it has found).
func checkAgainstDoublestar(t interface{ Fatalf(string, ...any) }, pattern, path string) {
	g, ok := compileGlob(pattern)
	if valid := doublestar.ValidatePattern(pattern) && !strings.Contains(pattern, "\\"); ok != valid {
		t.Fatalf("compileGlob(%q) = %v, doublestar.ValidatePattern and no escape = %v", pattern, ok, valid)
	}
	if !ok {
		return
	}
	want, err := doublestar.Match(pattern, path)
	if err != nil {
		// doublestar gives up on a few valid patterns (a negated class
		// holding a brace); no scope loopx accepts is one.
		if ValidScope(pattern) {
			t.Fatalf("doublestar.Match(%q, %q): %v", pattern, path, err)
		}
		return
	}
	got := g.Match(path)
	if ValidScope(pattern) && got != want {
		t.Fatalf("scope %q, path %q: matcher %v, doublestar %v", pattern, path, got, want)
	}
	if want && !got {
		t.Fatalf("pattern %q, path %q: doublestar matches, the matcher does not", pattern, path)
	}
	if ValidScope(pattern) && utf8.ValidString(path) {
		below, _ := doublestar.Match(pattern+"/**", path)
		if cov := ScopeCovers(pattern, path); path != "" && cov != (want || below) {
			t.Fatalf("ScopeCovers(%q, %q) = %v, doublestar %v", pattern, path, cov, want || below)
		}
	}
}

// TestGlobMatchesDoublestar compares the matcher with doublestar.Match on
// random small patterns (where doublestar is fast) and paths.
func TestGlobMatchesDoublestar(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawGlob(t, "pattern")
		for i := 0; i < 20; i++ {
			checkAgainstDoublestar(t, p, drawPath(t, "path"))
		}
	})
}

// TestGlobMatchesDoublestarOnScopes draws only patterns loopx accepts
// (most random patterns are refused), so that the exact agreement is
// tested on many of them.
func TestGlobMatchesDoublestarOnScopes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawGlob(t, "pattern")
		if !ValidScope(p) {
			t.Skip("not a scope")
		}
		for i := 0; i < 20; i++ {
			checkAgainstDoublestar(t, p, drawPath(t, "path"))
		}
	})
}

// FuzzGlob: the same property on what the fuzzer finds, for patterns small
// enough that doublestar's own search stays fast.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"src/**", "src/a.go"}, {"{a,b}/**/*.go", "b/x/y.go"}, {"a[!x]b", "a/b"},
		{"**{/b,}", "q/b"}, {"a*{,x}", "a"}, {"[à-ü]?", "éa"}, {"{a,{b,c}x}y", "cxy"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 24 || len(path) > 32 || strings.Count(pattern, "{") > 4 || strings.Count(pattern, "*") > 6 {
			return
		}
		checkAgainstDoublestar(t, pattern, path)
	})
}

// TestValidScopeShape: the shape rules a scope in a request must meet
// beyond its syntax (glob.go).
func TestValidScopeShape(t *testing.T) {
	hostile := "**/" + strings.Repeat("{?,}", 30) + "q"
	cases := []struct {
		scope string
		ok    bool
	}{
		{"{a,b}/{c,d}/{e,f}/{g,h}/{i,j}/{k,l}", true}, // 64 alternatives
		{"{a,b}/{c,d}/{e,f}/{g,h}/{i,j}/{k,l}/{m,n}", false},
		{"{a,b,c,d}{a,b,c,d}{a,b,c,d}", true},
		{"{{a,b,c,d}{a,b,c,d}{a,b,c,d},e}", false}, // 65
		{hostile, false},
		{strings.Repeat("{a,aa}", 42), false},
		{"src/[!_]*.go", false}, // a negated class matches '/'
		{"src/[!/_]*.go", true},
		{"src/[^/_]*.go", true},
		{"src/[+-0]", false}, // the range holds '/'
		{"src/[a/]", false},
		{"src/[!x}]", false}, // doublestar fails on some paths
		{"src/[x{]", false},
		{"src/[[]", false},
		{"src/[a-z]*", true},
		{"{a,}/b", false}, // "/b"
		{"a/{b,}", false}, // "a/"
		{"a/{b,}/c", false},
		{"a{/b,}", true},
		{"{a/,b}c", true},
		{"{,}", false},
		{"{a/**,b}", true},
		{"src/**", true},
		{"x{*/,y}", false},
	}
	for _, c := range cases {
		if got := ValidScope(c.scope); got != c.ok {
			t.Errorf("ValidScope(%q) = %v, want %v (%s)", c.scope, got, c.ok, scopeProblem(c.scope))
		}
		// Records keep every scope that has the syntax.
		if !validRecordScope(c.scope) {
			t.Errorf("validRecordScope(%q) = false", c.scope)
		}
	}
}

// The hostile scopes of the bounded-input rule: each is decided in
// microseconds by the matcher (doublestar takes minutes, or forever).
var (
	hostileOptional = "**/" + strings.Repeat("{?,}", 30) + "q"
	hostileAlts     = strings.Repeat("{a,aa}", 42)
	longPath        = strings.Repeat("abcdefgh/", 100) + "x"
	altsPath        = strings.Repeat("a", 60) + "b"
)

// BenchmarkGlobHostile: every matcher on the hostile scopes. Each must
// stay far below 10 ms per operation (it is microseconds).
func BenchmarkGlobHostile(b *testing.B) {
	cases := []struct{ name, scope, path string }{
		{"optional-30", hostileOptional, longPath},
		{"alternatives-42", hostileAlts, altsPath},
	}
	for _, c := range cases {
		b.Run("covers/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if ScopeCovers(c.scope, c.path) {
					b.Fatal("covers")
				}
			}
		})
		b.Run("compile-and-match/"+c.name, func(b *testing.B) {
			for b.Loop() {
				g, ok := compileGlob(c.scope)
				if !ok || g.Match(c.path) {
					b.Fatal("match")
				}
			}
		})
		b.Run("validate/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if ValidScope(c.scope) {
					b.Fatal("valid")
				}
			}
		})
		b.Run("overlap/"+c.name, func(b *testing.B) {
			for b.Loop() {
				ScopesOverlap(c.scope, "src/"+c.scope)
			}
		})
	}
}

// slowOverlapPair is a pair of scopes within the request limits built to
// make the overlap analysis slow: 64 alternatives each, 256 bytes, segments
// that never meet.
func slowOverlapPair() (string, string) {
	build := func(last string) string {
		var b strings.Builder
		for i := 0; i < 6; i++ {
			b.WriteString("{*?*?*?*?*?*?*?*?,*?*?*?*?*?*?*?*?c}/")
		}
		for b.Len()+3 < MaxScopeBytes {
			b.WriteString("?/")
		}
		return b.String() + last
	}
	return build("x"), build("y")
}

// BenchmarkScopesOverlapHostile: the overlap question on the slowest
// scopes a request may name: one pair, and two sets of 64 such scopes (the
// question acquire and ready ask about two leases). Bounded by
// overlapSteps: a few milliseconds.
func BenchmarkScopesOverlapHostile(b *testing.B) {
	x, y := slowOverlapPair()
	if !ValidScope(x) || !ValidScope(y) {
		b.Fatal("the slow pair is not made of valid scopes")
	}
	b.Run("pair", func(b *testing.B) {
		for b.Loop() {
			ScopesOverlap(x, y)
		}
	})
	var xs, ys []string
	for i := 0; i < MaxScopes; i++ {
		xs = append(xs, strings.Replace(x, "c}", string(rune('A'+i%26))+"}", 1))
		ys = append(ys, strings.Replace(y, "c}", string(rune('a'+i%26))+"}", 1))
	}
	b.Run("sets-64x64", func(b *testing.B) {
		for b.Loop() {
			anyOverlap(xs, ys)
		}
	})
}
