package lease

import (
	"slices"
	"time"
)

// This file holds the judgements every operation shares: is a claim in force,
// is a lease in force (effective), does a proof match. Each is one small
// function with a table test in effective_test.go.

// ClaimEffective reports whether t's claim is in force at now: set, and not
// past its claim expiry.
func ClaimEffective(t *Todo, now time.Time) bool {
	if t == nil || t.ClaimedBy == "" {
		return false
	}
	return t.ClaimExpiresAt == nil || now.Before(*t.ClaimExpiresAt)
}

// EffectiveClaimant returns who holds t's claim at now ("" when unclaimed or expired).
func EffectiveClaimant(t *Todo, now time.Time) string {
	if ClaimEffective(t, now) {
		return t.ClaimedBy
	}
	return ""
}

// HoldsClaim reports whether agent holds t's effective claim, as claimed_by or
// as its delegated scope agent. The empty agent never holds a claim.
func HoldsClaim(t *Todo, agent string, now time.Time) bool {
	return agent != "" && ClaimEffective(t, now) && (t.ClaimedBy == agent || t.ClaimScopeAgentID == agent)
}

// Excluded reports whether agent is excluded from t.
func Excluded(t *Todo, agent string) bool { return slices.Contains(t.ExcludedAgents, agent) }

// Open reports whether t can take new work: open and not archived.
func Open(t *Todo) bool { return t != nil && t.Status == TodoOpen && !t.Archived }

// LeaseEffective reports whether l grants execution on t at now: active,
// unexpired, the todo open, the owner registered and not excluded, and the
// claim empty or held by the owner (as claimed_by or as its scope agent).
// Anything else never blocks a new eligible execution.
//
// A lease is void once its owner registers again (the registration it was
// granted under is recorded in the lease): an agent that was unregistered and
// registers again does not revive its old executions, since another todo may
// have taken an overlapping scope meanwhile.
func LeaseEffective(l *Lease, t *Todo, owner *Agent, now time.Time) bool {
	switch {
	case l == nil || l.Status != LeaseActive || !now.Before(l.ExpiresAt):
		return false
	case !Open(t) || !owner.Registered() || owner.ID != l.Owner || Excluded(t, l.Owner):
		return false
	case owner.Registration != l.OwnerRegistration:
		return false
	}
	return !ClaimEffective(t, now) || HoldsClaim(t, l.Owner, now)
}

// CheckProof verifies the exact (owner, key, expected version) tuple against
// the current lease. revision is the revision the lease was read at, reported
// in version_mismatch. A nil lease has version 0.
func CheckProof(l *Lease, owner, key string, expectedVersion int64, revision string) error {
	current := int64(0)
	if l != nil {
		current = l.Version
	}
	if expectedVersion != current {
		return VersionMismatch(expectedVersion, current, revision)
	}
	if l == nil || l.Owner != owner || l.IdempotencyKey != key {
		return Errorf(CodeLeaseProofMismatch, "owner and idempotency key do not match the current lease of this todo")
	}
	return nil
}

// VersionMismatch builds the version_mismatch error with its details.
func VersionMismatch(expected, current int64, revision string) *Error {
	return Errorf(CodeVersionMismatch, "expected version %d, current version is %d", expected, current).
		With("expected_version", expected).With("current_version", current).
		With("provider", "git").With("revision", revision)
}

// EndExecution closes the lease's current execution (release, completion):
// status released at now, the current holder ended with reason. Version and
// epoch are kept.
func EndExecution(l *Lease, now time.Time, reason string) {
	t := now
	l.Status = LeaseReleased
	l.ReleasedAt = &t
	if n := len(l.Holders); n > 0 && l.Holders[n-1].EndedAt == nil {
		l.Holders[n-1].EndedAt = &t
		l.Holders[n-1].EndReason = reason
	}
}
