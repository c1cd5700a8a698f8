package lease

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// fill sets every field of v (recursively) to a non-zero value: slices get
// two elements, pointers a filled value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(tlT0))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	}
}

// aliases reports the path of a pointer, slice or map that a and b share.
func aliases(a, b reflect.Value, at string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return at
		}
		return aliases(a.Elem(), b.Elem(), at)
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return at
		}
		for i := 0; i < a.Len(); i++ {
			if p := aliases(a.Index(i), b.Index(i), at+"[]"); p != "" {
				return p
			}
		}
	case reflect.Map:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return at
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if a.Type().Field(i).IsExported() {
				if p := aliases(a.Field(i), b.Field(i), at+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// TestMemoCopies: the records a view keeps are handed out as deep copies:
// every field of every kept type, filled, is equal in the copy and shares
// no pointer, slice or map with the original (a field added to a record
// later without its copy fails here).
func TestMemoCopies(t *testing.T) {
	for _, r := range []record{&StoreMeta{}, &Goal{}, &Agent{}, &Todo{}} {
		fill(reflect.ValueOf(r).Elem())
		c := copyRecord(r)
		if c == nil {
			t.Fatalf("%T: no copy", r)
		}
		if !reflect.DeepEqual(c, r) {
			t.Errorf("%T: the copy differs:\n%+v\n%+v", r, c, r)
		}
		if p := aliases(reflect.ValueOf(c), reflect.ValueOf(r), reflect.TypeOf(r).Elem().Name()); p != "" {
			t.Errorf("%T: the copy shares %s with the original", r, p)
		}
	}
	if copyRecord(&Lease{}) != nil {
		t.Error("a type without a copy here is kept")
	}
}

// TestMemoReads: a record read again is the same record, whatever the
// caller did to the one it got before; a write is read back, and a write
// undone (a refused decision) gives the snapshot's record again.
func TestMemoReads(t *testing.T) {
	files := MemFiles{}
	base := NewView(files, "r1", tlT0)
	base.PutTodo("g", &Todo{ID: "todo_memo1", Text: "first", Status: TodoOpen, Priority: "P2", DependsOn: []string{"todo_dep01"}})
	base.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: tlT0, Admins: []Admin{{ID: "admin-a", AddedAt: tlT0}}})
	for _, c := range base.Changes() {
		files[c.Path] = c.Data
	}
	v := NewView(files, "r2", tlT0)
	read := func() *Todo {
		t.Helper()
		td, err := v.Todo("g", "todo_memo1")
		if err != nil || td == nil {
			t.Fatalf("Todo: %v, %v", td, err)
		}
		return td
	}
	first := read()
	first.Text, first.DependsOn[0] = "changed by the caller", "todo_other"
	first.DependsOn = append(first.DependsOn, "todo_more")
	if again := read(); again.Text != "first" || !slices.Equal(again.DependsOn, []string{"todo_dep01"}) {
		t.Fatalf("read again after the caller's changes: %+v", again)
	}
	m, _ := v.Meta()
	m.Admins[0].ID = "admin-z"
	if m2, _ := v.Meta(); m2.Admins[0].ID != "admin-a" {
		t.Fatalf("meta read again: %+v", m2.Admins)
	}
	// A write is what the next read gives; undone, the snapshot's again.
	_, err := atomically(v, func() (*Outcome, error) {
		td := read()
		td.Text = "written"
		v.PutTodo("g", td)
		if got := read(); got.Text != "written" {
			t.Fatalf("after the write: %q", got.Text)
		}
		return nil, Errorf(CodeInvalidRequest, "refused")
	})
	if err == nil {
		t.Fatal("the decision was not refused")
	}
	if got := read(); got.Text != "first" {
		t.Fatalf("after the refused decision: %q", got.Text)
	}
	// Written again with other bytes, then the same bytes: each read is
	// the bytes'.
	for _, text := range []string{"second", "third", "third"} {
		td := read()
		td.Text = text
		v.PutTodo("g", td)
		if got := read(); got.Text != text {
			t.Fatalf("after writing %q: %q", text, got.Text)
		}
	}
}

// BenchmarkAcquireDecision: one acquire decided on a fresh view of a
// small goal (the reads of a decision, its writes, its receipt), as every
// acquire process decides once. Compare with the memo turned off to see
// what the re-reads cost.
func BenchmarkAcquireDecision(b *testing.B) {
	f := newTC(b, HandoffSoftClaim, "todo_bench1", "todo_bench2")
	now := tcT0.Add(time.Minute)
	req := AcquireRequest{Goal: tcGoal, Todo: "todo_bench1", Owner: "a", IdempotencyKey: "k1", TTLSeconds: 600, WriteScopes: []string{"src/**"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Acquire(f.view(now), req, now); err != nil {
			b.Fatal(err)
		}
	}
}
