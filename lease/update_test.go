package lease

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func tcStr(s string) *string { return &s }

func TestUpdate(t *testing.T) {
	claimedBy := func(a string) func(f *tcFix) {
		return func(f *tcFix) { f.claimTodo("todo_one", a, nil) }
	}
	leaseOfA := func(f *tcFix) {
		f.claimTodo("todo_one", "a", nil)
		f.putLease("todo_one", "a", "ka", 3, 2, tcMin(10))
	}
	cases := []struct {
		name    string
		mode    string
		setup   func(f *tcFix)
		req     UpdateRequest
		code    Code
		detail  [2]string
		status  string
		changes []string
		audit   string // the audit trail's operation of an applied update
		check   func(t *testing.T, td *Todo)
	}{
		{name: "nothing requested", req: UpdateRequest{Actor: "a"}, code: CodeInvalidRequest},
		{name: "empty text", req: UpdateRequest{Actor: "a", Text: tcStr("")}, code: CodeInvalidRequest},
		{name: "bad priority", req: UpdateRequest{Actor: "a", Priority: "P9"}, code: CodeInvalidRequest},
		{name: "clear and set claim", req: UpdateRequest{Actor: "a", ClearClaim: true, ClaimedBy: "a"}, code: CodeInvalidRequest},
		{name: "bad excluded agent", req: UpdateRequest{Actor: "a", ExcludeAgents: []string{"B"}}, code: CodeInvalidAgentID},
		{name: "bad claimed-by id", req: UpdateRequest{Actor: "a", ClaimedBy: "Agent B"}, code: CodeInvalidAgentID},
		{name: "bad proof key", req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: ""}}, code: CodeInvalidIdempotencyKey},
		{name: "negative proof version", req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "k", ExpectedVersion: -1}}, code: CodeInvalidRequest},
		{name: "proof version above the generation limit", req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "k", ExpectedVersion: MaxGeneration + 1}}, code: CodeInvalidRequest},
		// versions 0 and MaxGeneration are well-formed: the proof is then checked against the (missing) lease, not refused as malformed
		{name: "proof version 0 is well-formed", req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "k", ExpectedVersion: 0}}, code: CodeLeaseProofMismatch},
		{name: "proof version at the generation limit is well-formed", req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "k", ExpectedVersion: MaxGeneration}}, code: CodeVersionMismatch},
		{name: "unregistered", req: UpdateRequest{Actor: "zed", Note: "n"}, code: CodeAgentNotRegistered},
		{name: "done todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Status = TodoDone }) },
			req: UpdateRequest{Actor: "a", Note: "n"}, code: CodeTodoNotOpen},
		{name: "archived todo", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.Archived = true }) },
			req: UpdateRequest{Actor: "a", Note: "n"}, code: CodeTodoArchived},
		{name: "text by anyone on an unclaimed todo", req: UpdateRequest{Actor: "b", Text: tcStr("better")}, status: StatusApplied, changes: []string{"text"},
			check: func(t *testing.T, td *Todo) {
				if td.Text != "better" || td.UpdatedBy != "b" {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "same values", req: UpdateRequest{Actor: "a", Text: tcStr("text of todo_one"), Priority: DefaultPriority}, status: StatusNoChange},
		{name: "priority", req: UpdateRequest{Actor: "a", Priority: "P0"}, status: StatusApplied, changes: []string{"priority"},
			check: func(t *testing.T, td *Todo) {
				if td.Priority != "P0" {
					t.Fatal(td.Priority)
				}
			}},
		{name: "seed form: --claimed-by names the owner", setup: claimedBy("a"), req: UpdateRequest{Actor: "a", ClaimedBy: "a", Text: tcStr("refactor")},
			status: StatusApplied, changes: []string{"text"}},
		{name: "claimed by another", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", Text: tcStr("x")},
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "priority by another on a claimed todo", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", Priority: "P0"},
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "note by another on a claimed todo", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", Note: "n"},
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "exclusion by another on a claimed todo", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", ExcludeAgents: []string{"c"}},
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "self-claim through update by an excluded agent", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.ExcludedAgents = []string{"b"} }) },
			req: UpdateRequest{Actor: "b", ClaimedBy: "b"}, code: CodeAgentExcluded},
		{name: "excluded agent", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.ExcludedAgents = []string{"b"} }) },
			req: UpdateRequest{Actor: "b", Note: "n"}, code: CodeAgentExcluded},
		{name: "bound to another", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "a" }) },
			req: UpdateRequest{Actor: "b", Note: "n"}, code: CodeBoundAgentMismatch, detail: [2]string{"bound_agent", "a"}},
		{name: "owner clears its claim", setup: claimedBy("a"), req: UpdateRequest{Actor: "a", ClearClaim: true}, status: StatusApplied, changes: []string{"claim"},
			check: func(t *testing.T, td *Todo) {
				if td.ClaimedBy != "" || td.ClaimedAt != nil {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "clear of an unclaimed todo", req: UpdateRequest{Actor: "a", ClearClaim: true}, status: StatusNoChange},
		{name: "another agent clears", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", ClearClaim: true},
			code: CodeNotClaimOwner, detail: [2]string{"claimed_by", "a"}},
		{name: "orchestrator clears (reassign)", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ClearClaim: true}, status: StatusApplied, changes: []string{"claim"}},
		{name: "orchestrator without reassign", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch-c", ClearClaim: true}, code: CodeAuthorityRequired},
		{name: "orchestrator without its reason", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch-r", ClearClaim: true}, code: CodeAuthorityRequired},
		{name: "orchestrator with its reason", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch-r", ClearClaim: true, AuthorityReason: "a crashed"},
			status: StatusApplied, changes: []string{"claim"}},
		{name: "only the bound agent clears an expired claim", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.BoundAgent, t.ClaimTTLMinutes, t.ClaimExpiresAt = "a", 5, timePtr(tcMin(-1)) })
		}, req: UpdateRequest{Actor: "b", ClearClaim: true}, code: CodeBoundAgentMismatch},
		{name: "reassign authority alone assigns the bound agent", setup: func(f *tcFix) {
			f.setAgent(&Agent{ID: "orch-x", Role: RoleOrchestrator, LifecycleAuthority: []string{ActionReassign}, Status: AgentRegistered, RegisteredAt: tcT0, UpdatedAt: tcT0})
			f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "c" })
		}, req: UpdateRequest{Actor: "orch-x", ClaimedBy: "c"}, status: StatusApplied, changes: []string{"claim"}},
		{name: "anyone clears an expired claim", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 5, timePtr(tcMin(-1)) })
		}, req: UpdateRequest{Actor: "b", ClearClaim: true}, status: StatusApplied, changes: []string{"claim"},
			check: func(t *testing.T, td *Todo) {
				if td.ClaimedBy != "" || td.ClaimExpiresAt != nil || td.ClaimTTLMinutes != 0 {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "orchestrator reassigns", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ClaimedBy: "b"}, status: StatusApplied, changes: []string{"claim"}, audit: AuditReassign,
			check: func(t *testing.T, td *Todo) {
				if td.ClaimedBy != "b" || !td.ClaimedAt.Equal(tcMin(1)) {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "reassign to an excluded agent", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ExcludedAgents = []string{"b"} })
		}, req: UpdateRequest{Actor: "orch", ClaimedBy: "b"}, code: CodeAgentExcluded},
		{name: "reassign to an unregistered agent", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ClaimedBy: "zed"}, code: CodeAgentNotRegistered},
		{name: "reassign off the bound agent", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.BoundAgent = "a" })
		}, req: UpdateRequest{Actor: "orch", ClaimedBy: "b"}, code: CodeBoundAgentMismatch},
		{name: "owner cannot hand its claim over silently", setup: claimedBy("a"), req: UpdateRequest{Actor: "a", ClaimedBy: "b"}, code: CodeInvalidRequest,
			detail: [2]string{"claimed_by", "a"}},
		{name: "seed form naming the holder for another actor", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", ClaimedBy: "a", Text: tcStr("x")}, code: CodeInvalidRequest},
		{name: "plain agent takes another's claim", setup: claimedBy("a"), req: UpdateRequest{Actor: "b", ClaimedBy: "b"}, code: CodeNotClaimOwner},
		{name: "self-claim through update", req: UpdateRequest{Actor: "b", ClaimedBy: "b"}, status: StatusApplied, changes: []string{"claim"}, audit: OpTodoUpdate},
		{name: "self-claim of another's expired claim", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimTTLMinutes, t.ClaimExpiresAt = 5, timePtr(tcMin(-1)) })
		}, req: UpdateRequest{Actor: "b", ClaimedBy: "b"}, status: StatusApplied, changes: []string{"claim"}, audit: AuditClaimTakeover},
		// A delegated claim stays the orchestrator's (contract section 6).
		{name: "scope agent takes its orchestrator's claim", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID, t.ClaimTTLMinutes, t.ClaimExpiresAt = "a", 30, timePtr(tcMin(30)) })
		}, req: UpdateRequest{Actor: "a", ClaimedBy: "a"}, code: CodeAuthorityRequired, detail: [2]string{"claimed_by", "orch"}},
		{name: "scope agent takes the claim with a text change", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: UpdateRequest{Actor: "a", ClaimedBy: "a", Text: tcStr("mine now")}, code: CodeAuthorityRequired, detail: [2]string{"action", ActionReassign}},
		{name: "scope agent orchestrator without reassign authority", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "orch-c" })
		}, req: UpdateRequest{Actor: "orch-c", ClaimedBy: "orch-c"}, code: CodeAuthorityRequired, detail: [2]string{"claimed_by", "orch"}},
		{name: "scope agent orchestrator without its reason", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "orch-r" })
		}, req: UpdateRequest{Actor: "orch-r", ClaimedBy: "orch-r"}, code: CodeAuthorityRequired},
		{name: "scope agent orchestrator with reassign authority: a reassignment", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "orch-r" })
		}, req: UpdateRequest{Actor: "orch-r", ClaimedBy: "orch-r", AuthorityReason: "orch is gone"}, status: StatusApplied, changes: []string{"claim"}, audit: AuditReassign,
			check: func(t *testing.T, td *Todo) {
				if td.ClaimedBy != "orch-r" || td.ClaimScopeAgentID != "" {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "scope agent acts without naming itself", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: UpdateRequest{Actor: "a", Note: "progress"}, status: StatusApplied, changes: []string{"note"}, audit: OpTodoUpdate},
		{name: "the claimant naming itself changes nothing", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: UpdateRequest{Actor: "orch", ClaimedBy: "orch"}, status: StatusNoChange},
		{name: "orchestrator moves its delegated claim to the scope agent", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: UpdateRequest{Actor: "orch", ClaimedBy: "a"}, status: StatusApplied, changes: []string{"claim"}, audit: AuditReassign,
			check: func(t *testing.T, td *Todo) {
				if td.ClaimedBy != "a" || td.ClaimScopeAgentID != "" {
					t.Fatalf("%+v", td)
				}
			}},
		{name: "orchestrator takes another agent's claim for itself: a reassignment", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ClaimedBy: "orch"},
			status: StatusApplied, changes: []string{"claim"}, audit: AuditReassign},
		{name: "plain agent assigns another", req: UpdateRequest{Actor: "b", ClaimedBy: "c"}, code: CodeInvalidRequest},
		{name: "orchestrator assigns an unclaimed todo", req: UpdateRequest{Actor: "orch", ClaimedBy: "c"}, status: StatusApplied, changes: []string{"claim"}},
		{name: "orchestrator without reassign assigns", req: UpdateRequest{Actor: "orch-c", ClaimedBy: "c"}, code: CodeAuthorityRequired},
		{name: "exclude an agent", req: UpdateRequest{Actor: "a", ExcludeAgents: []string{"c", "b", "c"}}, status: StatusApplied, changes: []string{"excluded_agents"},
			check: func(t *testing.T, td *Todo) {
				if fmt.Sprint(td.ExcludedAgents) != "[b c]" {
					t.Fatal(td.ExcludedAgents)
				}
			}},
		{name: "exclude an already excluded agent", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.ExcludedAgents = []string{"c"} }) },
			req: UpdateRequest{Actor: "a", ExcludeAgents: []string{"c"}}, status: StatusNoChange},
		{name: "exclude the bound agent", setup: func(f *tcFix) { f.editTodo("todo_one", func(t *Todo) { t.BoundAgent = "a" }) },
			req: UpdateRequest{Actor: "a", ExcludeAgents: []string{"a"}}, code: CodeInvalidRequest},
		{name: "exclude the claim owner", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ExcludeAgents: []string{"a"}}, code: CodeInvalidRequest},
		{name: "exclude the claim owner and clear", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ExcludeAgents: []string{"a"}, ClearClaim: true},
			status: StatusApplied, changes: []string{"claim", "excluded_agents"}},
		{name: "exclude the claim's scope agent", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "orch", func(t *Todo) { t.ClaimScopeAgentID = "a" })
		}, req: UpdateRequest{Actor: "orch", ExcludeAgents: []string{"a"}}, code: CodeInvalidRequest},
		{name: "exclude the new claimant", setup: claimedBy("a"), req: UpdateRequest{Actor: "orch", ExcludeAgents: []string{"b"}, ClaimedBy: "b"}, code: CodeInvalidRequest},
		{name: "exclude the owner of an expired claim", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", func(t *Todo) { t.ClaimExpiresAt = timePtr(tcMin(-1)) })
		}, req: UpdateRequest{Actor: "b", ExcludeAgents: []string{"a"}}, status: StatusApplied, changes: []string{"excluded_agents"}},
		// The lease fence.
		{name: "fence: no proof", setup: leaseOfA, req: UpdateRequest{Actor: "a", Note: "n"}, code: CodeLeaseFenceRequired, detail: [2]string{"lease_owner", "a"}},
		{name: "fence: wrong version", setup: leaseOfA, req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 2}}, code: CodeVersionMismatch},
		{name: "fence: wrong key", setup: leaseOfA, req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "kz", ExpectedVersion: 3}}, code: CodeLeaseProofMismatch},
		{name: "fence: exact proof", setup: leaseOfA, req: UpdateRequest{Actor: "a", Note: "n", Proof: &Proof{IdempotencyKey: "ka", ExpectedVersion: 3}},
			status: StatusApplied, changes: []string{"note"}},
		{name: "fence: orchestrator cannot reassign under another's lease", setup: leaseOfA, req: UpdateRequest{Actor: "orch", ClaimedBy: "b"}, code: CodeTodoLeaseConflict},
		{name: "fence: orchestrator cannot clear under another's lease without proof", setup: leaseOfA, req: UpdateRequest{Actor: "orch", ClearClaim: true}, code: CodeLeaseFenceRequired},
		{name: "fence: self-claim does not steal a lease", setup: func(f *tcFix) { f.putLease("todo_one", "a", "ka", 1, 1, tcMin(10)) },
			req: UpdateRequest{Actor: "b", ClaimedBy: "b"}, code: CodeTodoLeaseConflict, detail: [2]string{"lease_owner", "a"}},
		{name: "hard_lease: clear under another's active lease", mode: HandoffHardLease, setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", nil)
			f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10)) // claim-conflicting, so not effective
		}, req: UpdateRequest{Actor: "a", ClearClaim: true}, code: CodeTodoLeaseConflict, detail: [2]string{"lease_owner", "b"}},
		{name: "soft_claim: same clear is allowed", setup: func(f *tcFix) {
			f.claimTodo("todo_one", "a", nil)
			f.putLease("todo_one", "b", "kb", 1, 1, tcMin(10))
		}, req: UpdateRequest{Actor: "a", ClearClaim: true}, status: StatusApplied, changes: []string{"claim"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode := c.mode
			if mode == "" {
				mode = HandoffSoftClaim
			}
			f := newTC(t, mode, "todo_one")
			if c.setup != nil {
				c.setup(f)
			}
			c.req.Todo = "todo_one"
			o, err := f.update(tcMin(1), c.req)
			e := tcCode(t, err, c.code)
			if c.code != "" {
				if c.detail[0] != "" && fmt.Sprint(e.Details[c.detail[0]]) != c.detail[1] {
					t.Fatalf("detail %s = %v, want %s", c.detail[0], e.Details[c.detail[0]], c.detail[1])
				}
				return
			}
			if o.Status != c.status || o.Operation != OpTodoUpdate {
				t.Fatalf("status %s, want %s", o.Status, c.status)
			}
			r := tcResult(t, o)
			if !slices.Equal(r.Changes, c.changes) {
				t.Fatalf("changes %v, want %v", r.Changes, c.changes)
			}
			if c.audit != "" && o.AuditName() != c.audit {
				t.Fatalf("audit %s, want %s", o.AuditName(), c.audit)
			}
			if c.check != nil {
				c.check(t, f.todo("todo_one"))
			}
		})
	}
}

func TestUpdateNoteKeepsBytesAndDedupes(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_one")
	text := "  leading spaces\n\ttab, trailing  \r\n中文 — \"quotes\": yes\n\n"
	f.must(f.update(tcT0, UpdateRequest{Todo: "todo_one", Actor: "a", Note: text}))
	o := f.must(f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "a", Note: text}))
	if o.Status != StatusNoChange {
		t.Fatalf("repeated note: %s", o.Status)
	}
	got := f.todo("todo_one")
	if len(got.Notes) != 1 || got.Notes[0].Text != text || got.Notes[0].Author != "a" {
		t.Fatalf("notes %+v", got.Notes)
	}
	// Another author's identical note is a new note.
	f.must(f.update(tcMin(2), UpdateRequest{Todo: "todo_one", Actor: "b", Note: text}))
	if n := len(f.todo("todo_one").Notes); n != 2 {
		t.Fatalf("%d notes", n)
	}
	_, err := f.update(tcMin(3), UpdateRequest{Todo: "todo_one", Actor: "a", Note: "bad \xff byte"})
	tcCode(t, err, CodeInvalidRequest)
}

// TestHardLeaseHandover: a holds the claim and the lease of a hard_lease
// todo; after a transfer with --transfer-claim to b, a's proof is refused
// and b updates and completes with its own proof; the lease ends released.
func TestHardLeaseHandover(t *testing.T) {
	f := newTC(t, HandoffHardLease, "todo_one")
	f.editTodo("todo_one", func(t *Todo) { t.RequiredWriteScopes = []string{"src/**"} })
	f.must(f.claim(tcT0, ClaimRequest{Todo: "todo_one", Actor: "a", LeaseKey: "exec-a", LeaseTTLSeconds: 600}))
	f.must(f.update(tcMin(1), UpdateRequest{Todo: "todo_one", Actor: "a", Note: "halfway", Proof: &Proof{IdempotencyKey: "exec-a", ExpectedVersion: 1}}))

	one := int64(1)
	f.must(f.run(tcMin(2), func(v *View, now time.Time) (*Outcome, error) {
		return Transfer(v, TransferRequest{Goal: tcGoal, Todo: "todo_one", Owner: "a", IdempotencyKey: "exec-a", ExpectedVersion: &one,
			NewOwner: "b", NewIdempotencyKey: "exec-b", TTLSeconds: 600, TransferClaim: true}, now)
	}))
	td := f.todo("todo_one")
	if td.ClaimedBy != "b" {
		t.Fatalf("claim after transfer: %q", td.ClaimedBy)
	}
	// The note written by a's execution is stale now.
	l := f.lease("todo_one")
	if !NoteStale(td, l, td.Notes[0], tcMin(2)) {
		t.Fatal("note of the old execution not stale")
	}

	// The old execution is refused, with or without its proof.
	_, err := f.update(tcMin(3), UpdateRequest{Todo: "todo_one", Actor: "a", Note: "still mine", Proof: &Proof{IdempotencyKey: "exec-a", ExpectedVersion: 1}})
	tcCode(t, err, CodeNotClaimOwner)
	_, err = f.complete(tcMin(3), CompleteRequest{Todo: "todo_one", Actor: "a", Proof: &Proof{IdempotencyKey: "exec-a", ExpectedVersion: 2}})
	tcCode(t, err, CodeNotClaimOwner)
	// a cannot take the claim back either (b's lease is effective).
	_, err = f.claim(tcMin(3), ClaimRequest{Todo: "todo_one", Actor: "a"})
	tcCode(t, err, CodeClaimConflict)
	// b needs its proof.
	_, err = f.update(tcMin(3), UpdateRequest{Todo: "todo_one", Actor: "b", Note: "taking over"})
	tcCode(t, err, CodeLeaseFenceRequired)
	_, err = f.update(tcMin(3), UpdateRequest{Todo: "todo_one", Actor: "b", Note: "taking over", Proof: &Proof{IdempotencyKey: "exec-a", ExpectedVersion: 2}})
	tcCode(t, err, CodeLeaseProofMismatch)

	o := f.must(f.update(tcMin(4), UpdateRequest{Todo: "todo_one", Actor: "b", Note: "Continue the verified work", Proof: &Proof{IdempotencyKey: "exec-b", ExpectedVersion: 2}}))
	if o.Status != StatusApplied {
		t.Fatal(o.Status)
	}
	o = f.must(f.complete(tcMin(5), CompleteRequest{Todo: "todo_one", Actor: "b", Evidence: []string{"tests pass"}, Proof: &Proof{IdempotencyKey: "exec-b", ExpectedVersion: 2}}))
	r := tcResult(t, o)
	l = f.lease("todo_one")
	if l.Status != LeaseReleased || l.Version != 2 || l.Epoch != 2 || !l.ReleasedAt.Equal(tcMin(5)) || !r.LeaseReleased || r.Lease == nil || r.Lease.Effective {
		t.Fatalf("lease after completion %+v, result %+v", l, r)
	}
	if h := l.Holders[len(l.Holders)-1]; h.Owner != "b" || h.EndReason != "completed" {
		t.Fatalf("holder %+v", h)
	}
	if o.Version != 2 || o.Epoch != 2 {
		t.Fatalf("outcome v%d e%d", o.Version, o.Epoch)
	}
	td = f.todo("todo_one")
	if td.Status != TodoDone || td.ClosedBy != "b" || fmt.Sprint(td.Evidence) != "[tests pass]" {
		t.Fatalf("todo %+v", td)
	}
}
