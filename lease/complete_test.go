package lease

import (
	"fmt"
	"testing"
	"time"
)

func TestComplete(t *testing.T) {
	leaseOfA := func(f *tcFix) {
		f.claimTodo("todo_one", "a", nil)
		f.putLease("todo_one", "a", "ka", 3, 2, tcMin(10))
	}
	cases := []struct {
		name   string
		setup  func(f *tcFix)
		req    CompleteRequest
		code   Code
		detail [2]string
		status string
		check  func(t *testing.T, f *tcFix)
	}{
		{name: "unclaimed todo by any agent", req: CompleteRequest{Actor: "b", Evidence: []string{"e1", "e2"}, Note: "done it"}, status: StatusApplied,
			check: func(t *testing.T, f *tcFix) {
				td := f.todo("todo_one")
				if td.Status != TodoDone || td.ClosedBy != "b" || !td.ClosedAt.Equal(tcMin(1)) || fmt.Sprint(td.Evidence) != "[e1 e2]" ||
					len(td.Notes) != 1 || td.Notes[0].Text != "done it" {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "empty evidence", req: CompleteRequest{Actor: "a", Evidence: []string{""}}, code: CodeInvalidRequest},
		{name: "bad todo id", req: CompleteRequest{Actor: "a"}, code: CodeInvalidTodoID},
		{name: "bad goal id", req: CompleteRequest{Actor: "a"}, code: CodeInvalidGoalID},
		{name: "unregistered", req: CompleteRequest{Actor: "zed"}, code: CodeAgentNotRegistered},
		{name: "malformed proof is refused before the lease is read", req: CompleteRequest{Actor: "a", Proof: &Proof{IdempotencyKey: "k", ExpectedVersion: -1}}, code: CodeInvalidRequest},
		{name: "claimed by another", setup: func(f *tcFix) { f.claimTodo("todo_one", "a", nil) }, req: CompleteRequest{Actor: "b"},
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "claim owner", setup: func(f *tcFix) { f.claimTodo("todo_one", "a", nil) }, req: CompleteRequest{Actor: "a"}, status: StatusApplied,
			check: func(t *testing.T, f *tcFix) {
				if td := f.todo("todo_one"); td.ClaimedBy != "a" {
					t.Fatal("claim fields are kept on completion")
				}
			}},
		{name: "orchestrator with complete authority", setup: func(f *tcFix) { f.claimTodo("todo_one", "a", nil) }, req: CompleteRequest{Actor: "orch-c"}, status: StatusApplied},
		{name: "orchestrator needing a reason", setup: func(f *tcFix) { f.claimTodo("todo_one", "a", nil) }, req: CompleteRequest{Actor: "orch-r"}, code: CodeAuthorityRequired},
		{name: "excluded", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.ExcludedAgents = []string{"a"} }) }, req: CompleteRequest{Actor: "a"}, code: CodeAgentExcluded},
		{name: "bound to another", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "b" }) }, req: CompleteRequest{Actor: "a"},
			code: CodeBoundAgentMismatch, detail: [2]string{"bound_agent", "b"}},
		{name: "superseded todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Status = TodoSuperseded; t.Reason = "r" }) },
			req: CompleteRequest{Actor: "a"}, code: CodeTodoNotOpen},
		{name: "archived todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Archived = true }) }, req: CompleteRequest{Actor: "a"}, code: CodeTodoArchived},
		{name: "dependencies open", setup: func(f *tcFix) {
			f.editTodo("todo_one", func(t *Todo) { t.DependsOn = []string{"todo_two", "todo_three"} })
			f.editTodo("todo_three", func(t *Todo) { t.Status = TodoDone })
		}, req: CompleteRequest{Actor: "a"}, code: CodeDependenciesOpen, detail: [2]string{"open_dependencies", "[todo_two]"}},
		{name: "dependencies done", setup: func(f *tcFix) {
			f.editTodo("todo_one", func(t *Todo) { t.DependsOn = []string{"todo_two"} })
			f.editTodo("todo_two", func(t *Todo) { t.Status = TodoDone })
		}, req: CompleteRequest{Actor: "a"}, status: StatusApplied},
		{name: "dependency superseded without replacement", setup: func(f *tcFix) {
			f.editTodo("todo_one", func(t *Todo) { t.DependsOn = []string{"todo_two"} })
			f.editTodo("todo_two", func(t *Todo) { t.Status = TodoSuperseded; t.Reason = "dropped" })
		}, req: CompleteRequest{Actor: "a"}, status: StatusApplied},
		{name: "dependency superseded by an open todo", setup: func(f *tcFix) {
			f.editTodo("todo_one", func(t *Todo) { t.DependsOn = []string{"todo_two"} })
			f.editTodo("todo_two", func(t *Todo) { t.Status, t.Reason, t.SupersededBy = TodoSuperseded, "moved", "todo_three" })
		}, req: CompleteRequest{Actor: "a"}, code: CodeDependenciesOpen, detail: [2]string{"open_dependencies", "[todo_two]"}},
		{name: "fence: no proof", setup: leaseOfA, req: CompleteRequest{Actor: "a"}, code: CodeLeaseFenceRequired},
		{name: "fence: stale version", setup: leaseOfA, req: CompleteRequest{Actor: "a", Proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 1}}, code: CodeVersionMismatch},
		{name: "fence: wrong key", setup: leaseOfA, req: CompleteRequest{Actor: "a", Proof: &Proof{IdempotencyKey: "kb", ExpectedVersion: 3}}, code: CodeLeaseProofMismatch},
		{name: "fence: exact proof releases the lease", setup: leaseOfA, req: CompleteRequest{Actor: "a", Note: "finished", Proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 3}},
			status: StatusApplied, check: func(t *testing.T, f *tcFix) {
				l := f.lease("todo_one")
				if l.Status != LeaseReleased || l.Version != 3 || l.Epoch != 2 || l.Holders[0].EndReason != "completed" {
					t.Fatalf("%+v", l)
				}
				// The completion note is written against the facts after the commit.
				td := f.todo("todo_one")
				if td.Notes[0].Facts != (NoteFacts{ClaimedBy: "a"}) || NoteStale(td, l, td.Notes[0], tcMin(1)) {
					t.Fatalf("note facts %+v", td.Notes[0].Facts)
				}
			}},
		{name: "expired lease needs no proof and is left as is", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 3, 2, tcMin(-1)) },
			req: CompleteRequest{Actor: "b"}, status: StatusApplied, check: func(t *testing.T, f *tcFix) {
				if l := f.lease("todo_one"); l.Status != LeaseActive {
					t.Fatal("unverified lease changed")
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one", "todo_two", "todo_three")
			if c.setup != nil {
				c.setup(f)
			}
			switch c.name {
			case "bad todo id":
				c.req.Todo = "nope"
			default:
				c.req.Todo = "todo_one"
			}
			r := c.req
			r.Goal = tcGoal
			if c.name == "bad goal id" {
				r.Goal = "G!"
			}
			o, err := f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) { return Complete(v, r, now) })
			e := tcCode(t, err, c.code)
			if c.code != "" {
				if c.detail[0] != "" && fmt.Sprint(e.Details[c.detail[0]]) != c.detail[1] {
					t.Fatalf("detail %s = %v, want %s", c.detail[0], e.Details[c.detail[0]], c.detail[1])
				}
				return
			}
			if o.Status != c.status || o.Operation != OpTodoComplete || !o.BoardChanged {
				t.Fatalf("outcome %+v", o)
			}
			if res := tcResult(t, o); res.TodoStatus != TodoDone {
				t.Fatalf("result %+v", res)
			}
			if c.check != nil {
				c.check(t, f)
			}
		})
	}
}

func TestCompleteReplayWritesNothing(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one")
	f.claimTodo("todo_one", "a", nil)
	f.putLease("todo_one", "a", "ka", 1, 1, tcMin(10))
	proof := &Proof{IdempotencyKey: "ka", ExpectedVersion: 1}
	f.must(f.complete(tcMin(1), CompleteRequest{Todo: "todo_one", Actor: "a", Evidence: []string{"first"}, Proof: proof}))
	before := MemFiles{}
	for k, v := range f.files {
		before[k] = v
	}
	for _, r := range []CompleteRequest{
		{Todo: "todo_one", Actor: "a", Evidence: []string{"first"}, Proof: proof},  // exact retry
		{Todo: "todo_one", Actor: "a", Evidence: []string{"other"}, Note: "again"}, // different evidence, no proof
		{Todo: "todo_one", Actor: "b"},                                             // another agent
	} {
		o := f.must(f.complete(tcMin(2), r))
		if o.Status != StatusReplayed || o.Write || o.BoardChanged {
			t.Fatalf("replay outcome %+v", o)
		}
		if res := tcResult(t, o); res.Todo.ClosedBy != "a" || fmt.Sprint(res.Todo.Evidence) != "[first]" {
			t.Fatalf("replay result %+v", res.Todo)
		}
	}
	if len(f.files) != len(before) {
		t.Fatal("replay wrote files")
	}
	for k, v := range before {
		if string(f.files[k]) != string(v) {
			t.Fatalf("replay changed %s", k)
		}
	}
	// Superseding a done todo is not a replay.
	_, err := f.supersede(tcMin(3), SupersedeRequest{Todo: "todo_one", Actor: "a", Reason: "r"})
	tcCode(t, err, CodeTodoNotOpen)
}

func TestSupersede(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(f *tcFix)
		req    SupersedeRequest
		code   Code
		status string
		check  func(t *testing.T, f *tcFix)
	}{
		{name: "reason required", req: SupersedeRequest{Actor: "a"}, code: CodeInvalidRequest},
		{name: "by a malformed id", req: SupersedeRequest{Actor: "a", Reason: "r", By: "bad"}, code: CodeInvalidTodoID},
		{name: "by a missing todo", req: SupersedeRequest{Actor: "a", Reason: "r", By: "todo_missing"}, code: CodeTodoNotFound},
		{name: "by itself", req: SupersedeRequest{Actor: "a", Reason: "r", By: "todo_one"}, code: CodeInvalidRequest},
		{name: "with replacement", req: SupersedeRequest{Actor: "a", Reason: "split up", By: "todo_two"}, status: StatusApplied,
			check: func(t *testing.T, f *tcFix) {
				td := f.todo("todo_one")
				if td.Status != TodoSuperseded || td.SupersededBy != "todo_two" || td.Reason != "split up" || td.ClosedBy != "a" {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "open dependencies do not matter", setup: func(f *tcFix) {
			f.editTodo("todo_one", func(t *Todo) { t.DependsOn = []string{"todo_two"} })
		}, req: SupersedeRequest{Actor: "a", Reason: "r"}, status: StatusApplied},
		{name: "already superseded: replay", setup: func(f *tcFix) {
			f.editTodo("todo_one", func(t *Todo) { t.Status, t.Reason, t.ClosedBy = TodoSuperseded, "old", "b" })
		}, req: SupersedeRequest{Actor: "a", Reason: "new"}, status: StatusReplayed, check: func(t *testing.T, f *tcFix) {
			if td := f.todo("todo_one"); td.Reason != "old" || td.ClosedBy != "b" {
				t.Fatalf("%+v", td)
			}
		}},
		{name: "claimed by another", setup: func(f *tcFix) { f.claimTodo("todo_one", "b", nil) }, req: SupersedeRequest{Actor: "a", Reason: "r"}, code: CodeNotClaimOwner},
		{name: "orchestrator lacking supersede", setup: func(f *tcFix) { f.claimTodo("todo_one", "b", nil) }, req: SupersedeRequest{Actor: "orch-c", Reason: "r"}, code: CodeAuthorityRequired},
		{name: "orchestrator with reason", setup: func(f *tcFix) { f.claimTodo("todo_one", "b", nil) },
			req: SupersedeRequest{Actor: "orch-r", Reason: "r", AuthorityReason: "replanned"}, status: StatusApplied},
		{name: "fence", setup: func(f *tcFix) { f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10)) }, req: SupersedeRequest{Actor: "b", Reason: "r"}, code: CodeLeaseFenceRequired},
		{name: "fence with proof releases", setup: func(f *tcFix) { f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10)) },
			req: SupersedeRequest{Actor: "b", Reason: "r", Proof: &Proof{IdempotencyKey: "kb", ExpectedVersion: 1}}, status: StatusApplied,
			check: func(t *testing.T, f *tcFix) {
				if l := f.lease("todo_one"); l.Status != LeaseReleased {
					t.Fatalf("%+v", l)
				}
			}},
		{name: "done todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Status = TodoDone }) }, req: SupersedeRequest{Actor: "a", Reason: "r"}, code: CodeTodoNotOpen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one", "todo_two")
			if c.setup != nil {
				c.setup(f)
			}
			c.req.Todo = "todo_one"
			o, err := f.supersede(tcMin(1), c.req)
			tcCode(t, err, c.code)
			if c.code != "" {
				return
			}
			if o.Status != c.status || o.Operation != OpTodoSupersede {
				t.Fatalf("outcome %+v", o)
			}
			if c.check != nil {
				c.check(t, f)
			}
		})
	}
}
