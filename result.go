package loopx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// Projection delivery states.
const (
	ProjectionDelivered   = "delivered"
	ProjectionPending     = "pending"
	ProjectionNotRequired = "not_required"
)

// Envelope is the contract's part of every result: what each command
// reports besides its own fields (JSON: ok, operation, provider,
// current_provider_revision, current_cursor, and for mutations status,
// idempotent, revision, projection_delivery).
type Envelope struct {
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
	// Remote describes the view of a store with a remote.
	Remote *remote.Info
	// ClockSkew is set on reads of a head dated beyond the store's skew
	// bound ahead of this machine's clock (lease/clock.go).
	ClockSkew *lease.Skew
	// Attempts and LostRaces say how a mutation's transaction went: its
	// decisions, and the compare-and-swaps it lost to other writers (each
	// one a decision made again on a newer head). Not part of the JSON
	// envelope: the CLI prints them (Options.TxStats) when LOOPX_TX_STATS=1 asks.
	Attempts, LostRaces int
}

// Applied reports whether the result is a mutation that wrote (status
// applied; replayed and no_change wrote nothing).
func (e *Envelope) Applied() bool {
	return e != nil && e.Mutation && e.Status == lease.StatusApplied
}

// Result is the outcome of one command: the envelope and the command's own
// fields, its payload Data of the operation's own type (lease.LeaseResult
// for every task-lease operation, lease.TodoResult for the todo
// mutations, TodoShow for todo show, ...), merged at the top level in JSON.
type Result[T any] struct {
	Envelope
	Data T
}

// Reply is a result whatever its payload: what the command line and the
// MCP server print. Every *Result[T] is one.
type Reply interface {
	// Env is the result's envelope.
	Env() *Envelope
	// WriteJSON writes the result's JSON (see Result.WriteJSON).
	WriteJSON(w io.Writer) error
	MarshalJSON() ([]byte, error)
}

var _ Reply = (*Result[any])(nil)

// Env is the result's envelope.
func (r *Result[T]) Env() *Envelope { return &r.Envelope }

// MarshalJSON renders the contract's envelope: Data's fields (or Data as
// "result" when it is not an object) and the envelope's, merged at the top
// level (the envelope's win), with the keys of every object sorted at every
// level, as encoding/json sorts a map's (see WriteJSON).
func (r *Result[T]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteJSON writes what MarshalJSON returns to w. Once these bytes were
// made by marshalling Data, decoding it into a map, adding the envelope and
// marshalling the map (half of a 10,000-todo list, and three copies of its
// 3 MB in memory); now every value is marshalled once and its objects'
// keys reordered (sortedjson.go), and the long lists of a payload that
// names its members (a list's todos: jsonFields) are marshalled and
// written one element at a time, so the result is never held whole. The
// bytes are the round trip's (TestResultJSONBytesUnchanged).
func (r *Result[T]) WriteJSON(w io.Writer) error {
	return r.Envelope.writeJSON(w, r.Data)
}

// jsonField is one member of a payload that names its members.
type jsonField struct {
	name  string
	value any
}

// fielded is a payload that lists its JSON members itself (in any order),
// so that its long lists are written element by element. Its members are
// what json.Marshal writes of it (TestResultJSONBytesUnchanged).
type fielded interface {
	jsonFields() []jsonField
}

// writeJSON writes the envelope merged with the payload data.
func (e *Envelope) writeJSON(w io.Writer, data any) error {
	var members []jsonMember
	lazy := map[int]any{} // member index → value written element by element
	if f, ok := data.(fielded); ok {
		for _, fd := range f.jsonFields() {
			key, _ := json.Marshal(fd.name)
			if isLongList(fd.value) {
				lazy[len(members)] = fd.value
				members = append(members, jsonMember{key: key})
				continue
			}
			value, err := json.Marshal(fd.value)
			if err != nil {
				return err
			}
			members = append(members, jsonMember{key: key, value: value})
		}
	} else if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return err
		}
		if len(raw) > 0 && raw[0] == '{' {
			if members, err = objectMembers(raw); err != nil {
				return err
			}
		} else {
			members = append(members, jsonMember{key: []byte(`"result"`), value: raw})
		}
	}
	env := map[string]any{}
	env["ok"] = true
	env["operation"] = e.Operation
	env["provider"] = "git"
	env["current_provider_revision"] = e.CurrentRevision
	env["current_cursor"] = e.Cursor
	if e.Remote != nil {
		e.Remote.Fill(env)
	}
	if e.ClockSkew != nil {
		env["clock_skew"] = e.ClockSkew
	}
	if e.Mutation {
		env["status"] = e.Status
		env["idempotent"] = e.Status != "applied"
		env["revision"] = e.Revision
		env["projection_delivery"] = e.Projection
		if e.Projection == ProjectionPending {
			env["retry_business_mutation"] = false
			if e.ProjectionError != "" {
				env["projection_error"] = e.ProjectionError
			}
		}
	}
	for k, v := range env {
		key, _ := json.Marshal(k)
		value, err := json.Marshal(v)
		if err != nil {
			return err
		}
		members = append(members, jsonMember{key: key, value: value})
	}
	if len(lazy) == 0 {
		out, err := appendObject(nil, members)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	// The envelope never holds a long list: order the members, then write
	// the long lists' elements as they are marshalled.
	idx := make([]int, len(members))
	for i := range idx {
		idx[i] = i
	}
	names := make([][]byte, len(members))
	for i, m := range members {
		k, err := keyBytes(m.key)
		if err != nil {
			return err
		}
		names[i] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(names[a], names[b]) })
	bw := bufio.NewWriterSize(w, 64<<10)
	var s jsonSorter
	var buf []byte
	bw.WriteByte('{')
	first := true
	for n, i := range idx {
		if n+1 < len(idx) && bytes.Equal(names[idx[n+1]], names[i]) {
			continue // a later member of the same key wins
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.Write(members[i].key)
		bw.WriteByte(':')
		if v, ok := lazy[i]; ok {
			if err := writeList(bw, &s, v); err != nil {
				return err
			}
			continue
		}
		var err error
		if buf, err = s.appendValue(buf[:0], members[i].value); err != nil {
			return err
		}
		bw.Write(buf)
	}
	bw.WriteByte('}')
	return bw.Flush()
}

// longList is the length from which a list in a map Data is written
// element by element.
const longList = 64

// isLongList reports whether v is a slice (not bytes, which JSON writes as
// base64) of at least longList elements.
func isLongList(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8 && rv.Len() >= longList
}

// writeList writes the slice v as encoding/json writes it inside a map,
// one element at a time: each element is marshalled through its address,
// as the elements of a slice are addressable (so methods on the pointer
// apply as they would there).
//
// A list of todo views (list, ready) is written by appendTodoView, each
// view it cannot write the same way as any other element.
func writeList(w *bufio.Writer, s *jsonSorter, v any) error {
	views, _ := v.([]lease.TodoView)
	rv := reflect.ValueOf(v)
	var buf []byte
	w.WriteByte('[')
	for i := 0; i < rv.Len(); i++ {
		if i > 0 {
			w.WriteByte(',')
		}
		if views != nil {
			var ok bool
			if buf, ok = appendTodoView(buf[:0], &views[i]); ok {
				w.Write(buf)
				continue
			}
		}
		raw, err := json.Marshal(rv.Index(i).Addr().Interface())
		if err != nil {
			return err
		}
		if buf, err = s.appendValue(buf[:0], raw); err != nil {
			return err
		}
		w.Write(buf)
	}
	return w.WriteByte(']')
}

// annotate adds to a result's envelope its cursor and, for a store with a
// remote, the remote view.
func (s *Store) annotate(e *Envelope, checkedAt time.Time) {
	if e.CurrentRevision != "" {
		e.Cursor, _ = s.repo.Depth(gitstore.ParseHash(e.CurrentRevision))
	}
	e.Remote = s.remote.Info(checkedAt)
}

// NewResult is the result of a command that is neither a decision nor a
// read of one (log, gc, guard, sync...): its envelope annotated with the
// cursor and remote view, checkedAt the clock reading of a read (zero:
// none).
func NewResult[T any](s *Store, e Envelope, checkedAt time.Time, data T) *Result[T] {
	s.annotate(&e, checkedAt)
	return &Result[T]{Envelope: e, Data: data}
}

// annotateErr adds to a version_mismatch its current_cursor: the position
// of the revision it was decided on (its "revision" detail), as a result's
// current_cursor is that of current_provider_revision (seed 000: a version
// conflict exposes provider, revision and cursor).
func (s *Store) annotateErr(err error) error {
	e, ok := lease.AsError(err)
	if !ok || e.Code != lease.CodeVersionMismatch {
		return err
	}
	if _, done := e.Details["current_cursor"]; done {
		return err
	}
	if rev, _ := e.Details["revision"].(string); rev != "" {
		if n, derr := s.repo.Depth(gitstore.ParseHash(rev)); derr == nil {
			e.With("current_cursor", n)
		}
	}
	return err
}
