package lease

import (
	"strings"
	"testing"
)

// TestOutcomeMessageTrailers: the audit trailers of a commit carry a lease's
// version and epoch only when the operation has a lease, and a transfer's
// receiver and claim move only for a transfer; ParseMessage reads them back.
func TestOutcomeMessageTrailers(t *testing.T) {
	cases := []struct {
		name      string
		o         Outcome
		want, not []string
	}{
		{"no lease: no version or epoch trailer",
			Outcome{Operation: OpTodoAdd, Status: StatusApplied, Goal: "g", Todo: "todo_abc", Actor: "a"},
			[]string{"Loopx-Operation: todo.add\n", "Loopx-Todo: todo_abc\n"},
			[]string{TrailerVersion, TrailerEpoch, TrailerNewOwner, TrailerClaimMoved}},
		{"lease: version and epoch",
			Outcome{Operation: OpLeaseAcquire, Status: StatusApplied, Goal: "g", Todo: "todo_abc", Actor: "a", Version: 3, Epoch: 2},
			[]string{"Loopx-Version: 3\n", "Loopx-Epoch: 2\n"},
			[]string{TrailerNewOwner, TrailerClaimMoved}},
		{"transfer: receiver and claim move",
			Outcome{Operation: OpLeaseTransfer, Status: StatusApplied, Goal: "g", Todo: "todo_abc", Actor: "a", Version: 2, Epoch: 2, NewOwner: "b"},
			[]string{"Loopx-New-Owner: b\n", "Loopx-Claim-Moved: false\n"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := c.o.Message()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			for _, n := range c.not {
				if strings.Contains(msg, n) {
					t.Errorf("message has %s:\n%s", n, msg)
				}
			}
			e, ok := ParseMessage(msg)
			if !ok || e.Operation != c.o.Operation || e.Version != c.o.Version || e.Epoch != c.o.Epoch || e.NewOwner != c.o.NewOwner ||
				(e.ClaimMoved != nil) != (c.o.NewOwner != "") {
				t.Errorf("parsed back %+v, ok %v", e, ok)
			}
		})
	}
}

// TestParseMessageNeedsOperation: a commit without a Loopx-Operation trailer
// is not a loopx commit, even with other loopx trailers.
func TestParseMessageNeedsOperation(t *testing.T) {
	if _, ok := ParseMessage("fix the lexer\n\nLoopx-Agent: agent-a\nLoopx-Goal: g\n"); ok {
		t.Error("a commit without Loopx-Operation parsed as a loopx commit")
	}
}

// TestProjectionMessage: a board commit's subject names the state revision
// by at most 12 characters; its trailer keeps the whole revision.
func TestProjectionMessage(t *testing.T) {
	long := strings.Repeat("0123456789", 4)
	for _, c := range []struct{ rev, subject string }{
		{long, "board g at 012345678901\n"},
		{"0123456789ab", "board g at 0123456789ab\n"},
		{"abc", "board g at abc\n"},
	} {
		msg := ProjectionMessage("g", c.rev)
		if !strings.HasPrefix(msg, c.subject) || !strings.Contains(msg, TrailerProjectionOf+": "+c.rev+"\n") {
			t.Errorf("ProjectionMessage(g, %s) = %q", c.rev, msg)
		}
		if e, ok := ParseMessage(msg); !ok || e.Operation != OpProjection || e.ProjectionOf != c.rev {
			t.Errorf("parsed back %+v", e)
		}
	}
}
