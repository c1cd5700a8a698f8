package lease

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The property test drives random sequences of acquire, renew, transfer,
// release and exact retries by four agents on three todos with overlapping
// scopes, a clock that jumps forward (often past expiry), and agents being
// unregistered or excluded, and checks after every step:
//
//   - a refused or replayed request (and a no_change) writes no lease change;
//   - an applied acquire/transfer bumps version and epoch by one, a renew the
//     version only, a release neither; nothing else changes;
//   - no two effective leases (of different todos) hold overlapping scopes;
//   - every replay's original_receipt equals the receipt stored when the
//     request was first decided;
//   - an ended execution (released, transferred, taken over) never succeeds
//     again: its renew/transfer/release is never applied, its acquire is
//     never applied or replayed, and an exact acquire retry of it is
//     execution_not_current.
//
// Agents are never registered again and claims are not moved here: both
// could make an old, unexpired lease effective again without a lease
// operation (see the report of this package's lease files).

var (
	propAgents = []string{"ag1", "ag2", "ag3", "ag4"}
	propTodos  = []string{"todo_p01", "todo_p02", "todo_p03"}
	propScopes = []string{"src/**", "src/a.go", "src/x/*.go", "docs/*.md", "docs/b.md", "lib/**", "{src,lib}/c.go", "tests/**"}
)

type propExec struct{ todo, owner, key string }

type propReq struct {
	kind string // acquire | renew | transfer | release
	acq  AcquireRequest
	ren  RenewRequest
	tr   TransferRequest
	rel  ReleaseRequest
}

func (r propReq) todo() string {
	switch r.kind {
	case "acquire":
		return r.acq.Todo
	case "renew":
		return r.ren.Todo
	case "transfer":
		return r.tr.Todo
	}
	return r.rel.Todo
}

// proof is the execution a request acts as.
func (r propReq) proof() propExec {
	switch r.kind {
	case "acquire":
		return propExec{r.acq.Todo, r.acq.Owner, r.acq.IdempotencyKey}
	case "renew":
		return propExec{r.ren.Todo, r.ren.Owner, r.ren.IdempotencyKey}
	case "transfer":
		return propExec{r.tr.Todo, r.tr.Owner, r.tr.IdempotencyKey}
	}
	return propExec{r.rel.Todo, r.rel.Owner, r.rel.IdempotencyKey}
}

// identity is a renew, transfer or release's receipt id and digest ("" for
// an acquire, whose replays depend on its execution being current).
func (r propReq) identity() (id, digest string) {
	switch r.kind {
	case "renew":
		id = MaintenanceReceiptID(OpLeaseRenew, tlGoal, r.ren.Todo, r.ren.Owner, r.ren.IdempotencyKey, *r.ren.ExpectedVersion)
		return id, maintenanceDigest(id, r.ren.TTLSeconds, "", "", false)
	case "transfer":
		id = MaintenanceReceiptID(OpLeaseTransfer, tlGoal, r.tr.Todo, r.tr.Owner, r.tr.IdempotencyKey, *r.tr.ExpectedVersion)
		return id, maintenanceDigest(id, r.tr.TTLSeconds, r.tr.NewOwner, r.tr.NewIdempotencyKey, r.tr.TransferClaim)
	case "release":
		id = MaintenanceReceiptID(OpLeaseRelease, tlGoal, r.rel.Todo, r.rel.Owner, r.rel.IdempotencyKey, *r.rel.ExpectedVersion)
		return id, maintenanceDigest(id, 0, "", "", false)
	}
	return "", ""
}

type propModel struct {
	f *tlFix
	// history finds the receipts that left the lease records, as the
	// root package does in Git history.
	history  *historyArchive
	now      time.Time
	keyN     int
	keys     []string // every key handed out so far
	issued   []propReq
	receipts map[string]*Receipt // receipt id → as stored when first decided
	ended    map[propExec]bool
	steps    int
	// statistics, to see that the interesting paths are reached
	applied, replayed, notCurrent int
}

func (m *propModel) leases() map[string]*Lease {
	out := map[string]*Lease{}
	for _, td := range propTodos {
		out[td] = m.f.lease(td)
	}
	return out
}

func (m *propModel) freshKey() string {
	m.keyN++
	k := fmt.Sprintf("key-%d", m.keyN)
	m.keys = append(m.keys, k)
	return k
}

func (m *propModel) drawKey(t *rapid.T, label string) string {
	if len(m.keys) > 0 && rapid.IntRange(0, 4).Draw(t, label+"-reuse") == 0 {
		return rapid.SampledFrom(m.keys).Draw(t, label)
	}
	return m.freshKey()
}

// drawProof returns owner, key, version for a maintenance request on todo:
// usually the current lease's exact proof, sometimes a stale or made-up one.
func (m *propModel) drawProof(t *rapid.T, todo string) (string, string, int64) {
	l := m.f.lease(todo)
	switch {
	case l != nil && rapid.IntRange(0, 3).Draw(t, "proof-kind") > 0:
		return l.Owner, l.IdempotencyKey, l.Version
	case len(m.issued) > 0 && rapid.Bool().Draw(t, "proof-from-history"):
		old := m.issued[rapid.IntRange(0, len(m.issued)-1).Draw(t, "proof-req")].proof()
		v := int64(0)
		if l != nil {
			v = l.Version - int64(rapid.IntRange(0, 1).Draw(t, "proof-version-lag"))
		}
		return old.owner, old.key, max(v, 0)
	}
	return rapid.SampledFrom(propAgents).Draw(t, "proof-owner"), m.drawKey(t, "proof-key"), int64(rapid.IntRange(0, 5).Draw(t, "proof-version"))
}

func (m *propModel) do(t *rapid.T, r propReq, retry bool) {
	m.steps++
	before := m.leases()
	now := m.now
	var decide func(v *View) (*Outcome, error)
	switch r.kind {
	case "acquire":
		decide = func(v *View) (*Outcome, error) { return Acquire(v, r.acq, now) }
	case "renew":
		decide = func(v *View) (*Outcome, error) { return Renew(v, r.ren, now) }
	case "transfer":
		decide = func(v *View) (*Outcome, error) { return Transfer(v, r.tr, now) }
	case "release":
		decide = func(v *View) (*Outcome, error) { return Release(v, r.rel, now) }
	}
	// Was the acting execution still effective before the request?
	pv := m.f.view(now)
	var currentBefore bool
	if l := before[r.todo()]; l != nil && l.Owner == r.proof().owner && l.IdempotencyKey == r.proof().key {
		eff, err := leaseIsEffective(pv, tlGoal, l, now)
		if err != nil {
			t.Fatal(err)
		}
		currentBefore = eff
	}
	// Contract section 5: a renew, transfer or release decided before is
	// replayed whenever it comes again, with its receipt in the lease
	// record or only in history.
	mustReplay := false
	if id, digest := r.identity(); id != "" {
		if rec := m.receipts[id]; rec != nil && rec.RequestDigest == digest && rec.Status == StatusApplied {
			mustReplay = true
		}
	}
	o, err := m.f.run(now, decide)
	m.history.record(r.todo())
	after := m.leases()
	if mustReplay && (err != nil || o.Status != StatusReplayed) {
		t.Fatalf("%s decided before, sent again: %v %v, want replayed", r.kind, o, err)
	}
	if !retry {
		m.issued = append(m.issued, r)
	}
	proof := r.proof()
	wasEnded := m.ended[proof]

	if err != nil {
		if _, ok := AsError(err); !ok {
			t.Fatalf("%s: untyped error %v", r.kind, err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%s refused (%v) but leases changed", r.kind, err)
		}
		if r.kind == "acquire" && wasEnded {
			// An exact retry of the acquire that started the ended execution
			// must say why it is refused.
			id := AcquireReceiptID(tlGoal, proof.todo, proof.owner, proof.key)
			digest := acquireDigest(id, r.acq.ExpectedVersion, r.acq.TTLSeconds, normalizeScopeSet(r.acq.WriteScopes))
			if rec := m.receipts[id]; rec != nil && rec.RequestDigest == digest {
				if e, _ := AsError(err); e.Code != CodeExecutionNotCurrent {
					t.Fatalf("acquire retry of ended execution %v: %v, want execution_not_current", proof, err)
				}
				m.notCurrent++
			}
		}
		return
	}
	d, ok := o.Data.(LeaseResult)
	if !ok {
		t.Fatalf("data %T", o.Data)
	}
	switch o.Status {
	case StatusReplayed:
		m.replayed++
		if o.Write || !reflect.DeepEqual(before, after) {
			t.Fatalf("%s replay changed state", r.kind)
		}
		want, ok := m.receipts[o.ReceiptID]
		if !ok {
			t.Fatalf("replay of unknown receipt %s", o.ReceiptID)
		}
		if !reflect.DeepEqual(d.OriginalReceipt, want) {
			t.Fatalf("replay receipt\n%+v\nwant\n%+v", d.OriginalReceipt, want)
		}
		if r.kind == "acquire" {
			if wasEnded {
				t.Fatalf("acquire replay of ended execution %v succeeded", proof)
			}
			if cur := after[proof.todo]; cur == nil || cur.Owner != proof.owner || cur.IdempotencyKey != proof.key || !d.Lease.Effective {
				t.Fatalf("acquire replay of a non-current execution: %+v", cur)
			}
		}
		return
	case StatusNoChange:
		if r.kind != "release" || !reflect.DeepEqual(before, after) {
			t.Fatalf("%s no_change changed state", r.kind)
		}
	case StatusApplied:
		m.applied++
		if wasEnded {
			t.Fatalf("%s by ended execution %v was applied", r.kind, proof)
		}
	default:
		t.Fatalf("status %q", o.Status)
	}
	rec, err := m.f.view(now).ReceiptOf(tlGoal, o.Todo, o.ReceiptID)
	if err != nil || rec == nil {
		t.Fatalf("no receipt %s: %v", o.ReceiptID, err)
	}
	if _, dup := m.receipts[rec.ID]; dup {
		t.Fatalf("receipt %s decided twice", rec.ID)
	}
	m.receipts[rec.ID] = rec
	if o.Status == StatusNoChange {
		return
	}

	// Exactly the target's lease changed, by the rule of the operation.
	for _, td := range propTodos {
		if td != r.todo() && !reflect.DeepEqual(before[td], after[td]) {
			t.Fatalf("%s on %s changed the lease of %s", r.kind, r.todo(), td)
		}
	}
	old, cur := before[r.todo()], after[r.todo()]
	var ov, oe int64
	if old != nil {
		ov, oe = old.Version, old.Epoch
	}
	switch r.kind {
	case "acquire":
		if cur.Version != ov+1 || cur.Epoch != oe+1 {
			t.Fatalf("acquire: v%d e%d → v%d e%d", ov, oe, cur.Version, cur.Epoch)
		}
		if old != nil {
			m.ended[propExec{r.todo(), old.Owner, old.IdempotencyKey}] = true
		}
	case "renew":
		if !currentBefore || cur.Version != ov+1 || cur.Epoch != oe || cur.Owner != old.Owner || cur.IdempotencyKey != old.IdempotencyKey {
			t.Fatalf("renew: %+v → %+v (effective before: %v)", old, cur, currentBefore)
		}
	case "transfer":
		if cur.Version != ov+1 || cur.Epoch != oe+1 || cur.Owner != r.tr.NewOwner || cur.IdempotencyKey != r.tr.NewIdempotencyKey || !slices.Equal(cur.WriteScopes, old.WriteScopes) {
			t.Fatalf("transfer: %+v → %+v", old, cur)
		}
		m.ended[proof] = true
	case "release":
		if cur.Version != ov || cur.Epoch != oe || cur.Status != LeaseReleased {
			t.Fatalf("release: %+v → %+v", old, cur)
		}
		m.ended[proof] = true
	}
}

// checkInvariants: no two effective leases overlap.
func (m *propModel) checkInvariants(t *rapid.T) {
	v := m.f.view(m.now)
	var eff []*Lease
	for _, l := range m.leases() {
		if l == nil {
			continue
		}
		ok, err := leaseIsEffective(v, tlGoal, l, m.now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			eff = append(eff, l)
		}
	}
	for i, a := range eff {
		for _, b := range eff[i+1:] {
			for _, sa := range a.WriteScopes {
				for _, sb := range b.WriteScopes {
					if ScopesOverlap(sa, sb) {
						t.Fatalf("effective leases %s (%s) and %s (%s) overlap", a.TodoID, sa, b.TodoID, sb)
					}
				}
			}
		}
	}
}

func TestLeaseLifecycleProperties(t *testing.T) {
	checks, steps, applied, replayed, notCurrent := 0, 0, 0, 0, 0
	// Under -short rapid runs 20 sequences, and about one run in a few hundred
	// of those retries no applied request: run more rounds (new seeds) until
	// the generator has reached both applied and replayed requests, so the
	// coverage check below fails only when the model cannot reach them.
	for round := 0; round < 5 && (applied == 0 || replayed == 0); round++ {
		propLifecycleRound(t, &checks, &steps, &applied, &replayed, &notCurrent)
	}
	t.Logf("%d sequences, %d requests: %d applied, %d replayed, %d execution_not_current retries", checks, steps, applied, replayed, notCurrent)
	if checks == 0 || applied == 0 || replayed == 0 {
		t.Fatal("the property test did not reach applied and replayed requests")
	}
}

func propLifecycleRound(t *testing.T, checks, steps, applied, replayed, notCurrent *int) {
	rapid.Check(t, func(t *rapid.T) {
		*checks++
		m := &propModel{f: newTLFix(t, HandoffSoftClaim, propAgents, propTodos...), now: tlT0,
			receipts: map[string]*Receipt{}, ended: map[propExec]bool{}}
		m.history = newHistoryArchive(m.f)
		todo := rapid.SampledFrom(propTodos)
		agent := rapid.SampledFrom(propAgents)
		ttl := rapid.Int64Range(1, 300)
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				td := todo.Draw(t, "todo")
				var ev *int64
				switch rapid.IntRange(0, 3).Draw(t, "ev-kind") {
				case 0:
				case 1:
					ev = tlI64(int64(rapid.IntRange(0, 6).Draw(t, "ev")))
				default:
					cur := int64(0)
					if l := m.f.lease(td); l != nil {
						cur = l.Version
					}
					ev = tlI64(cur)
				}
				scopes := rapid.SliceOfNDistinct(rapid.SampledFrom(propScopes), 0, 2, rapid.ID[string]).Draw(t, "scopes")
				m.do(t, propReq{kind: "acquire", acq: AcquireRequest{Goal: tlGoal, Todo: td, Owner: agent.Draw(t, "owner"),
					IdempotencyKey: m.drawKey(t, "key"), ExpectedVersion: ev, TTLSeconds: ttl.Draw(t, "ttl"), WriteScopes: scopes}}, false)
			},
			"renew": func(t *rapid.T) {
				td := todo.Draw(t, "todo")
				owner, key, v := m.drawProof(t, td)
				m.do(t, propReq{kind: "renew", ren: RenewRequest{Goal: tlGoal, Todo: td, Owner: owner, IdempotencyKey: key,
					ExpectedVersion: tlI64(v), TTLSeconds: ttl.Draw(t, "ttl")}}, false)
			},
			"transfer": func(t *rapid.T) {
				td := todo.Draw(t, "todo")
				owner, key, v := m.drawProof(t, td)
				m.do(t, propReq{kind: "transfer", tr: TransferRequest{Goal: tlGoal, Todo: td, Owner: owner, IdempotencyKey: key,
					ExpectedVersion: tlI64(v), NewOwner: agent.Draw(t, "receiver"), NewIdempotencyKey: m.drawKey(t, "new-key"),
					TTLSeconds: ttl.Draw(t, "ttl")}}, false)
			},
			"release": func(t *rapid.T) {
				td := todo.Draw(t, "todo")
				owner, key, v := m.drawProof(t, td)
				m.do(t, propReq{kind: "release", rel: ReleaseRequest{Goal: tlGoal, Todo: td, Owner: owner, IdempotencyKey: key, ExpectedVersion: tlI64(v)}}, false)
			},
			"retry": func(t *rapid.T) {
				if len(m.issued) == 0 {
					t.Skip("nothing issued yet")
				}
				m.do(t, m.issued[rapid.IntRange(0, len(m.issued)-1).Draw(t, "which")], true)
			},
			"ended execution acts again": func(t *rapid.T) {
				var ended []propExec
				for e := range m.ended {
					ended = append(ended, e)
				}
				if len(ended) == 0 {
					t.Skip("no ended execution")
				}
				slices.SortFunc(ended, func(a, b propExec) int {
					return cmpStrings(a.todo+a.owner+a.key, b.todo+b.owner+b.key)
				})
				e := rapid.SampledFrom(ended).Draw(t, "ended")
				v := int64(0)
				if l := m.f.lease(e.todo); l != nil {
					v = l.Version
				}
				m.do(t, propReq{kind: "renew", ren: RenewRequest{Goal: tlGoal, Todo: e.todo, Owner: e.owner, IdempotencyKey: e.key,
					ExpectedVersion: tlI64(v), TTLSeconds: ttl.Draw(t, "ttl")}}, false)
			},
			"tick": func(t *rapid.T) {
				m.now = m.now.Add(time.Duration(rapid.IntRange(0, 400).Draw(t, "seconds")) * time.Second)
			},
			"unregister": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "rare") != 0 {
					t.Skip("rare")
				}
				m.f.setAgent(agent.Draw(t, "agent"), AgentUnregistered)
			},
			"exclude": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "rare") != 0 {
					t.Skip("rare")
				}
				a, td := agent.Draw(t, "agent"), todo.Draw(t, "todo")
				m.f.editTodo(td, func(x *Todo) {
					if !slices.Contains(x.ExcludedAgents, a) {
						x.ExcludedAgents = append(x.ExcludedAgents, a)
					}
				})
			},
			"": m.checkInvariants,
		})
		*steps, *applied, *replayed, *notCurrent = *steps+m.steps, *applied+m.applied, *replayed+m.replayed, *notCurrent+m.notCurrent
	})
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
