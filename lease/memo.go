package lease

import (
	"reflect"
	"slices"
)

// The records a view decoded.
//
// One decision reads the same few records again and again: an acquire read
// loopx.yaml five times, its todo seven, its agent and goal twice each,
// every time decoding the YAML (tens of microseconds each, more than the
// rest of a read). A view keeps each single record it decoded (get), with
// the bytes it decoded it from, and answers the next read of that path
// with a copy: at once when it came from the snapshot and the decision has
// not written the path since (a snapshot never changes); otherwise when the
// bytes read now are the same (a write, a write undone by a refused
// decision: the bytes decide, never the history of the view). Callers get
// deep copies, so what they modify is theirs alone (TestMemoCopies).
// Only the types with a copy below are kept.

// decodedRecord is one record a view decoded, and from what.
type decodedRecord struct {
	data []byte // the bytes it was decoded from: a write's (nil for the snapshot's)
	base bool   // read from the snapshot, not from the view's writes
	rec  record // never handed out: copies are
}

// remember keeps r, decoded from data at p, when its type has a copy.
func (v *View) remember(p string, data []byte, base bool, r record) {
	c := copyRecord(r)
	if c == nil {
		return
	}
	if v.decoded == nil {
		v.decoded = map[string]decodedRecord{}
	}
	m := decodedRecord{base: base, rec: c}
	if !base {
		m.data = data // the view's own bytes (a Files' may be reused)
	}
	v.decoded[p] = m
}

// copyTo sets r (of the kept record's type) to a copy of the kept record.
func (m decodedRecord) copyTo(r record) {
	reflect.ValueOf(r).Elem().Set(reflect.ValueOf(copyRecord(m.rec)).Elem())
}

// copyRecord returns a deep copy of r, or nil for a type the views do not
// keep.
func copyRecord(r record) record {
	switch x := r.(type) {
	case *StoreMeta:
		c := *x
		c.Admins = slices.Clone(x.Admins)
		return &c
	case *Goal:
		c := *x
		return &c
	case *Agent:
		c := *x
		c.LifecycleAuthority = slices.Clone(x.LifecycleAuthority)
		return &c
	case *Todo:
		return x.Clone()
	}
	return nil
}
