package lease

import (
	"testing"
	"time"
)

// Retries are safe (contract section 3: a retry with the same arguments
// after exit 3 gives the first attempt's result or applies it once), and
// the audit trail tells who did what.

func TestRetriesReplay(t *testing.T) {
	type step struct {
		name   string
		do     func(f *tcFix) (*Outcome, error)
		status string
		code   Code
	}
	add := AddRequest{Goal: tcGoal, Todo: "todo_new", Text: "new work", Priority: "P1", Actor: "a", RequiredWriteScopes: []string{"src/**", "doc/**"}}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"todo add --todo-id", []step{
			{"first", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) { return AddTodo(v, add, now) })
			}, StatusApplied, ""},
			{"identical", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) { return AddTodo(v, add, now) })
			}, StatusReplayed, ""},
			{"scopes in another order", func(f *tcFix) (*Outcome, error) {
				r := add
				r.RequiredWriteScopes = []string{"doc/**", "src/**", "src/**"}
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) { return AddTodo(v, r, now) })
			}, StatusReplayed, ""},
			{"other text", func(f *tcFix) (*Outcome, error) {
				r := add
				r.Text = "other"
				return f.run(tcMin(3), func(v *View, now time.Time) (*Outcome, error) { return AddTodo(v, r, now) })
			}, "", CodeTodoExists},
			{"other actor", func(f *tcFix) (*Outcome, error) {
				r := add
				r.Actor = "b"
				return f.run(tcMin(3), func(v *View, now time.Time) (*Outcome, error) { return AddTodo(v, r, now) })
			}, "", CodeTodoExists},
		}},
		{"agent register", []step{
			{"first", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) {
					return RegisterAgent(v, RegisterRequest{Goal: tcGoal, Agent: "lead", Role: RoleOrchestrator, LifecycleAuthority: []string{"update", "complete"}}, now)
				})
			}, StatusApplied, ""},
			{"identical", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
					return RegisterAgent(v, RegisterRequest{Goal: tcGoal, Agent: "lead", Role: RoleOrchestrator, LifecycleAuthority: []string{"complete", "update"}}, now)
				})
			}, StatusReplayed, ""},
			{"other facts", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
					return RegisterAgent(v, RegisterRequest{Goal: tcGoal, Agent: "lead", Role: RoleOrchestrator}, now)
				})
			}, "", CodeAgentExists},
		}},
		{"goal create", []step{
			{"first", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) {
					return CreateGoal(v, GoalCreateRequest{Goal: "h", HandoffMode: HandoffHardLease}, now)
				})
			}, StatusApplied, ""},
			{"identical", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
					return CreateGoal(v, GoalCreateRequest{Goal: "h", HandoffMode: HandoffHardLease}, now)
				})
			}, StatusReplayed, ""},
			{"other mode", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
					return CreateGoal(v, GoalCreateRequest{Goal: "h", HandoffMode: HandoffSoftClaim}, now)
				})
			}, "", CodeGoalExists},
		}},
		{"agent unregister", []step{
			{"by another plain agent", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) {
					return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "a", By: "b"}, now)
				})
			}, "", CodeAuthorityRequired},
			{"by an unregistered agent", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) {
					return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "a", By: "zed"}, now)
				})
			}, "", CodeAgentNotRegistered},
			{"by an orchestrator", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) {
					return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "a", By: "orch-c"}, now)
				})
			}, StatusApplied, ""},
			{"again (a retry)", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
					return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "a", By: "orch-c"}, now)
				})
			}, StatusNoChange, ""},
			{"itself", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(3), func(v *View, now time.Time) (*Outcome, error) {
					return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "b"}, now)
				})
			}, StatusApplied, ""},
			{"never registered", func(f *tcFix) (*Outcome, error) {
				return f.run(tcMin(3), func(v *View, now time.Time) (*Outcome, error) {
					return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "zed"}, now)
				})
			}, "", CodeAgentNotRegistered},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one")
			for _, s := range tc.steps {
				o, err := s.do(f)
				if s.code != "" {
					if e, ok := AsError(err); !ok || e.Code != s.code {
						t.Fatalf("%s: %v, want %s", s.name, err, s.code)
					}
					continue
				}
				if err != nil || o.Status != s.status || o.Write != (s.status == StatusApplied) {
					t.Fatalf("%s: %+v %v, want %s", s.name, o, err, s.status)
				}
			}
		})
	}
}

func TestUnregisterRecordsWhoDidIt(t *testing.T) {
	f := newTC(t, HandoffSoftClaim)
	o, err := f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) {
		return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "a", By: "orch"}, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Actor != "orch" || o.TargetAgent != "a" || o.Subject() != "agent unregister g/a by orch" {
		t.Fatalf("%+v %q", o, o.Subject())
	}
	e, _ := ParseMessage(o.Message())
	if e.Actor != "orch" || e.TargetAgent != "a" {
		t.Errorf("trailers %+v", e)
	}
	o, _ = f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
		return UnregisterAgent(v, UnregisterRequest{Goal: tcGoal, Agent: "b"}, now)
	})
	if o.Actor != "b" || o.TargetAgent != "" || o.Subject() != "agent unregister g by b" {
		t.Errorf("self: %+v %q", o, o.Subject())
	}
}

func TestReadyClaimReturnsTheHeldLease(t *testing.T) {
	for _, key := range []string{"", "exec-a", "exec-new"} {
		t.Run("key="+key, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one", "todo_two")
			f.putLease("todo_two", "a", "exec-a", 1, 1, tcMin(60))
			req := ReadyClaimRequest{Goal: tcGoal, Actor: "a", LeaseKey: key}
			if key != "" {
				req.LeaseTTLSeconds = 600
			}
			o, err := f.run(tcMin(1), func(v *View, now time.Time) (*Outcome, error) { return ReadyClaim(v, req, now) })
			if err != nil {
				t.Fatalf("ready --claim by the lease holder: %v", err)
			}
			res := o.Data.(*TodoResult)
			if res.TodoID != "todo_two" || f.todo("todo_two").ClaimedBy != "a" {
				t.Fatalf("claimed %s (%+v), want the todo whose lease a holds", res.TodoID, o)
			}
			if f.todo("todo_one").ClaimedBy != "" {
				t.Fatal("a second todo was claimed")
			}
			// Asked with a lease key, the answer shows the held lease; without one, no lease.
			if key == "" && res.Lease != nil || key != "" && (res.Lease == nil || res.Lease.IdempotencyKey != "exec-a" || !res.Lease.Effective) {
				t.Fatalf("result lease %+v", res.Lease)
			}
			if l := f.lease("todo_two"); l.IdempotencyKey != "exec-a" || l.Epoch != 1 {
				t.Fatalf("the held execution was replaced: %+v", l)
			}
			// Again: the same todo, nothing new.
			o, err = f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) { return ReadyClaim(v, req, now) })
			if err != nil || o.Data.(*TodoResult).TodoID != "todo_two" || o.Status == StatusApplied {
				t.Fatalf("retry: %+v %v", o, err)
			}
		})
	}
}

func TestAuditNamesClaimChanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *tcFix)
		do      func(f *tcFix) (*Outcome, error)
		audit   string
		prev    string
		subject string
	}{
		{"reassignment", func(f *tcFix) { f.claimTodo("todo_one", "a", nil) },
			func(f *tcFix) (*Outcome, error) {
				return f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "orch", ClaimedBy: "b"})
			}, AuditReassign, "a", "todo reassign g/todo_one by orch from a"},
		{"clear", func(f *tcFix) { f.claimTodo("todo_one", "a", nil) },
			func(f *tcFix) (*Outcome, error) {
				return f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "a", ClearClaim: true})
			}, AuditClearClaim, "a", "todo clear-claim g/todo_one by a"},
		{"expired claim taken over by claim", func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 1, timePtr(tcMin(1)) })
		}, func(f *tcFix) (*Outcome, error) {
			return f.claim(tcMin(5), ClaimRequest{Todo: "todo_one", Actor: "b"})
		}, AuditClaimTakeover, "a", "todo claim-takeover g/todo_one by b"},
		{"expired claim taken over by update", func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 1, timePtr(tcMin(1)) })
		}, func(f *tcFix) (*Outcome, error) {
			return f.update(tcMin(5), UpdateRequest{Todo: "todo_one", Actor: "b", ClaimedBy: "b"})
		}, AuditClaimTakeover, "a", "todo claim-takeover g/todo_one by b"},
		{"plain claim", func(f *tcFix) {},
			func(f *tcFix) (*Outcome, error) { return f.claim(tcMin(1), ClaimRequest{Todo: "todo_one", Actor: "b"}) },
			"", "", "todo claim g/todo_one by b"},
		{"update of other fields", func(f *tcFix) { f.claimTodo("todo_one", "a", nil) },
			func(f *tcFix) (*Outcome, error) {
				return f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "a", Priority: "P0"})
			}, "", "", "todo update g/todo_one by a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTC(t, HandoffSoftClaim, "todo_one")
			tc.setup(f)
			o, err := tc.do(f)
			if err != nil {
				t.Fatal(err)
			}
			if o.Audit != tc.audit || o.PreviousHolder != tc.prev || o.Subject() != tc.subject {
				t.Fatalf("audit %q prev %q subject %q", o.Audit, o.PreviousHolder, o.Subject())
			}
			want := o.Operation
			if tc.audit != "" {
				want = tc.audit
			}
			e, _ := ParseMessage(o.Message())
			if e.Operation != want || e.PreviousHolder != tc.prev {
				t.Errorf("trailers %+v", e)
			}
			if o.Operation != OpTodoUpdate && o.Operation != OpTodoClaim {
				t.Errorf("the command's operation changed: %s", o.Operation)
			}
		})
	}
}
