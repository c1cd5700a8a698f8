package loopx

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
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
