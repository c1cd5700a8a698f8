package lease

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// The id grammars, as regular expressions. The validators below are
// hand-written (compiling these bounded repetitions at package init cost
// every loopx process about a millisecond); ids_test.go checks that they
// accept exactly these languages. Error messages quote the patterns.
const (
	goalIDPattern  = `^[a-z][a-z0-9_.:@-]{0,79}$`
	agentIDPattern = goalIDPattern
	todoIDPattern  = `^todo_[a-z0-9_-]{3,64}$`
	keyPattern     = `^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$`
)

// matchGoalID reports whether s matches goalIDPattern.
func matchGoalID(s string) bool {
	if len(s) < 1 || len(s) > 80 || !isLower(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '.' && c != ':' && c != '@' && c != '-' {
			return false
		}
	}
	return true
}

// matchTodoID reports whether s matches todoIDPattern.
func matchTodoID(s string) bool {
	rest, ok := strings.CutPrefix(s, "todo_")
	if !ok || len(rest) < 3 || len(rest) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// matchKey reports whether s matches keyPattern.
func matchKey(s string) bool {
	if len(s) < 1 || len(s) > 128 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != ':' && c != '@' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isLower(c) || isDigit(c) || 'A' <= c && c <= 'Z' }

// Limits from the contract.
const (
	MaxTTLSeconds = 86400
	// MaxGeneration is 2^53-1, the largest integer every JSON consumer reads exactly.
	MaxGeneration int64 = 1<<53 - 1
)

// ValidGoalID reports whether s is a well-formed goal id.
func ValidGoalID(s string) bool { return matchGoalID(s) }

// ValidAgentID reports whether s is a well-formed agent id.
func ValidAgentID(s string) bool { return matchGoalID(s) }

// ValidTodoID reports whether s is a well-formed todo id.
func ValidTodoID(s string) bool { return matchTodoID(s) }

// ValidIdempotencyKey reports whether s is a well-formed execution key.
func ValidIdempotencyKey(s string) bool { return matchKey(s) }

// CheckGoalID returns invalid_goal_id unless s is a goal id.
func CheckGoalID(s string) error {
	if s == "" {
		return Errorf(CodeInvalidGoalID, "goal id is required")
	}
	if !ValidGoalID(s) {
		return Errorf(CodeInvalidGoalID, "invalid goal id %q: want %s", s, goalIDPattern)
	}
	return nil
}

// CheckTodoID returns invalid_todo_id unless s is a todo id.
func CheckTodoID(s string) error {
	if s == "" {
		return Errorf(CodeInvalidTodoID, "todo id is required")
	}
	if !ValidTodoID(s) {
		return Errorf(CodeInvalidTodoID, "invalid todo id %q: want %s", s, todoIDPattern)
	}
	return nil
}

// CheckAgentID returns invalid_agent_id unless s is an agent id. field names the
// flag or field being decoded (agent id, owner, new owner, ...).
func CheckAgentID(field, s string) error {
	if s == "" {
		return Errorf(CodeInvalidAgentID, "%s is required", field)
	}
	if !ValidAgentID(s) {
		return Errorf(CodeInvalidAgentID, "invalid %s %q: want %s", field, s, agentIDPattern)
	}
	return nil
}

// CheckIdempotencyKey returns invalid_idempotency_key unless s is a key.
func CheckIdempotencyKey(field, s string) error {
	if s == "" {
		return Errorf(CodeInvalidIdempotencyKey, "%s is required", field)
	}
	if !ValidIdempotencyKey(s) {
		return Errorf(CodeInvalidIdempotencyKey, "invalid %s %q: want %s", field, s, keyPattern)
	}
	return nil
}

// CheckTTL returns invalid_ttl unless 1 <= seconds <= 86400.
func CheckTTL(seconds int64) error {
	if seconds < 1 || seconds > MaxTTLSeconds {
		return Errorf(CodeInvalidTTL, "ttl %d seconds is out of range 1..%d", seconds, MaxTTLSeconds)
	}
	return nil
}

// Limits on write scopes (contract section 8, bounded input).
const (
	// MaxScopes is the most write scopes one lease or todo holds.
	MaxScopes = 64
	// MaxScopeBytes is the longest write scope.
	MaxScopeBytes = 256
	// MaxScopeAlternatives bounds the brace alternatives of a scope,
	// counted as the paths its braces spell ("{a,b}/{c,d}" is 4): the
	// overlap check between two scopes compares them pairwise.
	MaxScopeAlternatives = 64
)

// ValidScope reports whether s is a write scope loopx accepts in a request:
// a relative path glob of at most 256 bytes (no leading '/', no empty, "."
// or ".." component, no backslash or NUL, a pattern doublestar accepts),
// and moreover one whose meaning is plain (see checkScopeShape): at most 64
// brace alternatives, no alternative that leaves an empty path segment
// (a '/' at either end, or two in a row), and no character class that can
// match '/'.
func ValidScope(s string) bool { return scopeProblem(s) == "" }

// validRecordScope is what a record on the ref may hold: the syntax of a
// relative path glob of at most 256 bytes, without the shape rules a
// request must also meet. Scopes recorded by an older loopx keep working
// (the matcher decides any of them in linear time, ScopesOverlap treats
// what it cannot analyse as overlapping); only new requests are held to
// the stricter rules (docs/DECISIONS.md).
func validRecordScope(s string) bool {
	_, ok := scopeSyntax(s)
	return ok
}

// scopeSyntax checks the syntax rules of a scope and compiles it.
func scopeSyntax(s string) (*globMatcher, bool) {
	if s == "" || len(s) > MaxScopeBytes || strings.HasPrefix(s, "/") || strings.ContainsAny(s, "\\\x00") {
		return nil, false
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return nil, false
		}
	}
	if !doublestar.ValidatePattern(s) {
		return nil, false
	}
	return compileGlob(s)
}

// scopeProblem says why s is not a scope a request may name ("" when it
// is one).
func scopeProblem(s string) string {
	if len(s) > MaxScopeBytes {
		return fmt.Sprintf("longer than %d bytes", MaxScopeBytes)
	}
	g, ok := scopeSyntax(s)
	if !ok {
		return "want a relative path glob without '..'"
	}
	return g.shapeProblem()
}

// CheckScopes returns invalid_write_scope for more than MaxScopes scopes or
// the first bad scope, naming it (details scope).
func CheckScopes(scopes []string) error {
	if len(scopes) > MaxScopes {
		return Errorf(CodeInvalidWriteScope, "%d write scopes: at most %d are allowed", len(scopes), MaxScopes).With("scopes", len(scopes))
	}
	for _, s := range scopes {
		if why := scopeProblem(s); why != "" {
			shown := s
			if len(shown) > MaxScopeBytes {
				shown = shown[:MaxScopeBytes] + "..."
			}
			return Errorf(CodeInvalidWriteScope, "invalid write scope %q: %s", shown, why).With("scope", shown)
		}
	}
	return nil
}
