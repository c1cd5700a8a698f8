package lease

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	f := newHeldFix(t, HandoffSoftClaim)
	inspect := func(goal, todo string, sec int) (*Outcome, error) {
		return f.run(tlAt(sec), func(v *View) (*Outcome, error) { return Inspect(v, goal, todo, tlAt(sec)) })
	}
	for _, c := range []struct {
		goal, todo string
		code       Code
	}{
		{"", "todo_aaa", CodeInvalidGoalID},
		{tlGoal, "", CodeInvalidTodoID},
		{tlGoal, "todo-bad", CodeInvalidTodoID},
		{"nope", "todo_aaa", CodeGoalNotFound},
		{tlGoal, "todo_zzz", CodeTodoNotFound},
	} {
		_, err := inspect(c.goal, c.todo, 1)
		wantCode(t, err, c.code)
	}

	o := f.ok(inspect(tlGoal, "todo_aaa", 100))
	d := resultOf(t, o)
	if o.Operation != OpLeaseInspect || o.Write || o.BoardChanged || o.Status != "" || o.Version != 1 || o.Epoch != 1 {
		t.Fatalf("outcome %+v", o)
	}
	if d.GoalID != tlGoal || d.TodoID != "todo_aaa" || d.Lease == nil || !d.Lease.Effective || d.Lease.Owner != "agent-a" || d.Lease.IdempotencyKey != "k1" {
		t.Fatalf("data %+v", d)
	}
	if d := resultOf(t, f.ok(inspect(tlGoal, "todo_aaa", 600))); d.Lease.Effective || d.Lease.Status != LeaseActive {
		t.Fatalf("expired lease shown effective: %+v", d.Lease)
	}

	// A todo without a lease: lease null.
	o = f.ok(inspect(tlGoal, "todo_bbb", 100))
	raw, _ := json.Marshal(o.Data)
	if !strings.Contains(string(raw), `"lease":null`) || o.Version != 0 {
		t.Fatalf("json %s", raw)
	}

	// Ineligible owners make the lease ineffective; inspect still works on
	// archived goals.
	f.setAgent("agent-a", AgentUnregistered)
	f.editGoal(func(g *Goal) { g.Status = GoalArchived })
	if d := resultOf(t, f.ok(inspect(tlGoal, "todo_aaa", 100))); d.Lease.Effective {
		t.Fatal("lease of an unregistered owner shown effective")
	}
}

func TestViewLease(t *testing.T) {
	f := newHeldFix(t, HandoffSoftClaim)
	v := f.view(tlAt(10))
	lv, err := ViewLease(v, tlGoal, nil, tlAt(10))
	if err != nil || lv.Lease != nil || lv.Effective {
		t.Fatalf("nil lease view %+v %v", lv, err)
	}
	l := f.lease("todo_aaa")
	l.WriteScopes = nil
	lv, err = ViewLease(v, tlGoal, l, tlAt(10))
	if err != nil || !lv.Effective {
		t.Fatalf("view %+v %v", lv, err)
	}
	raw, _ := json.Marshal(lv)
	for _, k := range []string{`"write_scopes":[]`, `"renewed_at":null`, `"released_at":null`, `"effective":true`, `"epoch":1`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("json %s lacks %s", raw, k)
		}
	}
	// Holders are shown as recorded.
	if lv, _ := ViewLease(v, tlGoal, l, tlAt(10)); len(l.Holders) == 0 || !reflect.DeepEqual(lv.Lease.Holders, l.Holders) {
		t.Fatalf("holders %+v, want %+v", lv.Lease.Holders, l.Holders)
	}
	// Scopes are shown as held.
	l.WriteScopes = []string{"src/**"}
	if lv, err := ViewLease(v, tlGoal, l, tlAt(10)); err != nil || !slices.Equal(lv.Lease.WriteScopes, []string{"src/**"}) {
		t.Fatalf("view %+v %v", lv, err)
	}
	// The view is a copy: changing it does not change the caller's lease.
	lv.Lease.Owner = "x"
	if l.Owner != "agent-a" {
		t.Fatal("view aliases the lease")
	}
	// Reads through the view's overlay: a claim written in the same view counts.
	td, _ := v.Todo(tlGoal, "todo_aaa")
	td.ClaimedBy = "agent-b"
	v.PutTodo(tlGoal, td)
	if lv, _ := ViewLease(v, tlGoal, f.lease("todo_aaa"), tlAt(10)); lv.Effective {
		t.Fatal("ViewLease ignored the overlay")
	}
}
