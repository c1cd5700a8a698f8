package lease

import (
	"testing"
)

// TestLeaseGenerationChecked: from store format 2 on, a per-todo lease read
// fails closed (corrupt_record) when the lease record and the epoch its todo
// records disagree; a format 1 store (no recorded epochs) reads as it is.
func TestLeaseGenerationChecked(t *testing.T) {
	cases := []struct {
		name    string
		format  int
		tamper  func(f *tlFix)
		corrupt bool
	}{
		{"consistent", 2, nil, false},
		{"lease replaced by an older copy", 2, func(f *tlFix) {
			f.files[LeasePath(tlGoal, "todo_aaa")] = Encode(&Lease{TodoID: "todo_aaa", Owner: "agent-a", IdempotencyKey: "k1", Version: 1, Epoch: 1,
				Status: LeaseActive, AcquiredAt: tlT0, ExpiresAt: tlAt(600)})
		}, true},
		{"lease deleted by hand", 2, func(f *tlFix) { delete(f.files, LeasePath(tlGoal, "todo_aaa")) }, true},
		{"format 1: not checked", 1, func(f *tlFix) { delete(f.files, LeasePath(tlGoal, "todo_aaa")) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newAcquireFix(t)
			f.mustAcquire(tlAt(0), "todo_aaa", "agent-a", "k1", 0)
			f.mustAcquire(tlAt(700), "todo_aaa", "agent-b", "k2", 1) // taken over after expiry: epoch 2
			f.edit(func(v *View) { v.PutMeta(&StoreMeta{FormatVersion: c.format, CreatedAt: tlT0}) })
			if c.tamper != nil {
				c.tamper(f)
			}
			_, err := f.view(tlAt(710)).Lease(tlGoal, "todo_aaa")
			if c.corrupt {
				wantCode(t, err, CodeCorruptRecord)
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}
