package lease

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code from the contract (section 3).
type Code string

// Error codes. The set is closed: agents branch on these strings.
const (
	CodeUsage                    Code = "usage"
	CodeInvalidGoalID            Code = "invalid_goal_id"
	CodeInvalidTodoID            Code = "invalid_todo_id"
	CodeInvalidAgentID           Code = "invalid_agent_id"
	CodeInvalidIdempotencyKey    Code = "invalid_idempotency_key"
	CodeInvalidTTL               Code = "invalid_ttl"
	CodeInvalidWriteScope        Code = "invalid_write_scope"
	CodeInvalidRequest           Code = "invalid_request"
	CodeStoreNotInitialized      Code = "store_not_initialized"
	CodeGoalNotFound             Code = "goal_not_found"
	CodeGoalExists               Code = "goal_exists"
	CodeGoalArchived             Code = "goal_archived"
	CodeTodoNotFound             Code = "todo_not_found"
	CodeTodoExists               Code = "todo_exists"
	CodeTodoNotOpen              Code = "todo_not_open"
	CodeTodoArchived             Code = "todo_archived"
	CodeAgentNotRegistered       Code = "agent_not_registered"
	CodeAgentExists              Code = "agent_exists"
	CodeAgentExcluded            Code = "agent_excluded"
	CodeClaimConflict            Code = "claim_conflict"
	CodeNotClaimOwner            Code = "not_claim_owner"
	CodeBoundAgentMismatch       Code = "bound_agent_mismatch"
	CodeAuthorityRequired        Code = "authority_required"
	CodeTodoLeaseConflict        Code = "todo_lease_conflict"
	CodeWriteScopeConflict       Code = "write_scope_conflict"
	CodeIdempotencyKeyReuse      Code = "idempotency_key_reuse"
	CodeVersionRequired          Code = "version_required"
	CodeVersionMismatch          Code = "version_mismatch"
	CodeLeaseNotActive           Code = "lease_not_active"
	CodeLeaseProofMismatch       Code = "lease_proof_mismatch"
	CodeLeaseFenceRequired       Code = "lease_fence_required"
	CodeExecutionNotCurrent      Code = "execution_not_current"
	CodeLeaseGenerationExhausted Code = "lease_generation_exhausted"
	CodeDependenciesOpen         Code = "dependencies_open"
	CodeCorruptRecord            Code = "corrupt_record"
	CodeStoreFormatUnsupported   Code = "store_format_unsupported"
	CodeStoreBusy                Code = "store_busy"
	CodeStoreConflict            Code = "store_conflict"
	CodeRemoteUnavailable        Code = "remote_unavailable"
	CodeRemoteRejected           Code = "remote_rejected"
	CodeStoreIO                  Code = "store_io"
	CodeClockSkew                Code = "clock_skew"
	CodeSignatureRequired        Code = "signature_required"
	CodeSignatureInvalid         Code = "signature_invalid"
	CodeStaleEpoch               Code = "stale_epoch"
	CodeStoreMismatch            Code = "store_mismatch"
)

// Class says how a caller should react to an error; it maps to the exit code.
type Class int

const (
	Rejected  Class = 1 // decided and refused; the same request gets the same answer
	Usage     Class = 2 // malformed command line
	Transient Class = 3 // retry with the same arguments
)

// ClassOf returns the class of a code.
func ClassOf(c Code) Class {
	switch c {
	case CodeUsage:
		return Usage
	case CodeStoreBusy, CodeStoreConflict, CodeRemoteUnavailable, CodeStoreIO, CodeClockSkew:
		return Transient
	}
	return Rejected
}

// Error is a typed refusal with a contract code and optional details that are
// printed next to code and message in the JSON error object.
type Error struct {
	Code    Code
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// With adds a detail and returns e, for chaining.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Corrupt reports an invalid record at path.
func Corrupt(path string, cause error) *Error {
	return Errorf(CodeCorruptRecord, "invalid record %s: %v", path, cause).With("path", path)
}
