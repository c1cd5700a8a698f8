package lease

import (
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

var (
	goalIDRe  = regexp.MustCompile(`^[a-z][a-z0-9_.:@-]{0,79}$`)
	agentIDRe = goalIDRe
	todoIDRe  = regexp.MustCompile(`^todo_[a-z0-9_-]{3,64}$`)
	keyRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$`)
)

// Limits from the contract.
const (
	MaxTTLSeconds = 86400
	// MaxGeneration is 2^53-1, the largest integer every JSON consumer reads exactly.
	MaxGeneration int64 = 1<<53 - 1
)

// ValidGoalID reports whether s is a well-formed goal id.
func ValidGoalID(s string) bool { return goalIDRe.MatchString(s) }

// ValidAgentID reports whether s is a well-formed agent id.
func ValidAgentID(s string) bool { return agentIDRe.MatchString(s) }

// ValidTodoID reports whether s is a well-formed todo id.
func ValidTodoID(s string) bool { return todoIDRe.MatchString(s) }

// ValidIdempotencyKey reports whether s is a well-formed execution key.
func ValidIdempotencyKey(s string) bool { return keyRe.MatchString(s) }

// CheckGoalID returns invalid_goal_id unless s is a goal id.
func CheckGoalID(s string) error {
	if s == "" {
		return Errorf(CodeInvalidGoalID, "goal id is required")
	}
	if !ValidGoalID(s) {
		return Errorf(CodeInvalidGoalID, "invalid goal id %q: want %s", s, goalIDRe)
	}
	return nil
}

// CheckTodoID returns invalid_todo_id unless s is a todo id.
func CheckTodoID(s string) error {
	if s == "" {
		return Errorf(CodeInvalidTodoID, "todo id is required")
	}
	if !ValidTodoID(s) {
		return Errorf(CodeInvalidTodoID, "invalid todo id %q: want %s", s, todoIDRe)
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
		return Errorf(CodeInvalidAgentID, "invalid %s %q: want %s", field, s, agentIDRe)
	}
	return nil
}

// CheckIdempotencyKey returns invalid_idempotency_key unless s is a key.
func CheckIdempotencyKey(field, s string) error {
	if s == "" {
		return Errorf(CodeInvalidIdempotencyKey, "%s is required", field)
	}
	if !ValidIdempotencyKey(s) {
		return Errorf(CodeInvalidIdempotencyKey, "invalid %s %q: want %s", field, s, keyRe)
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
