package lease

// The write-scope matcher: doublestar's Match, in time linear in the
// pattern and the path.
//
// doublestar.Match decides a pattern with brace alternatives by trying each
// alternative, recursively, with the rest of the pattern substituted in:
// `**/` followed by thirty `{?,}` groups is 2^30 tries, and a path that does
// not match makes it try them all (a 154-byte scope hung every pre-commit
// hook of a team). globMatcher decides the same language by simulating all
// of doublestar's choices at once: an NFA whose states are positions in the
// pattern, where a brace group is an epsilon branch to each alternative and
// the end of an alternative jumps past its group's closing brace, a `*` is
// a loop over the runes of one segment and a `**/` a loop over whole
// segments. One step costs at most the number of states, so a match costs
// O(len(pattern) × len(path)), whatever the pattern.
//
// It reproduces doublestar's reading of a pattern exactly, quirks included
// (TestGlobMatchesDoublestar compares the two on random patterns and
// paths, and FuzzGlob on what the fuzzer finds):
//   - `**` is a globstar only at the start of a segment and when followed
//     by '/' or the end of the pattern (after the alternatives that end
//     around it); elsewhere it is one `*`. An opening brace after `**`
//     makes it a `*` too, because doublestar looks at the next byte before
//     it chooses an alternative.
//   - A pattern ending in `**` (at a segment start) matches any rest of the
//     path.
//   - When the path ends first, the rest of the pattern must be one of "",
//     "*", "**", "/**", "**/" or "/**/", or a brace group with an
//     alternative that, followed by the rest, is one of them: doublestar's
//     isZeroLengthPattern ("a*{,}" does not match "a", "a***" does not
//     either, "a/**" matches "a").
//   - A character class matches any rune it names, '/' included ("[!x]"
//     matches '/'); '?' and '*' never match '/'.
//   - Runes are decoded as utf8.DecodeRuneInString does (an invalid byte
//     is U+FFFD and equals any other invalid byte).
//
// Where doublestar's answer is not a glob's, the NFA differs, and
// ValidScope refuses the patterns (shapeProblem), so that for every scope
// a request may name the two agree:
//   - A class that can match '/' after a `*` of the same segment: the
//     single backtracking point of doublestar can miss a match ("*[!a]*"
//     against "b/b"). Refused: a class that can match '/'.
//   - An alternative that ends the pattern with '/' ("{a,**/}"): when the
//     path ends, doublestar judges only the furthest of its attempts.
//     Refused: an alternative that leaves an empty segment (a '/' first,
//     last, or twice in a row).
//   - A negated class holding '{', '}' or '[': doublestar validates the
//     rest of the pattern from inside the class when it fails there, and
//     gives up with ErrBadPattern ("[!x}]"). Refused.
// The NFA finds every match there is, so on any other pattern it matches
// whatever doublestar matches (and more where doublestar gives up or
// misses one): scopes recorded by an older loopx keep covering at least
// what they covered.
//
// Patterns with escapes ('\') or that doublestar.ValidatePattern refuses do
// not compile; ValidScope refuses them too.

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// globMatcher is a compiled pattern.
type globMatcher struct {
	pat string
	n   int32
	// norm[p] is where the text continues at byte p: p itself, or for the
	// ',' or '}' that ends an alternative, the position after its group's
	// closing brace (normalised again). norm[n] = n.
	norm []int32
	// alts[p] lists the first byte of each alternative of the group opened
	// at p ('{'); nil elsewhere.
	alts [][]int32
	// class[p] is the class that starts at p ('['), with end its byte after
	// ']'; nil elsewhere.
	class []*globClass
	// eps[s] are the states state s reaches without reading, cons[s] what
	// it does with a rune; final[s] says whether s accepts at the end of
	// the path (zero at its position).
	eps   [][]int32
	cons  []globCons
	final []bool
	runs  sync.Pool // *globRun
	// zero[p] reports whether the pattern's rest at normalised position p
	// matches the empty rest of a path (isZeroLengthPattern).
	zero []bool
	// closeOf[p] is the closing brace of the group opened at p; owner[p]
	// the group that a ',' or '}' at p belongs to (-1: none, or not a
	// structural byte); slashes lists the '/' bytes outside classes.
	closeOf map[int32]int32
	owner   []int32
	slashes []int32
}

type globClass struct {
	neg    bool
	ranges [][2]rune
	end    int32
}

func (c *globClass) has(r rune) bool {
	in := false
	for _, rg := range c.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != c.neg
}

// The NFA's states. For a pattern of n bytes, positions 0..n: at(p, sos)
// is "the pattern continues at p" (sos: the previous pattern byte was '/'
// or there was none, which decides whether a `**` there is a globstar);
// star(c) is a `*` absorbing one segment's runes before continuing at c;
// seg(c) and segMid(c) are a `**/` absorbing whole segments (at the start
// of one, or inside one) before continuing at c; accept matches any rest.
const (
	kAt     = 0 // 2 states per position (sos false, true)
	kStar   = 2
	kSeg    = 3
	kSegMid = 4
	kinds   = 5
)

func (g *globMatcher) at(p int32, sos bool) int32 {
	s := int32(0)
	if sos {
		s = 1
	}
	return p*kinds + kAt + s
}

func (g *globMatcher) state(kind, p int32) int32 { return p*kinds + kind }
func (g *globMatcher) accept() int32             { return (g.n + 1) * kinds }
func (g *globMatcher) states() int               { return int(g.n+1)*kinds + 1 }

// What a state does with the next rune of the path (globMatcher.cons).
const (
	consNone    = iota
	consNoSlash // any rune but '/': '?', and a star's loop
	consClass
	consRune
	consSeg // '/' → seg(c), any other → segMid(c)
)

type globCons struct {
	op  uint8
	lit rune
	cls *globClass
	to  int32 // the state it goes to (consSeg: seg(c))
}

// compileGlob compiles pattern; ok is false for a pattern doublestar would
// refuse (ErrBadPattern) or that escapes a byte.
func compileGlob(pattern string) (*globMatcher, bool) {
	n := len(pattern)
	if n > 1<<16 || strings.IndexByte(pattern, '\\') >= 0 {
		return nil, false
	}
	g := &globMatcher{pat: pattern, n: int32(n), alts: make([][]int32, n), class: make([]*globClass, n)}
	owner := make([]int32, n) // for a ',' or '}' of a group: its '{'; -1 else
	closeOf := map[int32]int32{}
	g.owner, g.closeOf = owner, closeOf
	var stack []int32
	for i := 0; i < n; {
		owner[i] = -1
		switch c := pattern[i]; c {
		case '\\':
			return nil, false
		case '[':
			cl, end, ok := parseClass(pattern, i)
			if !ok {
				return nil, false
			}
			g.class[int32(i)] = cl
			for j := i + 1; j < end; j++ {
				owner[j] = -1
			}
			i = end
		case '{':
			stack = append(stack, int32(i))
			g.alts[int32(i)] = []int32{int32(i + 1)}
			i++
		case ',':
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				owner[i] = top
				g.alts[top] = append(g.alts[top], int32(i+1))
			}
			i++
		case '}':
			if len(stack) == 0 {
				return nil, false
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			owner[i] = top
			closeOf[top] = int32(i)
			i++
		case '/':
			g.slashes = append(g.slashes, int32(i))
			i++
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return nil, false
	}
	g.norm = make([]int32, n+1)
	g.norm[n] = int32(n)
	for p := n - 1; p >= 0; p-- {
		g.norm[p] = int32(p)
		if o := owner[p]; o >= 0 {
			g.norm[p] = g.norm[closeOf[o]+1]
		}
	}
	g.zero = make([]bool, n+1)
	for p := n; p >= 0; p-- {
		if g.norm[p] != int32(p) {
			continue
		}
		z := isZeroRest(g.rest(int32(p), 5))
		if !z && p < n && pattern[p] == '{' {
			for _, a := range g.alts[int32(p)] {
				if g.zero[g.norm[a]] {
					z = true
					break
				}
			}
		}
		g.zero[p] = z
	}
	g.tables()
	return g, true
}

// tables builds the transition tables of the NFA (eps, cons, final).
func (g *globMatcher) tables() {
	ns := g.states()
	g.eps = make([][]int32, ns)
	g.cons = make([]globCons, ns)
	g.final = make([]bool, ns)
	for p := int32(0); p <= g.n; p++ {
		if g.norm[p] != p {
			continue // not a position a state is ever at
		}
		zero := g.zero[p]
		g.final[g.at(p, false)], g.final[g.at(p, true)] = zero, zero
		g.final[g.state(kStar, p)], g.final[g.state(kSeg, p)] = zero, zero
		g.eps[g.state(kStar, p)] = []int32{g.at(p, false)}
		g.cons[g.state(kStar, p)] = globCons{op: consNoSlash, to: g.state(kStar, p)}
		g.eps[g.state(kSeg, p)] = []int32{g.at(p, true)}
		g.cons[g.state(kSeg, p)] = globCons{op: consSeg, to: g.state(kSeg, p)}
		g.cons[g.state(kSegMid, p)] = globCons{op: consSeg, to: g.state(kSeg, p)}
		if p == g.n {
			continue
		}
		for _, sos := range []bool{false, true} {
			s := g.at(p, sos)
			switch g.pat[p] {
			case '{':
				for _, a := range g.alts[p] {
					g.eps[s] = append(g.eps[s], g.at(g.norm[a], sos))
				}
			case '*':
				k, c, all := g.starTarget(p, sos)
				if all {
					g.eps[s] = []int32{g.accept()}
				} else {
					g.eps[s] = []int32{g.state(k, c)}
				}
			case '?':
				g.cons[s] = globCons{op: consNoSlash, to: g.at(g.norm[p+1], false)}
			case '[':
				if cl := g.class[p]; cl != nil { // nil: a '[' inside a class, never a state
					g.cons[s] = globCons{op: consClass, cls: cl, to: g.at(g.norm[cl.end], false)}
				}
			default:
				lit, sz := utf8.DecodeRuneInString(g.pat[p:])
				g.cons[s] = globCons{op: consRune, lit: lit, to: g.at(g.norm[p+int32(sz)], lit == '/')}
			}
		}
	}
}

// shapeProblem says why a compiled scope is refused in a request ("" when
// it is not): more than MaxScopeAlternatives brace alternatives, an
// alternative that leaves an empty path segment, or a class that can
// match '/'. The last two are where doublestar's answers stop being a
// glob's (module comment); the first bounds ScopesOverlap.
func (g *globMatcher) shapeProblem() string {
	if c := g.countSeq(0); c > MaxScopeAlternatives {
		return fmt.Sprintf("its braces spell more than %d alternatives", MaxScopeAlternatives)
	}
	for p, cl := range g.class {
		if cl == nil {
			continue
		}
		if cl.has('/') {
			return "a character class that can match '/' (exclude it: [!/...])"
		}
		if strings.ContainsAny(g.pat[p+1:cl.end-1], "[{}") {
			return "a character class holding '[', '{' or '}'"
		}
	}
	empty := func(firsts []int32) bool {
		for _, q := range firsts {
			if q == g.n || g.pat[q] == '/' {
				return true
			}
		}
		return false
	}
	if empty(g.firsts(0)) {
		return "an alternative leaves an empty path segment"
	}
	for _, p := range g.slashes {
		if empty(g.firsts(p + 1)) {
			return "an alternative leaves an empty path segment"
		}
	}
	return ""
}

// firsts returns the positions of the tokens the text can continue with
// at p (n for the end), through the alternatives of groups that start
// there.
func (g *globMatcher) firsts(p int32) []int32 {
	memo := map[int32][]int32{}
	var rec func(p int32) []int32
	rec = func(p int32) []int32 {
		q := g.norm[p]
		if q >= g.n || g.pat[q] != '{' {
			return []int32{q}
		}
		if out, ok := memo[q]; ok {
			return out
		}
		seen := map[int32]bool{}
		var out []int32
		for _, a := range g.alts[q] {
			for _, f := range rec(a) {
				if !seen[f] {
					seen[f] = true
					out = append(out, f)
				}
			}
		}
		memo[q] = out
		return out
	}
	return rec(p)
}

// countSeq counts the alternatives the braces spell from p to the end of
// the alternative p is in (or of the pattern), saturating above
// MaxScopeAlternatives.
func (g *globMatcher) countSeq(p int32) int {
	total := 1
	for q := p; q < g.n; {
		if o := g.owner[q]; o >= 0 {
			break // the end of this alternative
		}
		if cl := g.class[q]; cl != nil {
			q = cl.end
			continue
		}
		if g.pat[q] == '{' {
			sum := 0
			for _, a := range g.alts[q] {
				sum = min(sum+g.countSeq(a), MaxScopeAlternatives+1)
			}
			total = min(total*sum, MaxScopeAlternatives+1)
			q = g.closeOf[q] + 1
			continue
		}
		q++
	}
	return total
}

// parseClass parses the class at pattern[i] == '[' as doublestar reads it:
// an optional '!' or '^', then at least one item before the first ']';
// an item is a rune or lo-hi (a '-' right after an item, not before ']').
func parseClass(pattern string, i int) (*globClass, int, bool) {
	n := len(pattern)
	j := i + 1
	cl := &globClass{}
	if j < n && (pattern[j] == '!' || pattern[j] == '^') {
		cl.neg = true
		j++
	}
	if j >= n || pattern[j] == ']' {
		return nil, 0, false
	}
	k := strings.IndexByte(pattern[j:], ']')
	if k < 0 {
		return nil, 0, false
	}
	k += j
	last := rune(-1)
	for j < k {
		r, sz := utf8.DecodeRuneInString(pattern[j:k])
		j += sz
		if last >= 0 && r == '-' && j < k {
			hi, hsz := utf8.DecodeRuneInString(pattern[j:k])
			j += hsz
			cl.ranges = append(cl.ranges, [2]rune{last, hi})
			last = -1
			continue
		}
		cl.ranges = append(cl.ranges, [2]rune{r, r})
		last = r
	}
	cl.end = int32(k + 1)
	return cl, k + 1, true
}

// rest returns up to max bytes of the pattern's text from position p on,
// as doublestar holds it there: alternatives already entered end at their
// group's closing brace; a group not entered yet is its raw text (only its
// '{' is returned: nothing after it can make the rest zero-length).
func (g *globMatcher) rest(p int32, max int) string {
	var b []byte
	for q := g.norm[p]; q < g.n && len(b) < max; q = g.norm[q+1] {
		b = append(b, g.pat[q])
		if g.pat[q] == '{' {
			break
		}
	}
	return string(b)
}

// isZeroRest is doublestar's isZeroLengthPattern on a pattern's rest,
// without its brace case (compileGlob adds it).
func isZeroRest(s string) bool {
	switch s {
	case "", "*", "**", "/**", "**/", "/**/":
		return true
	}
	return false
}

// starTarget returns what a '*' at p is, given sos: a globstar that
// matches any rest (accept), a `**/` continuing at c (kSeg), or a `*`
// continuing at c (kStar).
func (g *globMatcher) starTarget(p int32, sos bool) (kind, c int32, acceptAll bool) {
	q := g.norm[p+1]
	if q < g.n && g.pat[q] == '*' {
		r := g.norm[q+1]
		if sos && r == g.n {
			return 0, 0, true
		}
		if sos && g.pat[r] == '/' {
			return kSeg, g.norm[r+1], false
		}
		return kStar, r, false
	}
	return kStar, q, false
}

// globRun is the state of one simulation: the current and next state sets
// (sparse sets over the states) and the closure's stack.
type globRun struct {
	cur, closure sparseSet
	stack        []int32
}

type sparseSet struct {
	dense  []int32
	sparse []int32
}

func newSparseSet(n int) sparseSet {
	return sparseSet{dense: make([]int32, 0, n), sparse: make([]int32, n)}
}

func (s *sparseSet) has(x int32) bool {
	i := s.sparse[x]
	return int(i) < len(s.dense) && s.dense[i] == x
}

func (s *sparseSet) add(x int32) bool {
	if s.has(x) {
		return false
	}
	s.sparse[x] = int32(len(s.dense))
	s.dense = append(s.dense, x)
	return true
}

// Match reports whether the path matches the pattern, as
// doublestar.Match(pattern, path) does. It costs O(states) per rune of the
// path, the states being O(len(pattern)).
func (g *globMatcher) Match(path string) bool {
	r, _ := g.runs.Get().(*globRun)
	if r == nil {
		nst := g.states()
		r = &globRun{cur: newSparseSet(nst), closure: newSparseSet(nst)}
	}
	defer g.runs.Put(r)
	accept := g.accept()
	cur, closure := &r.cur, &r.closure
	cur.dense = cur.dense[:0]
	cur.add(g.at(g.norm[0], true))
	for i := 0; i < len(path); {
		c, sz := utf8.DecodeRuneInString(path[i:])
		i += sz
		// The closure: every state reachable without reading.
		closure.dense = closure.dense[:0]
		stack := r.stack[:0]
		for _, s := range cur.dense {
			if closure.add(s) {
				stack = append(stack, s)
			}
		}
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if s == accept {
				r.stack = stack
				return true
			}
			for _, t := range g.eps[s] {
				if closure.add(t) {
					stack = append(stack, t)
				}
			}
		}
		r.stack = stack
		// The step: every state the rune leads to.
		cur.dense = cur.dense[:0]
		for _, s := range closure.dense {
			switch k := &g.cons[s]; k.op {
			case consNoSlash:
				if c != '/' {
					cur.add(k.to)
				}
			case consClass:
				if k.cls.has(c) {
					cur.add(k.to)
				}
			case consRune:
				if c == k.lit {
					cur.add(k.to)
				}
			case consSeg:
				if c == '/' {
					cur.add(k.to)
				} else {
					cur.add(k.to - kSeg + kSegMid)
				}
			}
		}
		if len(cur.dense) == 0 {
			return false
		}
	}
	for _, s := range cur.dense {
		if g.final[s] {
			return true
		}
	}
	return false
}

// scopeMatchers caches compiled scopes (a guard run matches every path
// against the same few scopes). It is cleared when it grows past its
// bound, so it never holds more than scopeCacheMax of them.
var scopeMatchers struct {
	sync.Mutex
	m map[string]*scopeMatcher
}

const scopeCacheMax = 4096

// scopeMatcher is a write scope compiled for ScopeCovers: the scope, and
// the scope followed by "/**" (what is below a matched path).
type scopeMatcher struct {
	self, below *globMatcher
}

func compiledScope(scope string) *scopeMatcher {
	scopeMatchers.Lock()
	defer scopeMatchers.Unlock()
	if m, ok := scopeMatchers.m[scope]; ok {
		return m
	}
	m := &scopeMatcher{}
	m.self, _ = compileGlob(scope)
	m.below, _ = compileGlob(scope + "/**")
	if scopeMatchers.m == nil || len(scopeMatchers.m) >= scopeCacheMax {
		scopeMatchers.m = map[string]*scopeMatcher{}
	}
	scopeMatchers.m[scope] = m
	return m
}

// covers reports whether the scope covers path (see ScopeCovers). A scope
// that does not compile covers nothing, as doublestar matches nothing with
// an invalid pattern (records are validated, so none reaches here).
func (m *scopeMatcher) covers(path string) bool {
	if m.self == nil || m.below == nil {
		return false
	}
	return m.self.Match(path) || m.below.Match(path)
}
