package lease

import (
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

// ValidScope reports whether s is a relative path glob: non-empty, no leading
// '/', no '..' or '.' component, no backslash or NUL, and a valid doublestar pattern.
func ValidScope(s string) bool {
	if s == "" || len(s) > 256 || strings.HasPrefix(s, "/") || strings.ContainsAny(s, "\\\x00") {
		return false
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return doublestar.ValidatePattern(s)
}

// CheckScopes returns invalid_write_scope for the first bad scope.
func CheckScopes(scopes []string) error {
	for _, s := range scopes {
		if !ValidScope(s) {
			return Errorf(CodeInvalidWriteScope, "invalid write scope %q: want a relative path glob without '..'", s).With("scope", s)
		}
	}
	return nil
}
