package lease

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// idGrammar pairs a hand-written validator with the regular expression it
// replaces.
type idGrammar struct {
	name     string
	re       *regexp.Regexp
	valid    func(string) bool
	prefix   string // fixed prefix of every match
	min, max int    // length bounds of a match
	alphabet string // every byte some match may contain
}

func idGrammars() []idGrammar {
	const lower, digits, upper = "abcdefghijklmnopqrstuvwxyz", "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	return []idGrammar{
		{"goal", regexp.MustCompile(goalIDPattern), ValidGoalID, "", 1, 80, lower + digits + "_.:@-"},
		{"agent", regexp.MustCompile(agentIDPattern), ValidAgentID, "", 1, 80, lower + digits + "_.:@-"},
		{"todo", regexp.MustCompile(todoIDPattern), ValidTodoID, "todo_", 8, 69, lower + digits + "_-"},
		{"key", regexp.MustCompile(keyPattern), ValidIdempotencyKey, "", 1, 128, lower + digits + upper + "_.:@/-"},
	}
}

// idCandidates generates strings around the grammar's edges: every length
// near the bounds, every byte value at the first, second, middle and last
// position of otherwise valid strings, the prefix broken byte by byte,
// trailing and leading newlines and spaces, non-ASCII and invalid UTF-8,
// and random strings mostly over the grammar's alphabet.
func idCandidates(g idGrammar, rng *rand.Rand) []string {
	var out []string
	fill := func(n int) string { // a valid-looking string of length n
		var b strings.Builder
		b.WriteString(g.prefix)
		for b.Len() < n {
			if b.Len() == 0 {
				b.WriteByte('a')
			} else {
				b.WriteByte(g.alphabet[(b.Len()*7)%len(g.alphabet)])
			}
		}
		return b.String()[:n]
	}
	for n := 0; n <= g.max+3; n++ {
		out = append(out, fill(n))
	}
	for _, n := range []int{1, 2, len(g.prefix) + 1, g.min - 1, g.min, g.min + 1, g.max / 2, g.max - 1, g.max, g.max + 1} {
		if n <= 0 {
			continue
		}
		base := fill(n)
		for _, pos := range []int{0, 1, len(g.prefix), n / 2, n - 1} {
			if pos < 0 || pos >= n {
				continue
			}
			for c := 0; c < 256; c++ {
				b := []byte(base)
				b[pos] = byte(c)
				out = append(out, string(b))
			}
		}
		for _, extra := range []string{"\n", "\r\n", " ", "\x00", "é", "\u212a", "\xff", "\xc3"} {
			out = append(out, base+extra, extra+base, base[:n/2]+extra+base[n/2:])
		}
	}
	for i := 0; i < 3000; i++ {
		n := rng.IntN(g.max + 8)
		b := []byte(g.prefix)
		if rng.IntN(4) == 0 {
			b = b[:rng.IntN(len(b)+1)]
		}
		for len(b) < n {
			switch r := rng.IntN(20); {
			case r == 0:
				b = append(b, byte(rng.IntN(256)))
			case r == 1: // a byte of a multi-byte rune, a newline or invalid UTF-8
				b = append(b, "é\n\u212a\xff"[rng.IntN(7)])
			case r == 2:
				b = append(b, []string{"é", "\u212a", "\U0001F600", "\n"}[rng.IntN(4)]...)
			default:
				b = append(b, g.alphabet[rng.IntN(len(g.alphabet))])
			}
		}
		out = append(out, string(b))
	}
	return out
}

// TestIDValidatorsMatchRegexps: the hand-written validators accept exactly
// the languages of the patterns they replace.
func TestIDValidatorsMatchRegexps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range idGrammars() {
		accepted, n := 0, 0
		for _, s := range idCandidates(g, rng) {
			n++
			want := g.re.MatchString(s)
			if got := g.valid(s); got != want {
				t.Errorf("%s %q: validator %v, regexp %v", g.name, s, got, want)
			}
			if want {
				accepted++
			}
		}
		// The generator must exercise both outcomes heavily.
		if accepted < 500 || n-accepted < 500 {
			t.Errorf("%s: %d of %d candidates accepted", g.name, accepted, n)
		}
	}
}

// TestIDErrorsQuotePatterns: the messages still show the grammar.
func TestIDErrorsQuotePatterns(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{CheckGoalID("Bad"), `invalid_goal_id: invalid goal id "Bad": want ^[a-z][a-z0-9_.:@-]{0,79}$`},
		{CheckTodoID("todo_x"), `invalid_todo_id: invalid todo id "todo_x": want ^todo_[a-z0-9_-]{3,64}$`},
		{CheckAgentID("owner", "-a"), `invalid_agent_id: invalid owner "-a": want ^[a-z][a-z0-9_.:@-]{0,79}$`},
		{CheckIdempotencyKey("key", "/k"), `invalid_idempotency_key: invalid key "/k": want ^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$`},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v\nwant %s", c.err, c.want)
		}
	}
}

// FuzzIDValidators compares the validators with the regexps on any input.
func FuzzIDValidators(f *testing.F) {
	for _, s := range []string{"", "a", "todo_abc", "todo_ab", "Key/1", "a\n", "é", "\xff", strings.Repeat("a", 80), strings.Repeat("a", 81)} {
		f.Add(s)
	}
	gs := idGrammars()
	f.Fuzz(func(t *testing.T, s string) {
		for _, g := range gs {
			if got, want := g.valid(s), g.re.MatchString(s); got != want {
				t.Fatalf("%s %q: validator %v, regexp %v", g.name, s, got, want)
			}
		}
	})
}

// TestValidScope: a write scope is a relative doublestar glob of at most 256
// bytes, without empty, "." or ".." components, backslashes or NULs.
func TestValidScope(t *testing.T) {
	long := strings.Repeat("a/", 127) + "bc" // 256 bytes
	cases := []struct {
		scope string
		ok    bool
	}{
		{"src/**", true},
		{"docs/*.md", true},
		{long, true},
		{long + "d", false},
		{"", false},
		{"/etc/**", false},
		{"src/../x", false},
		{"./src", false},
		{"src//x", false},
		{"src\\x", false},
		{"src\x00", false},
		{"src/[a", false},
	}
	for _, c := range cases {
		if got := ValidScope(c.scope); got != c.ok {
			t.Errorf("ValidScope(%q) = %v, want %v", c.scope, got, c.ok)
		}
	}
}
