package lease

// task-lease release.
//
// Decisions (where contract section 5 is silent):
//   - Release is cleanup: only the request fields, the goal's and todo's
//     existence and the exact proof are checked. Expiry, an unregistered or
//     excluded owner, a moved claim, a closed or archived todo and an
//     archived goal never block it.
//   - A todo without a lease at expected version 0, and an already released
//     lease matching owner, key and version, give a durable no_change
//     receipt: Write is true (the receipt is committed), the lease is not
//     touched, BoardChanged is false. A todo without a lease at another
//     version is version_mismatch (current 0).
//   - An applied release keeps version and epoch (no generation check) and
//     ends the current holder with reason "released".

import "time"

// ReleaseRequest ends the current execution.
type ReleaseRequest struct {
	Goal            string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo            string `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Owner           string `json:"owner,omitempty" desc:"lease owner, the acting agent (default: the goal's only agent)"`
	IdempotencyKey  string `json:"idempotency_key,omitempty" desc:"the current execution key" required:"true"`
	ExpectedVersion *int64 `json:"expected_version,omitempty" desc:"the current lease version" required:"true"`
}

// Release decides a task-lease release.
func Release(v *View, req ReleaseRequest, now time.Time) (*Outcome, error) {
	if err := checkProofRequest(req.Goal, req.Todo, req.Owner, req.IdempotencyKey); err != nil {
		return nil, err
	}
	expected, err := requireExpectedVersion("release", req.ExpectedVersion)
	if err != nil {
		return nil, err
	}
	if _, err := RequireGoal(v, req.Goal); err != nil {
		return nil, err
	}
	id := MaintenanceReceiptID(OpLeaseRelease, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, expected)
	digest := maintenanceDigest(id, 0, "", "", false)
	rec, err := findOperationReceipt(v, req.Goal, req.Todo, req.Owner, req.IdempotencyKey, id, digest, expected)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		return replayOutcome(v, rec, now)
	}

	if _, err := RequireTodo(v, req.Goal, req.Todo); err != nil {
		return nil, err
	}
	l, err := v.Lease(req.Goal, req.Todo)
	if err != nil {
		return nil, err
	}
	exp := expected
	r := &Receipt{ID: v.hashForm()(id), Operation: OpLeaseRelease, GoalID: req.Goal, TodoID: req.Todo,
		Owner: req.Owner, IdempotencyKey: req.IdempotencyKey, ExpectedVersion: &exp,
		RequestDigest: v.hashForm()(digest), Status: StatusApplied}
	if l == nil {
		if expected != 0 {
			return nil, VersionMismatch(expected, 0, v.Revision)
		}
		r.Status = StatusNoChange
		writeReceipt(v, r, nil, now)
		return appliedOutcome(v, r, nil, false, now)
	}
	if err := CheckProof(l, req.Owner, req.IdempotencyKey, expected, v.Revision); err != nil {
		return nil, err
	}
	if l.Status == LeaseReleased {
		r.Status = StatusNoChange
		writeReceipt(v, r, l, now)
		return appliedOutcome(v, r, l, false, now)
	}
	EndExecution(l, now, EndReleased)
	v.PutLease(req.Goal, l)
	writeReceipt(v, r, l, now)
	return appliedOutcome(v, r, l, true, now)
}
