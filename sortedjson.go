package loopx

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loopx-dev/loopx/lease"
)

// The JSON of results has the keys of every object sorted, as encoding/json
// sorts a map's keys. Result.MarshalJSON once got there by decoding its
// data into a map and encoding it again; here the bytes encoding/json made
// are reordered instead: each object's members are found by scanning (a
// value is skipped over, never decoded) and written in key order, the last
// of equal keys kept (as a map keeps the last one decoded). Strings,
// numbers and literals are copied as they are: they are already in
// encoding/json's form, which is what the round trip gave.

// jsonMember is one member of an object: its key as written (a JSON string
// with its quotes) and its value's bytes.
type jsonMember struct {
	key, value []byte
	name       []byte // the key unquoted (set while sorting)
}

var errBadJSON = errors.New("loopx: malformed JSON in a result")

// sortedJSON returns raw (one JSON value) with the keys of every object in
// it sorted.
func sortedJSON(raw []byte) ([]byte, error) {
	var s jsonSorter
	return s.appendValue(make([]byte, 0, len(raw)), raw)
}

// jsonSorter reorders objects; its stack holds the members of the objects
// being written (one segment per nesting level), so a large result is
// reordered without an allocation per object.
type jsonSorter struct {
	stack []jsonMember
}

// appendValue appends the JSON value raw with its objects' keys sorted.
func (s *jsonSorter) appendValue(out, raw []byte) ([]byte, error) {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return nil, errBadJSON
	}
	switch raw[0] {
	case '{':
		base := len(s.stack)
		var err error
		if s.stack, err = appendMembers(s.stack, raw); err != nil {
			return nil, err
		}
		out, err = s.appendObject(out, base)
		s.stack = s.stack[:base]
		return out, err
	case '[':
		out = append(out, '[')
		i := skipSpace(raw, 1)
		for first := true; i < len(raw) && raw[i] != ']'; first = false {
			if !first {
				if raw[i] != ',' {
					return nil, errBadJSON
				}
				out = append(out, ',')
				i = skipSpace(raw, i+1)
			}
			end, err := skipValue(raw, i)
			if err != nil {
				return nil, err
			}
			if out, err = s.appendValue(out, raw[i:end]); err != nil {
				return nil, err
			}
			i = skipSpace(raw, end)
		}
		if i != len(raw)-1 {
			return nil, errBadJSON
		}
		return append(out, ']'), nil
	}
	return append(out, raw...), nil
}

// appendObject appends the object whose members are s.stack[base:], in key
// order, the last of equal keys kept, each value's own objects sorted too.
func (s *jsonSorter) appendObject(out []byte, base int) ([]byte, error) {
	members := s.stack[base:]
	for i := range members {
		k, err := keyBytes(members[i].key)
		if err != nil {
			return nil, err
		}
		members[i].name = k
	}
	slices.SortStableFunc(members, func(a, b jsonMember) int { return bytes.Compare(a.name, b.name) })
	n := len(members)
	out = append(out, '{')
	first := true
	for i := 0; i < n; i++ {
		m := s.stack[base+i] // the stack may move while values are written
		if i+1 < n && bytes.Equal(s.stack[base+i+1].name, m.name) {
			continue // a later member of the same key wins
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, m.key...)
		out = append(out, ':')
		var err error
		if out, err = s.appendValue(out, m.value); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

// appendObject appends an object of members (see jsonSorter.appendObject).
func appendObject(out []byte, members []jsonMember) ([]byte, error) {
	s := jsonSorter{stack: members}
	return s.appendObject(out, 0)
}

// keyBytes is the key a member's quoted key stands for (its bytes between
// the quotes, unless it holds escapes).
func keyBytes(quoted []byte) ([]byte, error) {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return nil, errBadJSON
	}
	if bytes.IndexByte(quoted, '\\') < 0 {
		return quoted[1 : len(quoted)-1], nil
	}
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		return nil, errBadJSON
	}
	return []byte(k), nil
}

// objectMembers splits the object raw into its members (values not
// sorted yet).
func objectMembers(raw []byte) ([]jsonMember, error) {
	return appendMembers(nil, raw)
}

// appendMembers appends the members of the object raw to out.
func appendMembers(out []jsonMember, raw []byte) ([]jsonMember, error) {
	raw = trimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return nil, errBadJSON
	}
	i := skipSpace(raw, 1)
	for first := true; i < len(raw) && raw[i] != '}'; first = false {
		if !first {
			if raw[i] != ',' {
				return nil, errBadJSON
			}
			i = skipSpace(raw, i+1)
		}
		if i >= len(raw) || raw[i] != '"' {
			return nil, errBadJSON
		}
		kend, err := skipString(raw, i)
		if err != nil {
			return nil, err
		}
		key := raw[i:kend]
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return nil, errBadJSON
		}
		i = skipSpace(raw, i+1)
		vend, err := skipValue(raw, i)
		if err != nil {
			return nil, err
		}
		out = append(out, jsonMember{key: key, value: raw[i:vend]})
		i = skipSpace(raw, vend)
	}
	if i != len(raw)-1 {
		return nil, errBadJSON
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

func trimSpace(raw []byte) []byte {
	i, j := 0, len(raw)
	for i < j && isSpace(raw[i]) {
		i++
	}
	for j > i && isSpace(raw[j-1]) {
		j--
	}
	return raw[i:j]
}

// skipString returns the index after the string starting at raw[i].
func skipString(raw []byte, i int) (int, error) {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errBadJSON
}

// skipValue returns the index after the value starting at raw[i].
func skipValue(raw []byte, i int) (int, error) {
	if i >= len(raw) {
		return 0, errBadJSON
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end, err := skipString(raw, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errBadJSON
	}
	j := i
	for j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']' && !isSpace(raw[j]) {
		j++
	}
	if j == i {
		return 0, errBadJSON
	}
	return j, nil
}

// Todo views (a list's or ready's todos, 10,000 of them at scale) are
// written by appendTodoView, straight into key order: no json.Marshal by
// reflection, no scan and reorder after. Its bytes are encoding/json's
// with the keys sorted (TestTodoViewJSON fills every field of the view by
// reflection, so a field added to the records and not here fails it; a
// fuzz test varies the text).

// viewField is one member of an object written by a fast encoder: its
// key as written (quoted, with the colon) and its value's appender, which
// reports false when the member is omitted (omitempty) or cannot be
// written here (ok false from the whole encoder then).
type viewField[T any] struct {
	name string
	key  string
	app  func(out []byte, x *T) (_ []byte, written, ok bool)
}

// sortFields orders fields by name, once.
func sortFields[T any](fs []viewField[T]) []viewField[T] {
	for i := range fs {
		fs[i].key = `"` + fs[i].name + `":`
	}
	slices.SortFunc(fs, func(a, b viewField[T]) int { return strings.Compare(a.name, b.name) })
	return fs
}

// appendFields writes the object x with the members fs.
func appendFields[T any](out []byte, x *T, fs []viewField[T]) ([]byte, bool) {
	out = append(out, '{')
	first := true
	for i := range fs {
		n := len(out)
		if !first {
			out = append(out, ',')
		}
		out = append(out, fs[i].key...)
		var written, ok bool
		out, written, ok = fs[i].app(out, x)
		if !ok {
			return out, false
		}
		if !written {
			out = out[:n]
			continue
		}
		first = false
	}
	return append(out, '}'), true
}

func str[T any](name string, get func(*T) string, omitEmpty bool) viewField[T] {
	return viewField[T]{name: name, app: func(out []byte, x *T) ([]byte, bool, bool) {
		s := get(x)
		if omitEmpty && s == "" {
			return out, false, true
		}
		return appendJSONString(out, s), true, true
	}}
}

func strs[T any](name string, get func(*T) []string) viewField[T] {
	return viewField[T]{name: name, app: func(out []byte, x *T) ([]byte, bool, bool) {
		return appendJSONStrings(out, get(x)), true, true
	}}
}

func integer[T any](name string, get func(*T) int64, omitEmpty bool) viewField[T] {
	return viewField[T]{name: name, app: func(out []byte, x *T) ([]byte, bool, bool) {
		n := get(x)
		if omitEmpty && n == 0 {
			return out, false, true
		}
		return strconv.AppendInt(out, n, 10), true, true
	}}
}

func boolean[T any](name string, get func(*T) bool) viewField[T] {
	return viewField[T]{name: name, app: func(out []byte, x *T) ([]byte, bool, bool) {
		return strconv.AppendBool(out, get(x)), true, true
	}}
}

func instant[T any](name string, get func(*T) time.Time) viewField[T] {
	return viewField[T]{name: name, app: func(out []byte, x *T) ([]byte, bool, bool) {
		out, ok := appendJSONTime(out, get(x))
		return out, true, ok
	}}
}

// instantPtr is an omitempty *time.Time: omitted when nil.
func instantPtr[T any](name string, get func(*T) *time.Time) viewField[T] {
	return viewField[T]{name: name, app: func(out []byte, x *T) ([]byte, bool, bool) {
		t := get(x)
		if t == nil {
			return out, false, true
		}
		out, ok := appendJSONTime(out, *t)
		return out, true, ok
	}}
}

var noteFactsFields = sortFields([]viewField[lease.NoteFacts]{
	str("claimed_by", func(f *lease.NoteFacts) string { return f.ClaimedBy }, true),
	str("lease_owner", func(f *lease.NoteFacts) string { return f.LeaseOwner }, true),
	integer("lease_epoch", func(f *lease.NoteFacts) int64 { return f.LeaseEpoch }, true),
})

var noteViewFields = sortFields([]viewField[lease.NoteView]{
	str("text", func(n *lease.NoteView) string { return n.Text }, false),
	str("author", func(n *lease.NoteView) string { return n.Author }, false),
	instant("at", func(n *lease.NoteView) time.Time { return n.At }),
	{name: "facts", app: func(out []byte, n *lease.NoteView) ([]byte, bool, bool) {
		out, ok := appendFields(out, &n.Facts, noteFactsFields)
		return out, true, ok
	}},
	boolean("stale", func(n *lease.NoteView) bool { return n.Stale }),
})

// todoViewFields are the members of a TodoView without relations: the
// todo's fields (its notes shown through the view's) and claim_expired.
var todoViewFields = sortFields([]viewField[lease.TodoView]{
	str("todo_id", func(v *lease.TodoView) string { return v.ID }, false),
	str("text", func(v *lease.TodoView) string { return v.Text }, false),
	str("status", func(v *lease.TodoView) string { return v.Status }, false),
	str("priority", func(v *lease.TodoView) string { return v.Priority }, false),
	strs("depends_on", func(v *lease.TodoView) []string { return v.DependsOn }),
	strs("required_write_scopes", func(v *lease.TodoView) []string { return v.RequiredWriteScopes }),
	str("bound_agent", func(v *lease.TodoView) string { return v.BoundAgent }, true),
	strs("excluded_agents", func(v *lease.TodoView) []string { return v.ExcludedAgents }),
	str("claimed_by", func(v *lease.TodoView) string { return v.ClaimedBy }, true),
	str("claim_scope_agent_id", func(v *lease.TodoView) string { return v.ClaimScopeAgentID }, true),
	integer("claim_ttl_minutes", func(v *lease.TodoView) int64 { return v.ClaimTTLMinutes }, true),
	instantPtr("claimed_at", func(v *lease.TodoView) *time.Time { return v.ClaimedAt }),
	instantPtr("claim_expires_at", func(v *lease.TodoView) *time.Time { return v.ClaimExpiresAt }),
	{name: "notes", app: func(out []byte, v *lease.TodoView) ([]byte, bool, bool) {
		if v.Notes == nil {
			return append(out, "null"...), true, true
		}
		out = append(out, '[')
		for i := range v.Notes {
			if i > 0 {
				out = append(out, ',')
			}
			var ok bool
			if out, ok = appendFields(out, &v.Notes[i], noteViewFields); !ok {
				return out, true, false
			}
		}
		return append(out, ']'), true, true
	}},
	strs("evidence", func(v *lease.TodoView) []string { return v.Evidence }),
	str("superseded_by", func(v *lease.TodoView) string { return v.SupersededBy }, true),
	str("reason", func(v *lease.TodoView) string { return v.Reason }, true),
	boolean("archived", func(v *lease.TodoView) bool { return v.Archived }),
	str("created_by", func(v *lease.TodoView) string { return v.CreatedBy }, false),
	instant("created_at", func(v *lease.TodoView) time.Time { return v.CreatedAt }),
	str("updated_by", func(v *lease.TodoView) string { return v.UpdatedBy }, false),
	instant("updated_at", func(v *lease.TodoView) time.Time { return v.UpdatedAt }),
	str("closed_by", func(v *lease.TodoView) string { return v.ClosedBy }, true),
	instantPtr("closed_at", func(v *lease.TodoView) *time.Time { return v.ClosedAt }),
	boolean("claim_expired", func(v *lease.TodoView) bool { return v.ClaimExpired }),
})

// appendTodoView appends tv as encoding/json writes it with its keys
// sorted. ok is false (out then holds garbage past its length on entry)
// for what it does not write: a view with relations (todo show), or a time
// encoding/json refuses; the caller marshals those the slow way.
func appendTodoView(out []byte, tv *lease.TodoView) (_ []byte, ok bool) {
	if tv.TodoRelations != nil {
		return out, false
	}
	return appendFields(out, tv, todoViewFields)
}

// appendJSONTime appends t as time.Time's MarshalJSON writes it; ok is
// false where that fails (a year outside 0..9999, an odd zone).
func appendJSONTime(out []byte, t time.Time) ([]byte, bool) {
	out = append(out, '"')
	b, err := t.AppendText(out)
	if err != nil {
		return out, false
	}
	return append(b, '"'), true
}

// appendJSONStrings appends a []string as encoding/json does (nil: null).
func appendJSONStrings(out []byte, ss []string) []byte {
	if ss == nil {
		return append(out, "null"...)
	}
	out = append(out, '[')
	for i, s := range ss {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, s)
	}
	return append(out, ']')
}

// jsonPlain marks the ASCII bytes encoding/json copies into a string as
// they are (it escapes the controls, the quote, the backslash and, for
// HTML, <, > and &).
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s quoted as json.Marshal writes a string: the
// escapes above (\b \f \n \r \t by name, others as \u00XX in lower-case
// hex), invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(out []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch c {
			case '"', '\\':
				out = append(out, '\\', c)
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
