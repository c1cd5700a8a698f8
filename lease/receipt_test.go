package lease

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"testing"
	"time"
)

// Test fixtures of the task-lease tests (shared by acquire_test.go,
// renew_test.go, transfer_test.go, release_test.go, inspect_test.go,
// effective_test.go and property_test.go). Records are written through a
// View and applied to MemFiles, like a commit would.

var tlT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const tlGoal = "g"

func tlAt(sec int) time.Time { return tlT0.Add(time.Duration(sec) * time.Second) }

func tlI64(v int64) *int64 { return &v }

// tlTB is what the fixtures need from *testing.T and *rapid.T.
type tlTB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

type tlFix struct {
	tb    tlTB
	files MemFiles
	rev   int
	// archive, when set, is handed to every view (UseReceiptArchive).
	archive ReceiptArchive
}

// newTLFix builds a store with goal "g" in mode, the given registered agents
// and open todos.
func newTLFix(tb tlTB, mode string, agents []string, todos ...string) *tlFix {
	f := &tlFix{tb: tb, files: MemFiles{}}
	v := f.view(tlT0)
	v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: tlT0})
	v.PutGoal(&Goal{ID: tlGoal, Title: "goal", Status: GoalActive, HandoffMode: mode, CreatedAt: tlT0, UpdatedAt: tlT0})
	for _, a := range agents {
		v.PutAgent(tlGoal, &Agent{ID: a, Role: RoleAgent, Status: AgentRegistered, RegisteredAt: tlT0, UpdatedAt: tlT0})
	}
	for _, id := range todos {
		v.PutTodo(tlGoal, &Todo{ID: id, Text: id, Status: TodoOpen, Priority: DefaultPriority, CreatedBy: "a", CreatedAt: tlT0, UpdatedBy: "a", UpdatedAt: tlT0})
	}
	f.commit(v)
	return f
}

func (f *tlFix) view(now time.Time) *View {
	v := NewView(f.files, fmt.Sprintf("rev%d", f.rev), now)
	if f.archive != nil {
		v.UseReceiptArchive(f.archive)
	}
	return v
}

func (f *tlFix) commit(v *View) {
	f.files.Apply(v.Changes())
	f.rev++
}

// edit changes records directly (fixture setup).
func (f *tlFix) edit(fn func(v *View)) {
	v := f.view(tlT0)
	fn(v)
	f.commit(v)
}

func (f *tlFix) todo(id string) *Todo {
	t, err := f.view(tlT0).Todo(tlGoal, id)
	if err != nil || t == nil {
		f.tb.Fatalf("todo %s: %v", id, err)
	}
	return t
}

func (f *tlFix) editTodo(id string, fn func(t *Todo)) {
	f.edit(func(v *View) {
		t, err := v.Todo(tlGoal, id)
		if err != nil || t == nil {
			f.tb.Fatalf("todo %s: %v", id, err)
		}
		fn(t)
		v.PutTodo(tlGoal, t)
	})
}

func (f *tlFix) setAgent(id, status string) {
	f.edit(func(v *View) {
		v.PutAgent(tlGoal, &Agent{ID: id, Role: RoleAgent, Status: status, RegisteredAt: tlT0, UpdatedAt: tlT0})
	})
}

func (f *tlFix) editGoal(fn func(g *Goal)) {
	f.edit(func(v *View) {
		g, err := v.Goal(tlGoal)
		if err != nil {
			f.tb.Fatal(err)
		}
		fn(g)
		v.PutGoal(g)
	})
}

func (f *tlFix) lease(todo string) *Lease {
	l, err := f.view(tlT0).Lease(tlGoal, todo)
	if err != nil {
		f.tb.Fatal(err)
	}
	return l
}

func (f *tlFix) putLease(l *Lease) { f.edit(func(v *View) { v.PutLease(tlGoal, l) }) }

// run decides op on a fresh view at now; a refusal must not write anything,
// a result that needs a commit is committed.
func (f *tlFix) run(now time.Time, op func(v *View) (*Outcome, error)) (*Outcome, error) {
	f.tb.Helper()
	v := f.view(now)
	out, err := op(v)
	if err != nil {
		if n := len(v.Changes()); n != 0 {
			f.tb.Fatalf("refusal %v wrote %d files", err, n)
		}
		return nil, err
	}
	if !out.Write && len(v.Changes()) != 0 {
		f.tb.Fatalf("outcome %s/%s with Write=false wrote %d files", out.Operation, out.Status, len(v.Changes()))
	}
	if out.Write {
		f.commit(v)
	}
	return out, nil
}

func (f *tlFix) acquire(now time.Time, r AcquireRequest) (*Outcome, error) {
	if r.Goal == "" {
		r.Goal = tlGoal
	}
	return f.run(now, func(v *View) (*Outcome, error) { return Acquire(v, r, now) })
}

func (f *tlFix) renew(now time.Time, r RenewRequest) (*Outcome, error) {
	if r.Goal == "" {
		r.Goal = tlGoal
	}
	return f.run(now, func(v *View) (*Outcome, error) { return Renew(v, r, now) })
}

func (f *tlFix) transfer(now time.Time, r TransferRequest) (*Outcome, error) {
	if r.Goal == "" {
		r.Goal = tlGoal
	}
	return f.run(now, func(v *View) (*Outcome, error) { return Transfer(v, r, now) })
}

func (f *tlFix) release(now time.Time, r ReleaseRequest) (*Outcome, error) {
	if r.Goal == "" {
		r.Goal = tlGoal
	}
	return f.run(now, func(v *View) (*Outcome, error) { return Release(v, r, now) })
}

// ok fails the test on err and returns out.
func (f *tlFix) ok(out *Outcome, err error) *Outcome {
	f.tb.Helper()
	if err != nil {
		f.tb.Fatalf("unexpected error: %v", err)
	}
	return out
}

// wantCode checks that err is a lease *Error with code.
func wantCode(tb testing.TB, err error, code Code) *Error {
	tb.Helper()
	if code == "" {
		if err != nil {
			tb.Fatalf("unexpected error: %v", err)
		}
		return nil
	}
	e, ok := AsError(err)
	if !ok {
		tb.Fatalf("want %s, got %v", code, err)
	}
	if e.Code != code {
		tb.Fatalf("want %s, got %v", code, err)
	}
	return e
}

func resultOf(tb testing.TB, o *Outcome) LeaseResult {
	tb.Helper()
	d, ok := o.Data.(LeaseResult)
	if !ok {
		tb.Fatalf("data is %T, want LeaseResult", o.Data)
	}
	return d
}

// mustAcquire gives todo a lease owned by owner with key, expected version ev.
func (f *tlFix) mustAcquire(now time.Time, todo, owner, key string, ev int64, scopes ...string) *Outcome {
	f.tb.Helper()
	o, err := f.acquire(now, AcquireRequest{Todo: todo, Owner: owner, IdempotencyKey: key, ExpectedVersion: tlI64(ev), TTLSeconds: 600, WriteScopes: scopes})
	return f.ok(o, err)
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestReceiptIDs(t *testing.T) {
	a := AcquireReceiptID("g", "todo_aaa", "agent-a", "k1")
	if !hex64.MatchString(a) {
		t.Fatalf("acquire id %q is not 64 hex digits", a)
	}
	if a != AcquireReceiptID("g", "todo_aaa", "agent-a", "k1") {
		t.Fatal("acquire id is not deterministic")
	}
	ids := map[string]string{
		"acquire":              a,
		"acquire other goal":   AcquireReceiptID("h", "todo_aaa", "agent-a", "k1"),
		"acquire other todo":   AcquireReceiptID("g", "todo_bbb", "agent-a", "k1"),
		"acquire other owner":  AcquireReceiptID("g", "todo_aaa", "agent-b", "k1"),
		"acquire other key":    AcquireReceiptID("g", "todo_aaa", "agent-a", "k2"),
		"acquire shifted":      AcquireReceiptID("g", "todo_aaa", "agent-ak", "1"),
		"renew v0":             MaintenanceReceiptID(OpLeaseRenew, "g", "todo_aaa", "agent-a", "k1", 0),
		"renew v1":             MaintenanceReceiptID(OpLeaseRenew, "g", "todo_aaa", "agent-a", "k1", 1),
		"transfer v1":          MaintenanceReceiptID(OpLeaseTransfer, "g", "todo_aaa", "agent-a", "k1", 1),
		"release v1":           MaintenanceReceiptID(OpLeaseRelease, "g", "todo_aaa", "agent-a", "k1", 1),
		"release v1 other key": MaintenanceReceiptID(OpLeaseRelease, "g", "todo_aaa", "agent-a", "k2", 1),
	}
	seen := map[string]string{}
	for name, id := range ids {
		if !hex64.MatchString(id) {
			t.Errorf("%s: id %q is not 64 hex digits", name, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%s and %s share receipt id %s", name, other, id)
		}
		seen[id] = name
	}
}

func TestRequestDigests(t *testing.T) {
	id := AcquireReceiptID("g", "todo_aaa", "agent-a", "k1")
	base := acquireDigest(id, tlI64(0), 600, []string{"a/**", "b"})
	same := acquireDigest(id, tlI64(0), 600, normalizeScopeSet([]string{"b", "a/**", "b"}))
	if base != same {
		t.Fatal("digest depends on scope order or duplicates")
	}
	for name, d := range map[string]string{
		"no expected version": acquireDigest(id, nil, 600, []string{"a/**", "b"}),
		"other version":       acquireDigest(id, tlI64(1), 600, []string{"a/**", "b"}),
		"other ttl":           acquireDigest(id, tlI64(0), 60, []string{"a/**", "b"}),
		"fewer scopes":        acquireDigest(id, tlI64(0), 600, []string{"a/**"}),
		"joined scopes":       acquireDigest(id, tlI64(0), 600, []string{"a/**b"}),
	} {
		if d == base {
			t.Errorf("%s: digest unchanged", name)
		}
	}
	mid := MaintenanceReceiptID(OpLeaseTransfer, "g", "todo_aaa", "agent-a", "k1", 3)
	mb := maintenanceDigest(mid, 600, "agent-b", "k2", false)
	for name, d := range map[string]string{
		"ttl":            maintenanceDigest(mid, 601, "agent-b", "k2", false),
		"receiver":       maintenanceDigest(mid, 600, "agent-c", "k2", false),
		"receiver key":   maintenanceDigest(mid, 600, "agent-b", "k3", false),
		"transfer claim": maintenanceDigest(mid, 600, "agent-b", "k2", true),
	} {
		if d == mb {
			t.Errorf("%s: digest unchanged", name)
		}
	}
}

func TestReceiptStoredAndJSON(t *testing.T) {
	f := newTLFix(t, HandoffSoftClaim, []string{"agent-a"}, "todo_aaa")
	o := f.mustAcquire(tlAt(0), "todo_aaa", "agent-a", "k1", 0, "src/**")
	r, err := f.view(tlAt(1)).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
	if err != nil || r == nil {
		t.Fatalf("receipt %s not stored: %v", o.ReceiptID, err)
	}
	if r.ID != AcquireReceiptID(tlGoal, "todo_aaa", "agent-a", "k1")[:ShortHashDigits] || r.Operation != OpLeaseAcquire ||
		r.Status != StatusApplied || r.DecidedOn != "rev1" || !r.DecidedAt.Equal(tlAt(0)) ||
		r.ExpectedVersion == nil || *r.ExpectedVersion != 0 || r.Lease == nil || r.Lease.Version != 1 || len(r.Lease.Holders) != 0 {
		t.Fatalf("receipt = %+v", r)
	}
	if p := ReceiptPath(tlGoal, r.ID); p != "goals/g/receipts/"+r.ID[:2]+"/"+r.ID[2:4]+"/"+r.ID+".yaml" {
		t.Fatalf("receipt path %s", p)
	}
	raw, err := json.Marshal(o.Data)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	l, ok := m["lease"].(map[string]any)
	if !ok || m["goal_id"] != tlGoal || m["todo_id"] != "todo_aaa" {
		t.Fatalf("data json %s", raw)
	}
	for _, k := range []string{"owner", "idempotency_key", "version", "epoch", "status", "write_scopes", "acquired_at", "renewed_at", "expires_at", "released_at", "effective"} {
		if _, ok := l[k]; !ok {
			t.Errorf("lease json lacks %q: %s", k, raw)
		}
	}
	if _, ok := l["holders"]; ok {
		t.Errorf("lease json shows holders: %s", raw)
	}
	if l["effective"] != true || l["status"] != "active" || l["version"] != float64(1) {
		t.Errorf("lease json %s", raw)
	}
	if _, ok := m["original_receipt"]; ok {
		t.Errorf("applied result carries original_receipt: %s", raw)
	}
	// A replay carries the stored receipt, equal to what was written.
	o2 := f.ok(f.acquire(tlAt(5), AcquireRequest{Todo: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", ExpectedVersion: tlI64(0), TTLSeconds: 600, WriteScopes: []string{"src/**"}}))
	if got := resultOf(t, o2).OriginalReceipt; !reflect.DeepEqual(got, r) {
		t.Fatalf("original_receipt %+v, want %+v", got, r)
	}
}

func TestKeySeen(t *testing.T) {
	l := &Lease{IdempotencyKey: "k3", Status: LeaseActive, Holders: []Holder{{IdempotencyKey: "k1"}, {IdempotencyKey: "k2"}, {IdempotencyKey: "k3"}}}
	for key, want := range map[string]bool{"k1": true, "k2": true, "k3": true, "k4": false} {
		if got := keySeen(l, key); got != want {
			t.Errorf("keySeen(%s) = %v", key, got)
		}
	}
	if keySeen(nil, "k1") {
		t.Error("nil lease has no keys")
	}
}

func TestNormalizeScopeSet(t *testing.T) {
	if got := normalizeScopeSet(nil); got == nil || len(got) != 0 {
		t.Fatalf("normalize(nil) = %#v", got)
	}
	if got := normalizeScopeSet([]string{"b", "a", "b"}); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("normalize = %v", got)
	}
}
