package lease

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// hashedFiles is a MemFiles that can enumerate content hashes, like a
// gitstore snapshot; reads counts blob reads.
type hashedFiles struct {
	MemFiles
	reads int
}

func (h *hashedFiles) WalkHashes(dir string, fn func(p, hash string) error) error {
	return h.MemFiles.Walk(dir, func(p string, data []byte) error { return fn(p, "h:"+string(data)) })
}

func (h *hashedFiles) ReadHash(hash string) ([]byte, error) {
	h.reads++
	return []byte(strings.TrimPrefix(hash, "h:")), nil
}

func TestRecordCacheReusesDecodedRecords(t *testing.T) {
	files := &hashedFiles{MemFiles: MemFiles{}}
	v := NewView(files, "r1", tlT0)
	for i := 0; i < 10; i++ {
		v.PutTodo("g", &Todo{ID: fmt.Sprintf("todo_n%03d", i), Text: "x", Status: TodoOpen, Priority: "P2"})
	}
	files.Apply(v.Changes())

	c := NewRecordCache(nil)
	first := NewView(files, "r1", tlT0)
	first.UseCache(c)
	todos, err := first.Todos("g")
	if err != nil || len(todos) != 10 || files.reads != 10 {
		t.Fatalf("first scan: %d todos, %d reads, %v", len(todos), files.reads, err)
	}
	// A caller may modify what it gets without touching the cache.
	todos[0].Notes = append(todos[0].Notes, Note{Text: "mine"})
	todos[0].Text = "changed"

	// A second view (another revision) reads only what changed.
	w := NewView(files, "r2", tlT0)
	w.PutTodo("g", &Todo{ID: "todo_n003", Text: "edited", Status: TodoOpen, Priority: "P1"})
	files.Apply(w.Changes())
	files.reads = 0
	second := NewView(files, "r2", tlT0)
	second.UseCache(c)
	again, err := second.Todos("g")
	if err != nil || len(again) != 10 || files.reads != 1 {
		t.Fatalf("second scan: %d todos, %d reads (want 1), %v", len(again), files.reads, err)
	}
	for _, td := range again {
		if td.ID == "todo_n000" && (td.Text != "x" || len(td.Notes) != 0) {
			t.Fatalf("cache was modified through a returned record: %+v", td)
		}
		if td.ID == "todo_n003" && td.Text != "edited" {
			t.Fatalf("stale record from the cache: %+v", td)
		}
	}

	// The persisted form round-trips and keeps only records seen.
	restored := NewRecordCache(func() []byte { return c.Encode() })
	files.reads = 0
	third := NewView(files, "r2", tlT0)
	third.UseCache(restored)
	if _, err := third.Todos("g"); err != nil || files.reads != 0 {
		t.Fatalf("restored cache: %d reads, %v", files.reads, err)
	}
	if restored.WorthSaving() {
		t.Fatalf("a cache that learned nothing is not worth saving")
	}
	// Garbage persisted bytes are an empty cache, never an error.
	broken := NewRecordCache(func() []byte { return []byte("not gob") })
	fourth := NewView(files, "r2", tlT0)
	fourth.UseCache(broken)
	if got, err := fourth.Todos("g"); err != nil || len(got) != 10 {
		t.Fatalf("broken cache: %v", err)
	}
}

func TestRecordCacheStillValidates(t *testing.T) {
	files := &hashedFiles{MemFiles: MemFiles{TodoPath("g", "todo_bad"): []byte("todo_id: todo_bad\nnope: 1\n")}}
	v := NewView(files, "r", tlT0)
	v.UseCache(NewRecordCache(nil))
	_, err := v.Todos("g")
	if e, ok := AsError(err); !ok || e.Code != CodeCorruptRecord || e.Details["path"] != TodoPath("g", "todo_bad") {
		t.Fatalf("want corrupt_record naming the path, got %v", err)
	}
}

// TestRecordCacheWorthSaving: a cache is rewritten once what it learned since
// loading is at least 1/64 of what it holds, and never when it learned nothing.
func TestRecordCacheWorthSaving(t *testing.T) {
	cases := []struct {
		name                   string
		cached, leases, missed int // cached todos, cached leases, todos read after loading
		want                   bool
	}{
		{"empty cache, nothing learned", 0, 0, 0, false},
		{"first scan of a store", 0, 0, 10, true},
		{"warm cache, nothing learned", 20, 0, 0, false},
		{"one miss in 64 records", 63, 0, 1, true},
		{"one miss in 65 records", 64, 0, 1, false},
		{"two misses in 102 records", 100, 0, 2, true},
		{"leases count: one miss in 65 records", 0, 64, 1, false},
		{"leases count: one miss in 64 records", 0, 63, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := &hashedFiles{MemFiles: MemFiles{}}
			put := func(from, to int) {
				v := NewView(files, "r", tlT0)
				for i := from; i < to; i++ {
					v.PutTodo("g", &Todo{ID: fmt.Sprintf("todo_n%03d", i), Text: "x", Status: TodoOpen, Priority: "P2"})
				}
				files.Apply(v.Changes())
			}
			put(0, c.cached)
			for i := 0; i < c.leases; i++ {
				id := fmt.Sprintf("todo_l%03d", i)
				files.MemFiles[LeasePath("g", id)] = Encode(&Lease{TodoID: id, Owner: "agent-a", IdempotencyKey: "k", Version: 1, Epoch: 1,
					Status: LeaseActive, AcquiredAt: tlT0, ExpiresAt: tlAt(60)})
			}
			warm := NewRecordCache(nil)
			v := NewView(files, "r1", tlT0)
			v.UseCache(warm)
			if _, err := v.Todos("g"); err != nil {
				t.Fatal(err)
			}
			if ls, err := v.Leases("g"); err != nil || len(ls) != c.leases {
				t.Fatalf("%d leases, %v", len(ls), err)
			}
			put(c.cached, c.cached+c.missed)
			restored := NewRecordCache(func() []byte { return warm.Encode() })
			w := NewView(files, "r2", tlT0)
			w.UseCache(restored)
			if got, err := w.Todos("g"); err != nil || len(got) != c.cached+c.missed {
				t.Fatalf("%d todos, %v", len(got), err)
			}
			if got := restored.WorthSaving(); got != c.want {
				t.Fatalf("WorthSaving() = %v, want %v", got, c.want)
			}
		})
	}
}

// TestLeaseClone: a lease handed out from the cache is an equal, deep copy
// (holders included, a nil holder list stays nil), so a decision may change
// it without changing the cache.
func TestLeaseClone(t *testing.T) {
	for _, l := range []*Lease{
		{TodoID: "todo_abc", Owner: "agent-a", IdempotencyKey: "k", Version: 2, Epoch: 2, Status: LeaseActive, WriteScopes: []string{"src/**"},
			RenewedAt: tlTime(5), AcquiredAt: tlT0, ExpiresAt: tlAt(60),
			Holders: []Holder{{Epoch: 1, Owner: "agent-b", IdempotencyKey: "kb", EndedAt: tlTime(1), EndReason: EndTransferred}, {Epoch: 2, Owner: "agent-a", IdempotencyKey: "k"}}},
		{TodoID: "todo_abc", Owner: "agent-a", IdempotencyKey: "k", Version: 1, Epoch: 1, Status: LeaseActive, AcquiredAt: tlT0, ExpiresAt: tlAt(60)},
	} {
		c := l.Clone()
		if !reflect.DeepEqual(c, l) {
			t.Fatalf("clone %+v\nof    %+v", c, l)
		}
		if len(c.Holders) > 0 {
			*c.Holders[0].EndedAt = tlAt(99)
			c.WriteScopes[0] = "x"
			if l.Holders[0].EndedAt.Equal(tlAt(99)) || l.WriteScopes[0] != "src/**" {
				t.Fatal("the clone shares memory with the lease")
			}
		}
	}
}

// pathHashedFiles can also name the blob at a path (as a gitstore
// snapshot can), so single-record reads go through the cache.
type pathHashedFiles struct{ hashedFiles }

func (h *pathHashedFiles) HashOf(p string) (string, bool, error) {
	data, ok, err := h.MemFiles.Read(p)
	if !ok || err != nil {
		return "", ok, err
	}
	return "h:" + string(data), true, nil
}

func TestLeaseReadsGoThroughTheCache(t *testing.T) {
	files := &pathHashedFiles{hashedFiles{MemFiles: MemFiles{}}}
	v := NewView(files, "r1", tlT0)
	v.PutLease("g", &Lease{TodoID: "todo_alpha", Owner: "agent-a", IdempotencyKey: "k", Version: 1, Epoch: 1, Status: LeaseActive,
		WriteScopes: []string{"src/**"}, AcquiredAt: tlT0, ExpiresAt: tlT0.Add(time.Hour)})
	files.Apply(v.Changes())

	// A single read does not load a cache no scan has loaded: loading it
	// all costs more than decoding one record.
	loads := 0
	c := NewRecordCache(func() []byte { loads++; return nil })
	cold := NewView(files, "r1", tlT0)
	cold.UseCache(c)
	if l, err := cold.leaseRecord("g", "todo_alpha"); err != nil || l == nil || loads != 0 || files.reads != 0 {
		t.Fatalf("a single read on a cold cache: %v %v, %d loads, %d blob reads", l, err, loads, files.reads)
	}
	if _, err := cold.Todos("g"); err != nil || loads != 1 { // a scan loads it
		t.Fatalf("scan: %v, %d loads", err, loads)
	}
	read := func(rev string) *Lease {
		t.Helper()
		w := NewView(files, rev, tlT0)
		w.UseCache(c)
		l, err := w.leaseRecord("g", "todo_alpha")
		if err != nil || l == nil {
			t.Fatalf("leaseRecord: %v %v", l, err)
		}
		return l
	}
	first := read("r1")
	if files.reads != 1 || first.Owner != "agent-a" {
		t.Fatalf("first read: %d blob reads, %+v", files.reads, first)
	}
	// What a caller gets is its own: changing it does not change the cache.
	first.Owner, first.WriteScopes[0] = "changed", "changed/**"
	second := read("r2")
	if files.reads != 1 {
		t.Fatalf("second read of the same bytes read %d blobs (want the cache)", files.reads)
	}
	if second.Owner != "agent-a" || second.WriteScopes[0] != "src/**" {
		t.Fatalf("cache was modified through a returned lease: %+v", second)
	}
	// A decision's own write is read as written, not from the cache.
	w := NewView(files, "r2", tlT0)
	w.UseCache(c)
	mine := second.Clone()
	mine.Version = 2
	w.PutLease("g", mine)
	if l, err := w.leaseRecord("g", "todo_alpha"); err != nil || l.Version != 2 {
		t.Fatalf("read after a write: %+v %v", l, err)
	}
	// A missing record is no lease, a record at another todo's path is
	// corrupt, as without the cache.
	if l, err := w.leaseRecord("g", "todo_beta"); err != nil || l != nil {
		t.Fatalf("missing lease: %+v %v", l, err)
	}
	data, _, _ := files.Read(LeasePath("g", "todo_alpha"))
	files.MemFiles[LeasePath("g", "todo_gamma")] = data
	x := NewView(files, "r3", tlT0)
	x.UseCache(c)
	if _, err := x.leaseRecord("g", "todo_gamma"); err == nil {
		t.Fatal("a lease stored at another todo's path was read without error")
	}
}

// fillRandom sets every exported field reachable from v to a random value
// (nil, empty and set slices and pointers; times in several zones), so a
// field added to a record and not kept by a codec fails the test.
func fillRandom(r *rand.Rand, v reflect.Value) {
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+1800), time.FixedZone("X", -8*3600), time.FixedZone("", 30)}
	switch v.Kind() {
	case reflect.String:
		v.SetString([]string{"", "a", "todo_x", "é\xff", "seeded todo_seed_000001", strings.Repeat("long ", 40)}[r.IntN(6)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int64, reflect.Int:
		v.SetInt([]int64{0, 1, -1, 300, -70000, math.MaxInt64, math.MinInt64}[r.IntN(7)])
	case reflect.Slice:
		switch r.IntN(3) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := 0; i < n; i++ {
				fillRandom(r, s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem())
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			t := time.Date(1900+r.IntN(200), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), []int{0, 1, r.IntN(1e9)}[r.IntN(3)], zones[r.IntN(len(zones))])
			if r.IntN(10) == 0 {
				t = time.Time{}
			}
			v.Set(reflect.ValueOf(t))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillRandom(r, v.Field(i))
			}
		}
	default:
		panic("fillRandom: no rule for " + v.Type().String())
	}
}

// sameRecord is reflect.DeepEqual with times equal when gob would keep
// them equal: the same instant and zone offset (a zone's name is lost).
func sameRecord(a, b reflect.Value) bool {
	if a.Type() == reflect.TypeFor[time.Time]() {
		x, y := a.Interface().(time.Time), b.Interface().(time.Time)
		_, ox := x.Zone()
		_, oy := y.Zone()
		return x.Equal(y) && ox == oy
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !sameRecord(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !sameRecord(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameRecord(a.Elem(), b.Elem())
	}
	return a.Interface() == b.Interface()
}

// TestTodoRecordCodec: the todos of the persisted cache come back with
// every field as it was (nil and empty slices apart, times as gob keeps
// them), and damaged bytes are refused, never a panic.
func TestTodoRecordCodec(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 200; round++ {
		todos := map[string]*Todo{}
		for i := r.IntN(5); i > 0; i-- {
			var td Todo
			fillRandom(r, reflect.ValueOf(&td).Elem())
			todos[fmt.Sprint("hash", i)] = &td
		}
		data := appendTodoRecords(nil, todos)
		got, ok := decodeTodoRecords(string(data))
		if !ok || len(got) != len(todos) {
			t.Fatalf("round %d: %d of %d todos back (ok %v)", round, len(got), len(todos), ok)
		}
		for h, td := range todos {
			if g := got[h]; g == nil || !sameRecord(reflect.ValueOf(g).Elem(), reflect.ValueOf(td).Elem()) {
				t.Fatalf("round %d: %s\n got %+v\nwant %+v", round, h, g, td)
			}
		}
		for n := 0; n < len(data); n++ {
			if _, ok := decodeTodoRecords(string(data[:n])); ok {
				t.Fatalf("round %d: %d of %d bytes taken for a cache", round, n, len(data))
			}
		}
		if len(data) > 0 {
			bad := slices.Clone(data)
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			decodeTodoRecords(string(bad)) // no panic, whatever it makes of it
		}
	}
	// Through Encode and a new cache.
	c := NewRecordCache(nil)
	c.init()
	td := &Todo{ID: "todo_a", Text: "x", Status: TodoOpen, Priority: "P2", CreatedAt: tlT0}
	cachePut(c, c.todos, "h1", td)
	restored := NewRecordCache(func() []byte { return c.Encode() })
	restored.init()
	if got := restored.todos["h1"]; got == nil || !sameRecord(reflect.ValueOf(got).Elem(), reflect.ValueOf(td).Elem()) {
		t.Fatalf("restored %+v", got)
	}
}

// BenchmarkRecordCacheLoad loads a persisted cache of 10,000 todos (as a
// list at that scale does first).
func BenchmarkRecordCacheLoad(b *testing.B) {
	c := NewRecordCache(nil)
	c.init()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10000; i++ {
		id := fmt.Sprintf("todo_seed_%06d", i)
		cachePut(c, c.todos, fmt.Sprintf("%040x", i), &Todo{ID: id, Text: "seeded " + id, Status: TodoOpen, Priority: "P3",
			RequiredWriteScopes: []string{fmt.Sprintf("seed/%d/**", i)}, CreatedAt: at, UpdatedAt: at})
	}
	data := c.Encode()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		l := NewRecordCache(func() []byte { return data })
		l.init()
		if len(l.todos) != 10000 {
			b.Fatal(len(l.todos))
		}
	}
}

// A damaged cache file (cut anywhere, or with a byte flipped) loads as an
// empty cache or a whole one, never part of one, and never panics.
func TestRecordCacheFileDamage(t *testing.T) {
	files := &hashedFiles{MemFiles: MemFiles{}}
	v := NewView(files, "r1", tlT0)
	for i := 0; i < 4; i++ {
		v.PutTodo("g", &Todo{ID: fmt.Sprintf("todo_dmg%03d", i), Text: "x", Status: TodoOpen, Priority: "P2"})
		v.PutLease("g", activeLease(fmt.Sprintf("todo_dmg%03d", i), "s/**"))
	}
	// One lease more than todos (a cache need not pair them).
	v.PutLease("g", activeLease("todo_dmgextra", "s/**"))
	files.Apply(v.Changes())
	c := NewRecordCache(nil)
	w := NewView(files, "r1", tlT0)
	w.UseCache(c)
	if _, err := w.Todos("g"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Leases("g"); err != nil {
		t.Fatal(err)
	}
	data := c.Encode()
	load := func(b []byte) *RecordCache {
		t.Helper()
		rc := NewRecordCache(func() []byte { return b })
		rc.init()
		return rc
	}
	if whole := load(data); len(whole.todos) != 4 || len(whole.leases) != 5 {
		t.Fatalf("round trip: %d todos, %d leases", len(whole.todos), len(whole.leases))
	}
	for n := 0; n < len(data); n++ {
		if rc := load(data[:n]); len(rc.todos)+len(rc.leases) != 0 {
			t.Fatalf("cut at %d of %d bytes: %d todos, %d leases loaded", n, len(data), len(rc.todos), len(rc.leases))
		}
	}
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 0x55
		rc := load(bad)
		if n := len(rc.todos) + len(rc.leases); n != 0 && n != 9 {
			t.Fatalf("byte %d flipped: %d records loaded (want none or all)", i, n)
		}
	}
}

// verify takes the todos and leases it has decoded before from the cache:
// a second verify of the same records reads none of their blobs again.
func TestVerifyReadsThroughTheCache(t *testing.T) {
	files := &hashedFiles{MemFiles: MemFiles{}}
	v := NewView(files, "r1", tlT0)
	v.PutMeta(&StoreMeta{FormatVersion: 1, CreatedAt: tlT0})
	v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: tlT0, UpdatedAt: tlT0})
	v.PutAgent("g", &Agent{ID: "agent-a", Role: RoleAgent, Status: AgentRegistered})
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("todo_ver%03d", i)
		v.PutTodo("g", &Todo{ID: id, Text: "x", Status: TodoOpen, Priority: "P2"})
		v.PutLease("g", activeLease(id, fmt.Sprintf("v/%d/**", i)))
	}
	files.Apply(v.Changes())
	c := NewRecordCache(nil)
	verify := func() int {
		t.Helper()
		files.reads = 0
		w := NewView(files, "r1", tlT0)
		w.UseCache(c)
		if problems, err := Verify(w); err != nil || len(problems) != 0 {
			t.Fatalf("verify: %v %v", problems, err)
		}
		return files.reads
	}
	first := verify()
	if first < 6 {
		t.Fatalf("first verify read %d blobs (want the 6 records)", first)
	}
	if again := verify(); again > first-6 {
		t.Fatalf("second verify read %d blobs, first %d: the 6 cached records were read again", again, first)
	}
}

// Lengths whose varints have a continuation byte of exactly 0x80 (128,
// 256, 16384) and their neighbours survive the todo codec.
func TestTodoRecordCodecLengths(t *testing.T) {
	todos := map[string]*Todo{}
	for _, n := range []int{0, 1, 127, 128, 129, 255, 256, 16383, 16384} {
		todos[fmt.Sprintf("h%d", n)] = &Todo{ID: fmt.Sprintf("todo_len%05d", n), Text: strings.Repeat("x", n), Status: TodoOpen, Priority: "P2",
			Notes: make([]Note, n%7)}
	}
	back, ok := decodeTodoRecords(string(appendTodoRecords(nil, todos)))
	if !ok || len(back) != len(todos) {
		t.Fatalf("decoded %d of %d (ok %v)", len(back), len(todos), ok)
	}
	for h, want := range todos {
		if got := back[h]; got == nil || got.Text != want.Text || len(got.Notes) != len(want.Notes) || got.ID != want.ID {
			t.Fatalf("%s: got %+v", h, got)
		}
	}
}

// A lease record through the cache's encoding is the same record: its YAML
// is byte for byte the YAML of the record before (a decision writes back
// what it read from the cache).
func TestLeaseCacheEncodingIsExact(t *testing.T) {
	zero, two := int64(0), int64(2)
	base := activeLease("todo_exact1", "a/**")
	base.Receipts = []Receipt{
		{ID: "r1", Operation: OpLeaseAcquire, GoalID: "g", TodoID: "todo_exact1", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &zero,
			RequestDigest: "d", Status: StatusApplied, DecidedAt: tlT0, Lease: activeLease("todo_exact1")},
		{ID: "r2", Operation: OpLeaseRenew, ExpectedVersion: &two, DecidedAt: tlT0},
		{ID: "r3", Operation: OpLeaseRelease, DecidedAt: tlT0},
	}
	base.Holders = []Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "k", StartedAt: tlT0}}
	rng := rand.New(rand.NewPCG(11, 13))
	leases := []*Lease{base}
	for i := 0; i < 300; i++ {
		l := &Lease{}
		fillRandom(rng, reflect.ValueOf(l).Elem())
		leases = append(leases, l)
	}
	for i, l := range leases {
		c := NewRecordCache(nil)
		c.init()
		cachePut(c, c.leases, "h", l)
		back := NewRecordCache(func() []byte { return c.Encode() })
		back.init()
		got, ok := back.leases["h"]
		if !ok {
			t.Fatalf("lease %d: not in the reloaded cache", i)
		}
		if a, b := string(Encode(l)), string(Encode(got)); a != b {
			t.Fatalf("lease %d changed through the cache:\n%s\n---\n%s", i, a, b)
		}
	}
}

// Keep drops the records it rejects, from memory and from what Encode
// saves; the others stay hits.
func TestRecordCacheKeep(t *testing.T) {
	files := &hashedFiles{MemFiles: MemFiles{}}
	v := NewView(files, "r1", tlT0)
	for i := 0; i < 4; i++ {
		v.PutTodo("g", &Todo{ID: fmt.Sprintf("todo_k%03d", i), Text: "x", Status: TodoOpen, Priority: "P2"})
	}
	files.Apply(v.Changes())
	c := NewRecordCache(nil)
	first := NewView(files, "r1", tlT0)
	first.UseCache(c)
	if _, err := first.Todos("g"); err != nil || c.Len() != 4 {
		t.Fatalf("%d cached, %v", c.Len(), err)
	}
	gone := map[string]bool{}
	_ = files.WalkHashes(TodosDir("g"), func(p, h string) error {
		if strings.Contains(p, "todo_k000") || strings.Contains(p, "todo_k001") {
			gone[h] = true
		}
		return nil
	})
	c.Keep(func(h string) bool { return !gone[h] })
	if c.Len() != 2 {
		t.Fatalf("after Keep: %d cached, want 2", c.Len())
	}
	restored := NewRecordCache(func() []byte { return c.Encode() })
	files.reads = 0
	again := NewView(files, "r1", tlT0)
	again.UseCache(restored)
	if _, err := again.Todos("g"); err != nil || files.reads != 2 || restored.Len() != 4 {
		t.Fatalf("restored: %d reads (want the 2 dropped), %d cached, %v", files.reads, restored.Len(), err)
	}
}

// TestCacheInstantMatchesUnmarshal: the record cache's fast read of a UTC
// time gives the very Time UnmarshalBinary gives (== compares location and
// all), and times of other zones still read back through it.
func TestCacheInstantMatchesUnmarshal(t *testing.T) {
	for _, want := range []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 5, 1, 9, 30, 12, 123456789, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2026, 5, 1, 9, 30, 0, 5, time.FixedZone("", 2*3600)),
		time.Date(2026, 5, 1, 9, 30, 0, 5, time.FixedZone("", -90*60)),
	} {
		enc := appendCacheTime(nil, want)
		r := &cacheReader{s: string(enc)}
		got := r.instant()
		var ref time.Time
		if err := ref.UnmarshalBinary(enc[1:]); err != nil {
			t.Fatal(err)
		}
		_, goff := got.Zone()
		_, roff := ref.Zone()
		same := got == ref // UTC: the same Time, location and all
		if want.Location() != time.UTC {
			same = got.Equal(ref) && goff == roff // a zone of its own each
		}
		if r.bad || !same || !got.Equal(want) {
			t.Errorf("%v: read %v (bad %v), UnmarshalBinary %v", want, got, r.bad, ref)
		}
	}
}
