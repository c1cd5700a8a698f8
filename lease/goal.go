package lease

import (
	"fmt"
	"strings"
	"time"
)

// GoalCreateRequest creates a goal.
type GoalCreateRequest struct {
	Goal        string `json:"goal_id,omitempty" desc:"goal id" required:"true"`
	Title       string `json:"title,omitempty" desc:"title (default: the goal id)"`
	HandoffMode string `json:"handoff_mode,omitempty" desc:"soft_claim or hard_lease (default soft_claim)"`
	Actor       string `json:"agent_id,omitempty" desc:"acting agent (recorded as author)"`
}

// GoalArchiveRequest archives (or unarchives) a goal; the goal is never
// inferred.
type GoalArchiveRequest struct {
	Goal  string `json:"goal_id,omitempty" desc:"goal id" required:"true"`
	Actor string `json:"agent_id,omitempty" desc:"acting agent (recorded as author)"`
}

// GoalUnarchiveRequest makes an archived goal (named explicitly) active.
type GoalUnarchiveRequest GoalArchiveRequest

// InitRequest creates the store's root record at a format version, or
// changes the store's settings.
type InitRequest struct {
	FormatVersion int `json:"format_version,omitempty" desc:"the store format written" required:"true"`
	// StoreID names a new store (ignored, and cleared by the resolver,
	// when the store exists).
	StoreID string `json:"store_id,omitempty" desc:"the new store's id (32 hex digits; made by loopx)"`
	// MaxClockSkewSeconds sets the store's clock-skew bound (0: keep it,
	// or the default on a new store).
	MaxClockSkewSeconds int64 `json:"max_clock_skew_seconds,omitempty" desc:"how far the head may be dated ahead of a deciding machine's clock (default 30)"`
	// RequireSignatures turns on signed state commits (false: keep the
	// store's setting; it cannot be turned off).
	RequireSignatures bool `json:"require_signatures,omitempty" desc:"every later state commit must be signed by its acting agent's registered key (cannot be turned off)"`
	// Admin adds an admin (with AdminKey, its signing key).
	Admin    string `json:"admin_id,omitempty" desc:"an admin to add (governance.go); the first closes an open store"`
	AdminKey string `json:"admin_signing_key,omitempty" desc:"the admin's SSH public key (authorized_keys format)"`
	// Registration sets who registers agents: open or admin ("": keep).
	Registration string `json:"registration,omitempty" desc:"open (agents register themselves) or admin (only an admin registers agents)"`
	// By is the admin who changes the settings of a governed store.
	By string `json:"by_agent_id,omitempty" desc:"the admin who changes the settings of a store that has admins"`
}

func resolveInit(v *View, d Defaults, now time.Time, r *InitRequest) error {
	if m, err := v.Meta(); err == nil && m != nil {
		r.StoreID = ""
	}
	if r.AdminKey != "" {
		if norm, err := NormalizeSigningKey(r.AdminKey); err == nil {
			r.AdminKey = norm
		}
	}
	return nil
}

// GoalData is the result of goal commands.
type GoalData struct {
	GoalID string `json:"goal_id"`
	Goal   *Goal  `json:"goal"`
}

// CreateGoal adds a goal; the store must be initialized and the id unused.
func CreateGoal(v *View, req GoalCreateRequest, now time.Time) (*Outcome, error) {
	if err := CheckGoalID(req.Goal); err != nil {
		return nil, err
	}
	if req.HandoffMode == "" {
		req.HandoffMode = HandoffSoftClaim
	}
	if req.HandoffMode != HandoffSoftClaim && req.HandoffMode != HandoffHardLease {
		return nil, Errorf(CodeInvalidRequest, "handoff mode %q: want soft_claim or hard_lease", req.HandoffMode)
	}
	if req.Actor != "" {
		if err := CheckAgentID("agent id", req.Actor); err != nil {
			return nil, err
		}
	}
	if _, err := RequireStore(v); err != nil {
		return nil, err
	}
	old, err := v.Goal(req.Goal)
	if err != nil {
		return nil, err
	}
	title := req.Title
	if title == "" {
		title = req.Goal
	}
	if old != nil {
		if old.Title == title && old.HandoffMode == req.HandoffMode && old.CreatedBy == req.Actor {
			// The same goal created again (a retry): a replay.
			return &Outcome{Operation: OpGoalCreate, Status: StatusReplayed, Goal: old.ID, Actor: req.Actor,
				Data: GoalData{GoalID: old.ID, Goal: old}}, nil
		}
		return nil, Errorf(CodeGoalExists, "goal %s already exists (with other facts)", req.Goal)
	}
	g := &Goal{ID: req.Goal, Title: req.Title, Status: GoalActive, HandoffMode: req.HandoffMode,
		CreatedBy: req.Actor, CreatedAt: now, UpdatedAt: now}
	if g.Title == "" {
		g.Title = req.Goal
	}
	v.PutGoal(g)
	return &Outcome{Operation: OpGoalCreate, Status: StatusApplied, Goal: g.ID, Actor: req.Actor,
		Write: true, BoardChanged: true, Data: GoalData{GoalID: g.ID, Goal: g}}, nil
}

// ArchiveGoal marks a goal archived; archiving an archived goal is
// no_change. The goal must be named: archiving is never inferred.
func ArchiveGoal(v *View, req GoalArchiveRequest, now time.Time) (*Outcome, error) {
	return setGoalStatus(v, req, OpGoalArchive, GoalArchived, now)
}

// UnarchiveGoal makes an archived goal active again; an active goal is
// no_change.
func UnarchiveGoal(v *View, req GoalUnarchiveRequest, now time.Time) (*Outcome, error) {
	return setGoalStatus(v, GoalArchiveRequest(req), OpGoalUnarchive, GoalActive, now)
}

func setGoalStatus(v *View, req GoalArchiveRequest, op, status string, now time.Time) (*Outcome, error) {
	if req.Goal == "" {
		return nil, Errorf(CodeInvalidGoalID, "%s needs an explicit goal id (--goal-id): it is never inferred", op)
	}
	if req.Actor != "" {
		if err := CheckAgentID("agent id", req.Actor); err != nil {
			return nil, err
		}
	}
	g, err := RequireGoal(v, req.Goal)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: op, Status: StatusNoChange, Goal: req.Goal, Actor: req.Actor, Data: GoalData{GoalID: req.Goal, Goal: g}}
	if g.Status == status {
		return o, nil
	}
	m, err := RequireStore(v)
	if err != nil {
		return nil, err
	}
	if err := RequireAdmin(m, req.Actor, strings.Replace(op, ".", " ", 1)); err != nil {
		return nil, err
	}
	g.Status, g.UpdatedAt = status, now
	v.PutGoal(g)
	o.Status, o.Write, o.BoardChanged = StatusApplied, true, true
	return o, nil
}

// ActiveGoals lists the goals that are not archived.
func ActiveGoals(v *View) ([]*Goal, error) {
	all, err := v.Goals()
	if err != nil {
		return nil, err
	}
	var out []*Goal
	for _, g := range all {
		if g.Status == GoalActive {
			out = append(out, g)
		}
	}
	return out, nil
}

// Init creates the store meta record at the requested format; on an
// initialized store it changes the settings the request names (an admin's
// to do in a governed store: governance.go), and is no_change when they
// are already so. A store of a newer format is refused.
func Init(v *View, req InitRequest, now time.Time) (*Outcome, error) {
	if err := checkFormatRequest(req.FormatVersion); err != nil {
		return nil, err
	}
	m, err := v.Meta()
	if err != nil {
		return nil, err
	}
	if req.MaxClockSkewSeconds < 0 || req.MaxClockSkewSeconds > 86400 {
		return nil, Errorf(CodeInvalidRequest, "max clock skew %d seconds is out of range 1..86400", req.MaxClockSkewSeconds).With("field", "max_clock_skew_seconds")
	}
	if req.Registration != "" && req.Registration != RegistrationOpen && req.Registration != RegistrationAdmin {
		return nil, Errorf(CodeInvalidRequest, "registration %q: want open or admin", req.Registration).With("field", "registration")
	}
	if req.Admin != "" {
		if err := CheckAgentID("admin id", req.Admin); err != nil {
			return nil, err
		}
	} else if req.AdminKey != "" {
		return nil, Errorf(CodeInvalidRequest, "an admin key needs its admin (--admin ID)").With("field", "admin_signing_key")
	}
	if req.By != "" {
		if err := CheckAgentID("by", req.By); err != nil {
			return nil, err
		}
	}
	o := &Outcome{Operation: OpStoreInit, Status: StatusNoChange, Actor: req.By}
	if m != nil {
		if m.FormatVersion > FormatVersion {
			return nil, Errorf(CodeStoreFormatUnsupported, "store format %d is newer than this loopx understands (%d)", m.FormatVersion, FormatVersion)
		}
		up := *m
		changed := false
		if req.MaxClockSkewSeconds != 0 && req.MaxClockSkewSeconds != m.MaxClockSkewSeconds {
			up.MaxClockSkewSeconds, changed = req.MaxClockSkewSeconds, true
		}
		if req.RequireSignatures && !m.RequireSignatures {
			up.RequireSignatures, changed = true, true
		}
		if req.Registration != "" && req.Registration != registrationOf(m) {
			up.Registration, changed = req.Registration, true
		}
		if req.Admin != "" {
			added, err := putAdmin(v, &up, req.Admin, req.AdminKey, actorOr(req.By, req.Admin), now)
			if err != nil {
				return nil, err
			}
			changed = changed || added
		}
		if !changed {
			return o, nil
		}
		if err := RequireAdmin(m, req.By, "changing the store's settings"); err != nil {
			return nil, err
		}
		if up.RequireSignatures && !m.RequireSignatures && keyedAdmins(&up) == 0 {
			return nil, errSigningNeedsAdmin()
		}
		if o.Actor == "" && !Governed(m) && req.Admin != "" {
			o.Actor = req.Admin // an open store's first admin adds itself
		}
		v.PutMeta(&up)
		o.Status, o.Write = StatusApplied, true
		return o, nil
	}
	if req.By != "" && req.By != req.Admin {
		return nil, Errorf(CodeInvalidRequest, "a new store has no admins yet: --by names none (give --admin)").With("field", "by_agent_id")
	}
	if req.StoreID != "" && !ValidStoreID(req.StoreID) {
		return nil, Errorf(CodeInvalidRequest, "store id %q: want 32 lowercase hex digits", req.StoreID).With("field", "store_id")
	}
	nm := &StoreMeta{FormatVersion: req.FormatVersion, StoreID: req.StoreID, CreatedAt: now, MaxClockSkewSeconds: req.MaxClockSkewSeconds,
		RequireSignatures: req.RequireSignatures}
	if req.Registration != RegistrationOpen {
		nm.Registration = req.Registration
	}
	if req.Admin != "" {
		if _, err := putAdmin(v, nm, req.Admin, req.AdminKey, "", now); err != nil {
			return nil, err
		}
		o.Actor = req.Admin
	}
	if nm.RequireSignatures && keyedAdmins(nm) == 0 {
		return nil, errSigningNeedsAdmin()
	}
	v.PutMeta(nm)
	o.Status, o.Write = StatusApplied, true
	return o, nil
}

func errSigningNeedsAdmin() *Error {
	return Errorf(CodeInvalidRequest, "a store that requires signatures needs an admin with a signing key: add --admin ID --admin-key FILE.pub").With("field", "admin_signing_key")
}

// registrationOf is the store's registration mode (open when unset).
func registrationOf(m *StoreMeta) string {
	if m == nil || m.Registration == "" {
		return RegistrationOpen
	}
	return m.Registration
}

// UpgradeRequest moves a store to a newer format.
type UpgradeRequest struct {
	FormatVersion int `json:"format_version,omitempty" desc:"the format to upgrade to" required:"true"`
	// StoreID names the store when the upgrade gives it its id (format
	// 3); cleared by the resolver when the store has one.
	StoreID string `json:"store_id,omitempty" desc:"the store's id, given by the upgrade to format 3 (32 hex digits; made by loopx)"`
}

func resolveUpgrade(v *View, d Defaults, now time.Time, r *UpgradeRequest) error {
	if m, err := v.Meta(); err == nil && m != nil && (m.StoreID != "" || r.FormatVersion < 3) {
		r.StoreID = ""
	}
	return nil
}

// Upgrade records that the store is now at the requested format. From
// format 2 on, every state commit carries its recorded request; the
// upgrade is itself such a commit, so history before it is "made by an
// older loopx" and every commit after it must verify. Format 3 gives the
// store its id (store_id). A store at that format already is no_change; a
// newer one is refused.
func Upgrade(v *View, req UpgradeRequest, now time.Time) (*Outcome, error) {
	if err := checkFormatRequest(req.FormatVersion); err != nil {
		return nil, err
	}
	m, err := RequireStore(v)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Operation: OpStoreUpgrade, Status: StatusNoChange}
	if m.FormatVersion >= req.FormatVersion {
		return o, nil
	}
	if m.FormatVersion < 2 && req.FormatVersion >= 2 {
		if err := backfillGenerations(v); err != nil {
			return nil, err
		}
	}
	up := *m
	up.FormatVersion = req.FormatVersion
	if req.FormatVersion >= 3 && m.StoreID == "" {
		if !ValidStoreID(req.StoreID) {
			return nil, Errorf(CodeInvalidRequest, "the upgrade to format %d gives the store its id: store_id %q is not 32 lowercase hex digits", req.FormatVersion, req.StoreID).With("field", "store_id")
		}
		up.StoreID = req.StoreID
	}
	v.PutMeta(&up)
	o.Status, o.Write = StatusApplied, true
	return o, nil
}

// backfillGenerations records each lease's epoch in its todo, which format
// 2 checks on every per-todo read (generation.go).
func backfillGenerations(v *View) error {
	goals, err := v.Goals()
	if err != nil {
		return err
	}
	for _, g := range goals {
		leases, err := v.Leases(g.ID)
		if err != nil {
			return err
		}
		for _, l := range leases {
			t, err := v.Todo(g.ID, l.TodoID)
			if err != nil {
				return err
			}
			if t == nil {
				return Corrupt(LeasePath(g.ID, l.TodoID), fmt.Errorf("a lease record of todo %s, which does not exist", l.TodoID))
			}
			if t.LeaseEpoch != l.Epoch {
				t.LeaseEpoch = l.Epoch
				v.PutTodo(g.ID, t)
			}
		}
	}
	return nil
}

func checkFormatRequest(f int) error {
	if f < 1 || f > FormatVersion {
		return Errorf(CodeStoreFormatUnsupported, "store format %d: this loopx writes formats 1..%d", f, FormatVersion).With("field", "format_version")
	}
	return nil
}
