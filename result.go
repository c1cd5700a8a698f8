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

// MarshalJSON renders the contract's envelope: Data's fields (or Data as
// "result" when it is not an object) and the envelope's, merged at the top
// level (the envelope's win), with the keys of every object sorted at every
// level, as encoding/json sorts a map's. Data is marshalled once and its
// bytes reordered (sortedJSON), never decoded: the result is the bytes a
// map round trip gives, without its cost (half of a 10,000-todo list) and
// without turning large integers into floats.
func (r *Result) MarshalJSON() ([]byte, error) {
	var members []jsonMember
	var data []byte
	if r.Data != nil {
		raw, err := json.Marshal(r.Data)
		if err != nil {
			return nil, err
		}
		data = raw
		if len(raw) > 0 && raw[0] == '{' {
			if members, err = objectMembers(raw); err != nil {
				return nil, err
			}
		} else {
			members = append(members, jsonMember{key: []byte(`"result"`), value: raw})
		}
	}
	env := map[string]any{}
	env["ok"] = true
	env["operation"] = r.Operation
	env["provider"] = "git"
	env["current_provider_revision"] = r.CurrentRevision
	env["current_cursor"] = r.Cursor
	if r.Remote != nil {
		r.Remote.fill(env)
	}
	if r.ClockSkew != nil {
		env["clock_skew"] = r.ClockSkew
	}
	if r.Mutation {
		env["status"] = r.Status
		env["idempotent"] = r.Status != "applied"
		env["revision"] = r.Revision
		env["projection_delivery"] = r.Projection
		if r.Projection == ProjectionPending {
			env["retry_business_mutation"] = false
			if r.ProjectionError != "" {
				env["projection_error"] = r.ProjectionError
			}
		}
	}
	for k, v := range env {
		key, _ := json.Marshal(k)
		value, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		members = append(members, jsonMember{key: key, value: value})
	}
	out := make([]byte, 0, len(data)+64*len(env))
	return appendObject(out, members)
}
