package loopx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// legacyMarshal is the envelope as Result.MarshalJSON made it before it
// was one pass: Data marshalled, decoded into a map, the envelope added,
// and the map marshalled (which sorts the keys at every level). The bytes
// of results must not change: testscripts and programs match them.
func legacyMarshal(r *Result[any]) ([]byte, error) {
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
		r.Remote.Fill(m)
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

// unsorted declares its fields out of key order, nests objects in arrays
// and holds text JSON escapes.
type unsorted struct {
	Zeta  string            `json:"zeta"`
	Alpha []map[string]any  `json:"alpha"`
	Mid   *unsorted         `json:"mid,omitempty"`
	Raw   json.RawMessage   `json:"raw,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Empty []string          `json:"empty"`
	Null  *int              `json:"null"`
	Num   float64           `json:"num"`
	Big   int64             `json:"big"`
}

// fieldedLists names its members (jsonFields), so that its long lists are
// written element by element, as a todo list's are.
type fieldedLists struct {
	Todos     []lease.TodoView `json:"todos"`
	Agents    []lease.Agent    `json:"agents"`
	Nested    []*unsorted      `json:"nested"`
	IDs       []string         `json:"ids"`
	Nil       []string         `json:"nil"`
	Empty     []lease.TodoView `json:"empty"`
	Bytes     []byte           `json:"bytes"`
	Ptrs      []*lease.Todo    `json:"ptrs"`
	Status    string           `json:"status"`
	ByPointer []ptrMarshal     `json:"by_pointer"`
}

func (d fieldedLists) jsonFields() []jsonField {
	return []jsonField{{"todos", d.Todos}, {"agents", d.Agents}, {"nested", d.Nested}, {"ids", d.IDs},
		{"nil", d.Nil}, {"empty", d.Empty}, {"bytes", d.Bytes}, {"ptrs", d.Ptrs}, {"status", d.Status},
		{"by_pointer", d.ByPointer}}
}

// ptrMarshal marshals itself only through its pointer.
type ptrMarshal struct{ n int }

func (p *ptrMarshal) MarshalJSON() ([]byte, error) { return []byte(`{"z":1,"a":"by pointer"}`), nil }

// long returns a list of 100 copies of x (written element by element).
func long[T any](x T) []T {
	out := make([]T, 100)
	for i := range out {
		out[i] = x
	}
	return out
}

func TestResultJSONBytesUnchanged(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	todo := lease.Todo{ID: "todo_a", Text: "<b>&\"quoted\"\u2028 é \x01", Status: lease.TodoOpen, Priority: "P1",
		DependsOn: []string{"todo_b"}, CreatedAt: at, UpdatedAt: at, ClaimedBy: "agent-a", ClaimedAt: &at,
		Notes: []lease.Note{{Text: "n", Author: "agent-a", At: at}}}
	tv := lease.TodoView{Todo: todo, Notes: []lease.NoteView{{Note: todo.Notes[0], Stale: true}}}
	lv := lease.LeaseView{}
	nested := &unsorted{Zeta: "z", Alpha: []map[string]any{{"b": 1, "a": []any{map[string]any{"y": 1, "x": 2}}}},
		Mid: &unsorted{Zeta: "inner", Empty: []string{}}, Raw: json.RawMessage(`{"q":1,"p":{"d":[],"c":null}}`),
		Tags: map[string]string{"k\"ey": "v", "a\\b": "w", "é": "x"}, Num: 0.1, Big: 1 << 52}
	for _, c := range []struct {
		name string
		r    *Result[any]
	}{
		{"read", &Result[any]{Envelope: Envelope{Operation: "todo.list", CurrentRevision: "abc", Cursor: 7}, Data: map[string]any{"goal_id": "g", "todos": []lease.TodoView{tv, tv}, "count": 2}}},
		{"show with relations", &Result[any]{Envelope: Envelope{Operation: "todo.show"}, Data: map[string]any{"todo": lease.TodoView{Todo: todo,
			Notes: []lease.NoteView{}, TodoRelations: &lease.TodoRelations{Unblocks: []string{}, Lease: &lv}}}}},
		{"mutation delivered", &Result[any]{Envelope: Envelope{Operation: "task-lease.acquire", Mutation: true, Status: lease.StatusApplied, Revision: "r1", CurrentRevision: "r2", Projection: ProjectionDelivered}, Data: lease.LeaseResult{GoalID: "g", TodoID: "todo_a"}}},
		{"mutation pending", &Result[any]{Envelope: Envelope{Operation: "todo.add", Mutation: true, Status: lease.StatusReplayed, Projection: ProjectionPending, ProjectionError: "boom <&>"}, Data: nested}},
		{"data overrides", &Result[any]{Envelope: Envelope{Operation: "x"}, Data: map[string]any{"ok": false, "operation": "y", "provider": "p", "zz": 1}}},
		{"remote and skew", &Result[any]{Envelope: Envelope{Operation: "log", Remote: &remote.Info{Name: "origin", Offline: true, Pending: 2,
			FetchedAt: at, CheckedAt: at}, ClockSkew: &lease.Skew{HeadTime: "2026-01-02T03:04:05Z", LocalTime: "2026-01-02T03:03:05Z", MaxClockSkewSeconds: 30}}, Data: nested}},
		{"array data", &Result[any]{Envelope: Envelope{Operation: "a"}, Data: []any{map[string]any{"b": 1, "a": 2}}}},
		{"string data", &Result[any]{Envelope: Envelope{Operation: "a"}, Data: "text"}},
		{"null data", &Result[any]{Envelope: Envelope{Operation: "a"}, Data: (*unsorted)(nil)}},
		{"no data", &Result[any]{Envelope: Envelope{Operation: "a"}}},
		{"empty object", &Result[any]{Envelope: Envelope{Operation: "a"}, Data: map[string]any{}}},
		{"agent", &Result[any]{Envelope: Envelope{Operation: "agent.list"}, Data: map[string]any{"agents": []*lease.Agent{{ID: "a", Role: "agent", Status: "registered"}}}}},
		{"long lists", &Result[any]{Envelope: Envelope{Operation: "todo.list", Mutation: true, Status: "applied"}, Data: map[string]any{
			"todos": long(tv), "agents": long(lease.Agent{ID: "a", Role: "agent", Status: "registered"}),
			"nested": long(nested), "ids": long("x<y"), "nil": []string(nil), "empty": []lease.TodoView{},
			"bytes": make([]byte, 100), "ptrs": long(&todo), "status": "overridden", "by_pointer": long(ptrMarshal{})}}},
		{"long fielded lists", &Result[any]{Envelope: Envelope{Operation: "todo.list", Mutation: true, Status: "applied"}, Data: fieldedLists{
			Todos: long(tv), Agents: long(lease.Agent{ID: "a", Role: "agent", Status: "registered"}),
			Nested: long(nested), IDs: long("x<y"), Empty: []lease.TodoView{},
			Bytes: make([]byte, 100), Ptrs: long(&todo), Status: "overridden", ByPointer: long(ptrMarshal{})}}},
		// The payloads of the reads, which name their members.
		{"todo list", &Result[any]{Envelope: Envelope{Operation: "todo.list", CurrentRevision: "abc", Cursor: 7},
			Data: TodoList{GoalID: "g", Todos: long(tv), Count: 100}}},
		{"short todo list", &Result[any]{Envelope: Envelope{Operation: "todo.list"}, Data: TodoList{GoalID: "g", Todos: []lease.TodoView{tv}, Count: 1}}},
		{"ready list", &Result[any]{Envelope: Envelope{Operation: "todo.ready"}, Data: ReadyList{GoalID: "g", AgentID: "agent-a", Todos: long(tv), Count: 100}}},
		{"empty ready list", &Result[any]{Envelope: Envelope{Operation: "todo.ready"}, Data: ReadyList{GoalID: "g", Todos: []lease.TodoView{}}}},
		{"goal list", &Result[any]{Envelope: Envelope{Operation: "goal.list"}, Data: GoalList{Goals: long(&lease.Goal{ID: "g", Title: "<t>"})}}},
		{"agent list", &Result[any]{Envelope: Envelope{Operation: "agent.list"}, Data: AgentList{GoalID: "g", Agents: long(&lease.Agent{ID: "a", Role: "agent"})}}},
		{"todo show", &Result[any]{Envelope: Envelope{Operation: "todo.show"}, Data: TodoShow{GoalID: "g", TodoID: "todo_a", Status: "open",
			Todo: lease.TodoView{Todo: todo, TodoRelations: &lease.TodoRelations{Unblocks: []string{}, Lease: &lv}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := legacyMarshal(c.r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("bytes differ:\n got %s\nwant %s", got, want)
			}
			// Through json.Marshal (a Result inside other JSON), and
			// streamed as the command line prints it.
			printed, err := json.Marshal(c.r)
			if err != nil || !bytes.Equal(printed, want) {
				t.Fatalf("marshalled %s %v", printed, err)
			}
			var b bytes.Buffer
			if err := c.r.WriteJSON(&b); err != nil || !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("written %s %v", b.Bytes(), err)
			}
		})
	}
}

// TestSortedJSONDuplicateKeys keeps the last of equal keys, as decoding
// into a map does.
func TestSortedJSONDuplicateKeys(t *testing.T) {
	t.Parallel()
	got, err := sortedJSON([]byte(`{"b":1,"a":{"y":1,"x":2,"y":3},"b":[{"d":1,"c":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"x":2,"y":3},"b":[{"c":2,"d":1}]}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	for _, bad := range []string{`{"a":1`, `{"a" 1}`, `[1,2`, `{"a":"x}`, `{a:1}`, ``} {
		if _, err := sortedJSON([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzSortedJSON: for any JSON value in encoding/json's form, the bytes
// equal those of a round trip through a map.
func FuzzSortedJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2}`, `[{"z":{"y":[1,{"b":"\u003c","a":null}]}}]`, `"x"`, `{"é":1,"e":2,"\\":3}`, `{}`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		raw, err := json.Marshal(v) // encoding/json's form (keys already sorted)
		if err != nil {
			return
		}
		// Unsort the objects: marshal through a struct-free shuffle.
		shuffled := reverseKeys(t, raw)
		got, err := sortedJSON(shuffled)
		if err != nil {
			t.Fatalf("%s: %v", shuffled, err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("sorted %s\n got %s\nwant %s", shuffled, got, raw)
		}
	})
}

// reverseKeys rewrites every object of raw with its members in reverse
// order.
func reverseKeys(t *testing.T, raw []byte) []byte {
	raw = trimSpace(raw)
	switch raw[0] {
	case '{':
		ms, err := objectMembers(raw)
		if err != nil {
			t.Fatal(err)
		}
		out := []byte{'{'}
		for i := len(ms) - 1; i >= 0; i-- {
			if i != len(ms)-1 {
				out = append(out, ',')
			}
			out = append(append(append(out, ms[i].key...), ':'), reverseKeys(t, ms[i].value)...)
		}
		return append(out, '}')
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			t.Fatal(err)
		}
		out := []byte{'['}
		for i, e := range elems {
			if i > 0 {
				out = append(out, ',')
			}
			b, _ := json.Marshal(e) // compact, as encoding/json wrote it
			out = append(out, reverseKeys(t, b)...)
		}
		return append(out, ']')
	}
	return raw
}

// randomFill sets every exported field reachable from v (a settable
// value) to a random value, nil and empty included, with strings full of
// what JSON escapes and times in odd zones, some beyond RFC 3339's years.
// A field added to the records is filled too, so a fast encoder that does
// not know it writes different bytes.
func randomFill(r *rand.Rand, v reflect.Value, depth int) {
	pieces := []string{"", "a", "todo_x", "<", ">", "&", `"`, `\`, "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t",
		"\u2028", "\u2029", "é", "日本", "\xff", "\x80", "\xe2\x80", "\u007f", " ", "\U0001F600", "\ufffd"}
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+1800), time.FixedZone("X", -8*3600), time.FixedZone("", 30)}
	switch v.Kind() {
	case reflect.String:
		var b strings.Builder
		for n := r.IntN(4); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		v.SetString(b.String())
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		switch r.IntN(3) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(r.Int64N(100) - 50)
		default:
			v.SetInt(r.Int64())
		}
	case reflect.Slice:
		switch r.IntN(4) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := 0; i < n; i++ {
				randomFill(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Pointer:
		if r.IntN(3) == 0 || depth > 4 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		randomFill(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			year := 1970 + r.IntN(80)
			if r.IntN(50) == 0 {
				year = 10000 + r.IntN(5) // encoding/json refuses it
			}
			t := time.Date(year, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), []int{0, 1, 500000000, r.IntN(1e9)}[r.IntN(4)], zones[r.IntN(len(zones))])
			v.Set(reflect.ValueOf(t))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				randomFill(r, v.Field(i), depth+1)
			}
		}
	default:
		panic("randomFill: no rule for " + v.Type().String())
	}
}

// TestTodoViewJSON: appendTodoView writes encoding/json's bytes with the
// keys sorted for every todo view without relations, and declines (for
// the slow path) those with relations and those encoding/json refuses.
func TestTodoViewJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for i := 0; i < 5000; i++ {
		var tv lease.TodoView
		randomFill(r, reflect.ValueOf(&tv).Elem(), 0)
		withRelations := tv.TodoRelations != nil
		if i%2 == 0 {
			tv.TodoRelations, withRelations = nil, false
		}
		raw, err := json.Marshal(&tv)
		got, ok := appendTodoView(nil, &tv)
		if err != nil || withRelations {
			if ok {
				t.Fatalf("wrote %s, want the slow path (marshal error %v, relations %v)", got, err, withRelations)
			}
			refused++
			continue
		}
		want, err := sortedJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %s (ok %v)\nwant %s", tv, got, ok, want)
		}
	}
	if refused == 0 || refused > 2500+500 {
		t.Fatalf("%d of 5000 refused: the fill does not exercise both paths", refused)
	}
	// Through a result, with views of each kind in one long list.
	views := make([]lease.TodoView, 200)
	for i := range views {
		randomFill(r, reflect.ValueOf(&views[i]).Elem(), 0)
		for _, tm := range []*time.Time{&views[i].CreatedAt, &views[i].UpdatedAt} {
			*tm = tm.AddDate(2000-tm.Year(), 0, 0) // no marshal errors here
		}
		views[i].ClaimedAt, views[i].ClaimExpiresAt, views[i].ClosedAt, views[i].Notes = nil, nil, nil, nil
		if i%3 != 0 {
			views[i].TodoRelations = nil
		}
		if views[i].TodoRelations != nil {
			views[i].TodoRelations.Lease = nil
		}
	}
	res := &Result[any]{Envelope: Envelope{Operation: "todo.list"}, Data: map[string]any{"todos": views, "count": len(views)}}
	// The map round trip of legacyMarshal rewrites what it decodes
	// (invalid UTF-8, large integers); WriteJSON's bytes are those of
	// encoding/json with the keys sorted.
	raw, err := json.Marshal(map[string]any{"todos": views, "count": len(views), "ok": true, "operation": "todo.list",
		"provider": "git", "current_provider_revision": "", "current_cursor": 0})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sortedJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil || !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("written %v:\n got %s\nwant %s", err, b.Bytes(), want)
	}
}

// FuzzTodoViewJSON varies the text of a todo and of its note.
func FuzzTodoViewJSON(f *testing.F) {
	for _, s := range []string{"plain", "<b>&amp;</b>", "\u2028\x00\xff", `"\`} {
		f.Add(s, s)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600))
	f.Fuzz(func(t *testing.T, text, note string) {
		tv := lease.TodoView{Todo: lease.Todo{ID: text, Text: text, Status: note, CreatedAt: at, ClaimedAt: &at, DependsOn: []string{note, text}},
			Notes: []lease.NoteView{{Note: lease.Note{Text: note, Author: text, At: at, Facts: lease.NoteFacts{LeaseOwner: note}}}}}
		raw, err := json.Marshal(&tv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sortedJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := appendTodoView(nil, &tv); !ok || !bytes.Equal(got, want) {
			t.Fatalf("got %s (ok %v)\nwant %s", got, ok, want)
		}
	})
}

// BenchmarkTodoListJSON writes a 10,000-todo list as `todo list` prints
// it; "reflect" is the way each view was written before appendTodoView
// (json.Marshal, then its keys reordered).
func BenchmarkTodoListJSON(b *testing.B) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	views := make([]lease.TodoView, 10000)
	for i := range views {
		id := fmt.Sprintf("todo_seed_%06d", i)
		views[i] = lease.TodoView{Todo: lease.Todo{ID: id, Text: "seeded " + id, Status: lease.TodoOpen, Priority: "P3",
			DependsOn: []string{}, RequiredWriteScopes: []string{fmt.Sprintf("seed/%d/**", i)}, ExcludedAgents: []string{},
			Evidence: []string{}, CreatedAt: at, UpdatedAt: at}, Notes: []lease.NoteView{}}
	}
	res := &Result[any]{Envelope: Envelope{Operation: "todo.list", CurrentRevision: "2a27fd68c12935a3ee234b31ee03b99e11081da7", Cursor: 7}, Data: map[string]any{"goal_id": "g", "todos": views, "count": len(views)}}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := res.WriteJSON(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		var s jsonSorter
		var buf []byte
		for b.Loop() {
			for i := range views {
				raw, err := json.Marshal(&views[i])
				if err != nil {
					b.Fatal(err)
				}
				if buf, err = s.appendValue(buf[:0], raw); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
