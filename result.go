package loopx

import (
	"encoding/json"

	"github.com/loopx-dev/loopx/lease"
)

// Projection delivery states.
const (
	ProjectionDelivered   = "delivered"
	ProjectionPending     = "pending"
	ProjectionNotRequired = "not_required"
)

// Result is the outcome of one command: the envelope fields of the contract
// and the command's own fields (Data), merged at the top level in JSON.
type Result struct {
	Operation string
	// Mutation marks results of commands that can write; they carry the
	// status, revision and projection fields.
	Mutation        bool
	Status          string
	Revision        string
	CurrentRevision string
	// Cursor is current_cursor: the position of CurrentRevision on the
	// state ref's first-parent history (its number of commits, root
	// included; 0 for an empty store). It only grows while the ref moves
	// forward, so a reader can tell which of two results is newer.
	Cursor     int64
	Projection string
	// ProjectionError says why a pending board was not delivered.
	ProjectionError string
	Data            any
	// Remote describes the view of a store with a remote (remote.go).
	Remote *RemoteInfo
	// ClockSkew is set on reads of a head dated beyond the store's skew
	// bound ahead of this machine's clock (lease/clock.go).
	ClockSkew *lease.Skew
}

// MarshalJSON renders the contract's envelope.
func (r *Result) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if r.Data != nil {
		raw, err := json.Marshal(r.Data)
		if err != nil {
			return nil, err
		}
		if len(raw) > 0 && raw[0] == '{' {
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, err
			}
		} else {
			m["result"] = json.RawMessage(raw)
		}
	}
	m["ok"] = true
	m["operation"] = r.Operation
	m["provider"] = "git"
	m["current_provider_revision"] = r.CurrentRevision
	m["current_cursor"] = r.Cursor
	if r.Remote != nil {
		r.Remote.fill(m)
	}
	if r.ClockSkew != nil {
		m["clock_skew"] = r.ClockSkew
	}
	if r.Mutation {
		m["status"] = r.Status
		m["idempotent"] = r.Status != "applied"
		m["revision"] = r.Revision
		m["projection_delivery"] = r.Projection
		if r.Projection == ProjectionPending {
			m["retry_business_mutation"] = false
			if r.ProjectionError != "" {
				m["projection_error"] = r.ProjectionError
			}
		}
	}
	return json.Marshal(m)
}
