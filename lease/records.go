package lease

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// FormatVersion is the store format this build writes. A store recording a
// newer format is refused for writing (store_format_unsupported).
//
// Format 1: records only. Format 2: every state commit records its request
// (Loopx-Request), so history can be re-verified (operation.go). Format 3:
// the store has an id (store_id) and may name admins (governance.go).
// Format 4: receipts keep their id and request digest as 24 hex digits
// (receipt.go), and so does the Loopx-Receipt trailer.
const FormatVersion = 4

// Status values.
const (
	GoalActive   = "active"
	GoalArchived = "archived"

	HandoffSoftClaim = "soft_claim"
	HandoffHardLease = "hard_lease"

	AgentRegistered   = "registered"
	AgentUnregistered = "unregistered"

	RoleAgent        = "agent"
	RoleOrchestrator = "orchestrator"

	TodoOpen       = "open"
	TodoDone       = "done"
	TodoSuperseded = "superseded"

	LeaseActive   = "active"
	LeaseReleased = "released"
)

// Lifecycle authorities an orchestrator can hold over claimed todos.
var LifecycleAuthorities = []string{"complete", "update", "supersede", "reassign"}

// Priorities, highest first.
var Priorities = []string{"P0", "P1", "P2", "P3", "P4"}

// DefaultPriority is given to todos added without --priority.
const DefaultPriority = "P2"

// StoreMeta is the root record (loopx.yaml).
type StoreMeta struct {
	FormatVersion int `yaml:"format_version" json:"format_version"`
	// StoreID names the store (made at init, or by the upgrade to format
	// 3): a clone refuses a remote that serves another store
	// (store_mismatch). "" only in stores older than format 3.
	StoreID   string    `yaml:"store_id,omitempty" json:"store_id,omitempty"`
	CreatedAt time.Time `yaml:"created_at" json:"created_at"`
	// MaxClockSkewSeconds bounds how far the head may be dated ahead of a
	// deciding machine's clock (0: DefaultMaxClockSkewSeconds; clock.go).
	MaxClockSkewSeconds int64 `yaml:"max_clock_skew_seconds,omitempty" json:"max_clock_skew_seconds,omitempty"`
	// RequireSignatures makes every later state commit need the acting
	// agent's signature (signature.go). Once on, it stays on.
	RequireSignatures bool `yaml:"require_signatures,omitempty" json:"require_signatures,omitempty"`
	// Admins govern the store (governance.go): with none the store is
	// open. Sorted by id.
	Admins []Admin `yaml:"admins,omitempty" json:"admins,omitempty"`
	// Registration is who may register agents: "" or RegistrationOpen
	// (agents register themselves as plain agents), or RegistrationAdmin
	// (only an admin registers agents).
	Registration string `yaml:"registration,omitempty" json:"registration,omitempty"`
}

// Admin is one administrator of a store (governance.go).
type Admin struct {
	ID string `yaml:"admin_id" json:"admin_id"`
	// SigningKey is the admin's SSH public key ("type base64"), which
	// signs its governance commits in a store that requires signatures.
	SigningKey string    `yaml:"signing_key,omitempty" json:"signing_key,omitempty"`
	AddedAt    time.Time `yaml:"added_at" json:"added_at"`
	AddedBy    string    `yaml:"added_by,omitempty" json:"added_by,omitempty"`
}

// Registration modes of a store.
const (
	RegistrationOpen  = "open"
	RegistrationAdmin = "admin"
)

// Goal is a unit of coordinated work.
type Goal struct {
	ID          string    `yaml:"goal_id" json:"goal_id"`
	Title       string    `yaml:"title" json:"title"`
	Status      string    `yaml:"status" json:"status"`
	HandoffMode string    `yaml:"handoff_mode" json:"handoff_mode"`
	CreatedBy   string    `yaml:"created_by,omitempty" json:"created_by,omitempty"`
	CreatedAt   time.Time `yaml:"created_at" json:"created_at"`
	UpdatedAt   time.Time `yaml:"updated_at" json:"updated_at"`
}

// Agent is an agent's registration in one goal.
type Agent struct {
	ID                 string   `yaml:"agent_id" json:"agent_id"`
	Role               string   `yaml:"role" json:"role"`
	LifecycleAuthority []string `yaml:"lifecycle_authority,omitempty" json:"lifecycle_authority"`
	RequiresReason     bool     `yaml:"requires_reason,omitempty" json:"requires_reason"`
	Status             string   `yaml:"status" json:"status"`
	// Registration counts the agent's registrations in this goal (1 for the
	// first); a lease records the registration it was granted under.
	Registration int64     `yaml:"registration,omitempty" json:"registration"`
	RegisteredAt time.Time `yaml:"registered_at" json:"registered_at"`
	UpdatedAt    time.Time `yaml:"updated_at" json:"updated_at"`
	// SigningKey is the agent's SSH public key for signed commits, in
	// authorized_keys format without a comment ("ssh-ed25519 AAAA..."), or
	// "" (see CheckSigningKey).
	SigningKey string `yaml:"signing_key,omitempty" json:"signing_key,omitempty"`
}

// MarshalJSON shows an agent in results: lifecycle_authority is [] when the
// agent has none (the record omits it; results never show a null list).
func (a Agent) MarshalJSON() ([]byte, error) {
	type plain Agent
	p := plain(a)
	if p.LifecycleAuthority == nil {
		p.LifecycleAuthority = []string{}
	}
	return json.Marshal(p)
}

// Registered reports whether the agent is currently registered.
func (a *Agent) Registered() bool { return a != nil && a.Status == AgentRegistered }

// NoteFacts are the todo facts a continuation note was written against.
type NoteFacts struct {
	ClaimedBy  string `yaml:"claimed_by,omitempty" json:"claimed_by,omitempty"`
	LeaseOwner string `yaml:"lease_owner,omitempty" json:"lease_owner,omitempty"`
	LeaseEpoch int64  `yaml:"lease_epoch,omitempty" json:"lease_epoch,omitempty"`
}

// Note is a continuation note; its text keeps its bytes.
type Note struct {
	Text   string    `yaml:"text" json:"text"`
	Author string    `yaml:"author" json:"author"`
	At     time.Time `yaml:"at" json:"at"`
	Facts  NoteFacts `yaml:"facts" json:"facts"`
}

// Todo is one task of a goal.
type Todo struct {
	ID                  string     `yaml:"todo_id" json:"todo_id"`
	Text                string     `yaml:"text" json:"text"`
	Status              string     `yaml:"status" json:"status"`
	Priority            string     `yaml:"priority" json:"priority"`
	DependsOn           []string   `yaml:"depends_on,omitempty" json:"depends_on"`
	RequiredWriteScopes []string   `yaml:"required_write_scopes,omitempty" json:"required_write_scopes"`
	BoundAgent          string     `yaml:"bound_agent,omitempty" json:"bound_agent,omitempty"`
	ExcludedAgents      []string   `yaml:"excluded_agents,omitempty" json:"excluded_agents"`
	ClaimedBy           string     `yaml:"claimed_by,omitempty" json:"claimed_by,omitempty"`
	ClaimScopeAgentID   string     `yaml:"claim_scope_agent_id,omitempty" json:"claim_scope_agent_id,omitempty"`
	ClaimTTLMinutes     int64      `yaml:"claim_ttl_minutes,omitempty" json:"claim_ttl_minutes,omitempty"`
	ClaimedAt           *time.Time `yaml:"claimed_at,omitempty" json:"claimed_at,omitempty"`
	ClaimExpiresAt      *time.Time `yaml:"claim_expires_at,omitempty" json:"claim_expires_at,omitempty"`
	Notes               []Note     `yaml:"notes,omitempty" json:"notes"`
	Evidence            []string   `yaml:"evidence,omitempty" json:"evidence"`
	SupersededBy        string     `yaml:"superseded_by,omitempty" json:"superseded_by,omitempty"`
	Reason              string     `yaml:"reason,omitempty" json:"reason,omitempty"`
	Archived            bool       `yaml:"archived,omitempty" json:"archived"`
	CreatedBy           string     `yaml:"created_by" json:"created_by"`
	CreatedAt           time.Time  `yaml:"created_at" json:"created_at"`
	UpdatedBy           string     `yaml:"updated_by" json:"updated_by"`
	UpdatedAt           time.Time  `yaml:"updated_at" json:"updated_at"`
	ClosedBy            string     `yaml:"closed_by,omitempty" json:"closed_by,omitempty"`
	ClosedAt            *time.Time `yaml:"closed_at,omitempty" json:"closed_at,omitempty"`
	// LeaseEpoch is the epoch of the todo's lease record (0: it never had
	// one): the fencing token's high-water mark, which a per-todo read
	// checks against the lease record (generation.go).
	LeaseEpoch int64 `yaml:"lease_epoch,omitempty" json:"-"`
}

// Holder is one execution in a todo's lease history (one epoch).
type Holder struct {
	Epoch          int64      `yaml:"epoch" json:"epoch"`
	Owner          string     `yaml:"owner" json:"owner"`
	IdempotencyKey string     `yaml:"idempotency_key" json:"idempotency_key"`
	StartedAt      time.Time  `yaml:"started_at" json:"started_at"`
	EndedAt        *time.Time `yaml:"ended_at,omitempty" json:"ended_at,omitempty"`
	// EndReason is released, transferred, expired (recorded at takeover) or completed.
	EndReason string `yaml:"end_reason,omitempty" json:"end_reason,omitempty"`
}

// Lease is the task lease of one todo: the current execution and its history.
type Lease struct {
	TodoID         string     `yaml:"todo_id" json:"todo_id"`
	Owner          string     `yaml:"owner" json:"owner"`
	IdempotencyKey string     `yaml:"idempotency_key" json:"idempotency_key"`
	Version        int64      `yaml:"version" json:"version"`
	Epoch          int64      `yaml:"epoch" json:"epoch"`
	Status         string     `yaml:"status" json:"status"`
	WriteScopes    []string   `yaml:"write_scopes" json:"write_scopes"`
	AcquiredAt     time.Time  `yaml:"acquired_at" json:"acquired_at"`
	RenewedAt      *time.Time `yaml:"renewed_at,omitempty" json:"renewed_at"`
	ExpiresAt      time.Time  `yaml:"expires_at" json:"expires_at"`
	ReleasedAt     *time.Time `yaml:"released_at,omitempty" json:"released_at"`
	// OwnerRegistration is the owner's registration the execution was
	// granted under; after the owner registers again it is void.
	OwnerRegistration int64 `yaml:"owner_registration,omitempty" json:"-"`
	// Holders are the todo's last MaxHolders executions, oldest first; the
	// last one is the current execution (holders.go).
	Holders []Holder `yaml:"holders" json:"-"`
	// RetiredKeys holds the keys of the executions that left Holders, as a
	// sorted set of key hashes (holders.go): with the holders' keys, every
	// key the todo has seen.
	RetiredKeys string `yaml:"retired_keys,omitempty" json:"-"`
	// Receipts are the receipts of the operations on the current and the
	// previous execution that a retry can still need, oldest first
	// (retention.go).
	Receipts []Receipt `yaml:"receipts,omitempty" json:"-"`
	// RetiredAcquires is the set of hashes of the acquire receipts that
	// left Receipts (identity and digest), so their retries are still
	// recognised (retention.go).
	RetiredAcquires string `yaml:"retired_acquires,omitempty" json:"-"`
}

// Receipt is the durable result of one lease operation, keyed by its identity.
type Receipt struct {
	ID              string    `yaml:"receipt_id" json:"receipt_id"`
	Operation       string    `yaml:"operation" json:"operation"`
	GoalID          string    `yaml:"goal_id" json:"goal_id"`
	TodoID          string    `yaml:"todo_id" json:"todo_id"`
	Owner           string    `yaml:"owner" json:"owner"`
	IdempotencyKey  string    `yaml:"idempotency_key" json:"idempotency_key"`
	ExpectedVersion *int64    `yaml:"expected_version,omitempty" json:"expected_version,omitempty"`
	RequestDigest   string    `yaml:"request_digest" json:"request_digest"`
	Status          string    `yaml:"status" json:"status"`
	DecidedAt       time.Time `yaml:"decided_at" json:"decided_at"`
	// DecidedOn is the revision the decision was made on; the receipt's own
	// commit is that revision's child on the state ref.
	DecidedOn     string `yaml:"decided_on,omitempty" json:"decided_on,omitempty"`
	Lease         *Lease `yaml:"lease,omitempty" json:"lease,omitempty"`
	TransferClaim bool   `yaml:"transfer_claim,omitempty" json:"transfer_claim,omitempty"`
	ClaimedBy     string `yaml:"claimed_by,omitempty" json:"claimed_by,omitempty"`
	TodoChanged   bool   `yaml:"todo_changed,omitempty" json:"todo_changed,omitempty"`
}

func oneOf(field, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("%s %q is not one of %v", field, v, allowed)
	}
	return nil
}

func checkAll(field string, vs []string, ok func(string) bool) error {
	for _, v := range vs {
		if !ok(v) {
			return fmt.Errorf("invalid %s %q", field, v)
		}
	}
	return nil
}

// checkScopeList checks the write scopes of a record: at most MaxScopes,
// each with a scope's syntax (validRecordScope: at most 256 bytes). A
// record holding more was not written by this loopx (requests are refused
// with invalid_write_scope): it is corrupt_record, so that nobody's scans
// pay for it. The shape rules of requests (ValidScope) are not applied:
// a scope an older loopx accepted is still matched in bounded time.
func checkScopeList(field string, scopes []string) error {
	if len(scopes) > MaxScopes {
		return fmt.Errorf("%d %s, over the limit of %d", len(scopes), field, MaxScopes)
	}
	return checkAll(field, scopes, validRecordScope)
}

// Validate checks a store meta record.
func (m *StoreMeta) Validate() error {
	if m.FormatVersion < 1 {
		return fmt.Errorf("format_version %d must be >= 1", m.FormatVersion)
	}
	if m.MaxClockSkewSeconds < 0 || m.MaxClockSkewSeconds > 86400 {
		return fmt.Errorf("max_clock_skew_seconds %d is out of range 0..86400", m.MaxClockSkewSeconds)
	}
	if m.StoreID != "" && !ValidStoreID(m.StoreID) {
		return fmt.Errorf("invalid store_id %q", m.StoreID)
	}
	if m.Registration != "" {
		if err := oneOf("registration", m.Registration, RegistrationOpen, RegistrationAdmin); err != nil {
			return err
		}
	}
	if len(m.Admins) > MaxAdmins {
		return fmt.Errorf("%d admins: at most %d", len(m.Admins), MaxAdmins)
	}
	for i, a := range m.Admins {
		if !ValidAgentID(a.ID) {
			return fmt.Errorf("invalid admin_id %q", a.ID)
		}
		if i > 0 && m.Admins[i-1].ID >= a.ID {
			return fmt.Errorf("admins must be sorted by id without repeats (%s, %s)", m.Admins[i-1].ID, a.ID)
		}
		if a.SigningKey != "" {
			if norm, err := NormalizeSigningKey(a.SigningKey); err != nil || norm != a.SigningKey {
				return fmt.Errorf("admin %s: invalid signing_key", a.ID)
			}
		}
		if a.AddedBy != "" && !ValidAgentID(a.AddedBy) {
			return fmt.Errorf("admin %s: invalid added_by %q", a.ID, a.AddedBy)
		}
	}
	return nil
}

// Validate checks a goal's schema and invariants.
func (g *Goal) Validate() error {
	if !ValidGoalID(g.ID) {
		return fmt.Errorf("invalid goal_id %q", g.ID)
	}
	if err := oneOf("status", g.Status, GoalActive, GoalArchived); err != nil {
		return err
	}
	return oneOf("handoff_mode", g.HandoffMode, HandoffSoftClaim, HandoffHardLease)
}

// Validate checks an agent registration.
func (a *Agent) Validate() error {
	if !ValidAgentID(a.ID) {
		return fmt.Errorf("invalid agent_id %q", a.ID)
	}
	if err := oneOf("role", a.Role, RoleAgent, RoleOrchestrator); err != nil {
		return err
	}
	if err := oneOf("status", a.Status, AgentRegistered, AgentUnregistered); err != nil {
		return err
	}
	if a.SigningKey != "" {
		norm, err := NormalizeSigningKey(a.SigningKey)
		if err != nil {
			return fmt.Errorf("signing_key: %v", err)
		}
		if norm != a.SigningKey {
			return fmt.Errorf("signing_key: not in the normal form %q", norm)
		}
	}
	return checkAll("lifecycle_authority", a.LifecycleAuthority, func(s string) bool { return slices.Contains(LifecycleAuthorities, s) })
}

// Validate checks a todo's schema and invariants.
func (t *Todo) Validate() error {
	if !ValidTodoID(t.ID) {
		return fmt.Errorf("invalid todo_id %q", t.ID)
	}
	if err := oneOf("status", t.Status, TodoOpen, TodoDone, TodoSuperseded); err != nil {
		return err
	}
	if err := oneOf("priority", t.Priority, Priorities...); err != nil {
		return err
	}
	if err := checkAll("depends_on", t.DependsOn, ValidTodoID); err != nil {
		return err
	}
	if err := checkScopeList("required_write_scopes", t.RequiredWriteScopes); err != nil {
		return err
	}
	if err := checkAll("excluded_agents", t.ExcludedAgents, ValidAgentID); err != nil {
		return err
	}
	for field, v := range map[string]string{"bound_agent": t.BoundAgent, "claimed_by": t.ClaimedBy, "claim_scope_agent_id": t.ClaimScopeAgentID} {
		if v != "" && !ValidAgentID(v) {
			return fmt.Errorf("invalid %s %q", field, v)
		}
	}
	if t.ClaimedBy == "" && (t.ClaimScopeAgentID != "" || t.ClaimExpiresAt != nil) {
		return fmt.Errorf("claim fields set without claimed_by")
	}
	if t.LeaseEpoch < 0 || t.LeaseEpoch > MaxGeneration {
		return fmt.Errorf("lease_epoch %d out of range 0..2^53-1", t.LeaseEpoch)
	}
	if t.ClaimTTLMinutes < 0 {
		return fmt.Errorf("claim_ttl_minutes %d is negative", t.ClaimTTLMinutes)
	}
	if t.SupersededBy != "" && !ValidTodoID(t.SupersededBy) {
		return fmt.Errorf("invalid superseded_by %q", t.SupersededBy)
	}
	if t.CreatedBy != "" && !ValidAgentID(t.CreatedBy) {
		return fmt.Errorf("invalid created_by %q", t.CreatedBy)
	}
	return nil
}

// Validate checks a lease record.
func (l *Lease) Validate() error {
	if !ValidTodoID(l.TodoID) {
		return fmt.Errorf("invalid todo_id %q", l.TodoID)
	}
	if !ValidAgentID(l.Owner) {
		return fmt.Errorf("invalid owner %q", l.Owner)
	}
	if !ValidIdempotencyKey(l.IdempotencyKey) {
		return fmt.Errorf("invalid idempotency_key %q", l.IdempotencyKey)
	}
	if l.Version < 1 || l.Version > MaxGeneration || l.Epoch < 1 || l.Epoch > MaxGeneration {
		return fmt.Errorf("version %d / epoch %d out of range 1..2^53-1", l.Version, l.Epoch)
	}
	if err := oneOf("status", l.Status, LeaseActive, LeaseReleased); err != nil {
		return err
	}
	if l.Status == LeaseReleased && l.ReleasedAt == nil {
		return fmt.Errorf("released lease without released_at")
	}
	if err := checkScopeList("write_scopes", l.WriteScopes); err != nil {
		return err
	}
	for _, h := range l.Holders {
		if !ValidAgentID(h.Owner) || !ValidIdempotencyKey(h.IdempotencyKey) {
			return fmt.Errorf("invalid holder %q/%q", h.Owner, h.IdempotencyKey)
		}
	}
	if err := checkRetiredKeys(l.RetiredKeys); err != nil {
		return err
	}
	for i := range l.Receipts {
		r := &l.Receipts[i]
		if err := r.Validate(); err != nil {
			return fmt.Errorf("receipts[%d]: %v", i, err)
		}
		if r.TodoID != l.TodoID || r.Lease == nil {
			return fmt.Errorf("receipts[%d]: a receipt of another todo, or without its lease", i)
		}
	}
	return checkHashSet("retired_acquires", l.RetiredAcquires)
}

// isHex reports whether s is lowercase hex digits.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Validate checks a receipt.
func (r *Receipt) Validate() error {
	if len(r.ID) != 64 && (len(r.ID) != ShortHashDigits || !isHex(r.ID)) {
		return fmt.Errorf("invalid receipt_id %q", r.ID)
	}
	if r.Operation == "" || r.RequestDigest == "" {
		return fmt.Errorf("receipt without operation or request_digest")
	}
	if err := oneOf("status", r.Status, "applied", "no_change"); err != nil {
		return err
	}
	if r.Lease != nil {
		return r.Lease.Validate()
	}
	return nil
}
