package lease

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var gdT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func gdMin(m int) time.Time { return gdT0.Add(time.Duration(m) * time.Minute) }

// gdFix is a store for guard tests: goals, agents, todos and leases written
// straight into MemFiles.
type gdFix struct{ files MemFiles }

func newGD() *gdFix {
	f := &gdFix{files: MemFiles{}}
	f.files[MetaPath] = Encode(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0})
	return f
}

func (f *gdFix) goal(id string, agents ...string) {
	f.files[GoalPath(id)] = Encode(&Goal{ID: id, Title: id, Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: gdT0, UpdatedAt: gdT0})
	for _, a := range agents {
		f.agent(id, a, AgentRegistered)
	}
}

func (f *gdFix) agent(goal, id, status string) {
	f.files[AgentPath(goal, id)] = Encode(&Agent{ID: id, Role: RoleAgent, Status: status, RegisteredAt: gdT0, UpdatedAt: gdT0})
}

// lease writes an open todo and its active lease, expiring at minute exp.
func (f *gdFix) lease(goal, todo, owner string, exp int, mod func(t *Todo, l *Lease), scopes ...string) {
	t := &Todo{ID: todo, Text: todo, Status: TodoOpen, Priority: DefaultPriority, CreatedAt: gdT0, UpdatedAt: gdT0}
	l := &Lease{TodoID: todo, Owner: owner, IdempotencyKey: "k-" + todo, Version: 1, Epoch: 1, Status: LeaseActive,
		WriteScopes: scopes, AcquiredAt: gdT0, ExpiresAt: gdMin(exp),
		Holders: []Holder{{Epoch: 1, Owner: owner, IdempotencyKey: "k-" + todo, StartedAt: gdT0}}}
	if mod != nil {
		mod(t, l)
	}
	f.files[TodoPath(goal, todo)] = Encode(t)
	f.files[LeasePath(goal, todo)] = Encode(l)
}

func (f *gdFix) check(t *testing.T, agent string, now time.Time, paths ...string) []GuardViolation {
	t.Helper()
	v := NewView(f.files, "rev", gdT0)
	goals, err := GuardGoals(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := GuardCheck(v, goals, agent, paths, now)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gdShort renders violations as "path:goal/todo:owner:scope" lines.
func gdShort(vs []GuardViolation) string {
	var b []string
	for _, v := range vs {
		b = append(b, fmt.Sprintf("%s:%s/%s:%s:%s", v.Path, v.Goal, v.TodoID, v.Owner, v.Scope))
	}
	return strings.Join(b, " ")
}

func TestScopeCovers(t *testing.T) {
	cases := []struct {
		scope, path string
		want        bool
	}{
		{"src/**", "src/a.go", true},
		{"src/**", "src/deep/er/a.go", true},
		{"src/**", "src", true},
		{"src/**", "srcx/a.go", false},
		{"src/**", "lib/src/a.go", false},
		{"src/*", "src/a.go", true},
		{"src/*", "src/sub/a.go", true}, // below a matched folder
		{"src", "src/a.go", true},       // a literal folder covers its files
		{"src/a.go", "src/a.go", true},
		{"src/a.go", "src/a.go.orig", false},
		{"docs/a*.md", "docs/api.md", true},
		{"docs/a*.md", "docs/b.md", false},
		{"{src,lib}/**", "lib/x.go", true},
		{"**/*.go", "cmd/loopx/main.go", true},
		{"**/*.go", "README.md", false},
		{"Src/**", "src/a.go", false}, // case-sensitive, as Git paths are
		{"src/**", "src/[x].go", true},
		{"", "src/a.go", false},
		{"src/**", "", false},
	}
	for _, c := range cases {
		if got := ScopeCovers(c.scope, c.path); got != c.want {
			t.Errorf("ScopeCovers(%q, %q) = %v, want %v", c.scope, c.path, got, c.want)
		}
	}
}

func TestGuardCheck(t *testing.T) {
	base := func() *gdFix {
		f := newGD()
		f.goal("g", "agent-a", "agent-b", "agent-c")
		f.lease("g", "todo_aaa", "agent-a", 10, nil, "src/**")
		return f
	}
	cases := []struct {
		name  string
		setup func(f *gdFix)
		agent string
		now   time.Time
		paths []string
		want  string
	}{
		{"another agent is refused", nil, "agent-b", gdT0, []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:src/**"},
		{"the owner passes", nil, "agent-a", gdT0, []string{"src/a.go"}, ""},
		{"no agent id: every lease is another's", nil, "", gdT0, []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:src/**"},
		{"unknown agent is another agent", nil, "agent-z", gdT0, []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:src/**"},
		{"path outside the scope", nil, "agent-b", gdT0, []string{"docs/a.md", "srcx/a.go"}, ""},
		{"no paths", nil, "agent-b", gdT0, nil, ""},
		{"only the covered paths are reported", nil, "agent-b", gdT0, []string{"docs/a.md", "src/z.go", "src/a.go"},
			"src/a.go:g/todo_aaa:agent-a:src/** src/z.go:g/todo_aaa:agent-a:src/**"},
		{"expired lease does not block", nil, "agent-b", gdMin(10), []string{"src/a.go"}, ""},
		{"a minute before expiry it blocks", nil, "agent-b", gdMin(9), []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:src/**"},
		{"released lease does not block", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, func(_ *Todo, l *Lease) {
				l.Status, l.ReleasedAt = LeaseReleased, &gdT0
			}, "src/**")
		}, "agent-b", gdT0, []string{"src/a.go"}, ""},
		{"closed todo does not block", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, func(td *Todo, _ *Lease) { td.Status = TodoDone }, "src/**")
		}, "agent-b", gdT0, []string{"src/a.go"}, ""},
		{"unregistered owner does not block", func(f *gdFix) { f.agent("g", "agent-a", AgentUnregistered) },
			"agent-b", gdT0, []string{"src/a.go"}, ""},
		{"excluded owner does not block", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, func(td *Todo, _ *Lease) { td.ExcludedAgents = []string{"agent-a"} }, "src/**")
		}, "agent-b", gdT0, []string{"src/a.go"}, ""},
		{"claim held by another agent makes the lease ineffective", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, func(td *Todo, _ *Lease) { td.ClaimedBy = "agent-c" }, "src/**")
		}, "agent-b", gdT0, []string{"src/a.go"}, ""},
		{"claim held by the owner keeps it effective", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, func(td *Todo, _ *Lease) { td.ClaimedBy = "agent-a" }, "src/**")
		}, "agent-b", gdT0, []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:src/**"},
		{"a lease without scopes never blocks", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, nil)
		}, "agent-b", gdT0, []string{"src/a.go"}, ""},
		{"own lease covering the path wins over another's", func(f *gdFix) {
			f.lease("g", "todo_bbb", "agent-b", 10, nil, "src/a.go")
		}, "agent-b", gdT0, []string{"src/a.go", "src/b.go"}, "src/b.go:g/todo_aaa:agent-a:src/**"},
		{"own lease in another goal counts too", func(f *gdFix) {
			f.goal("h", "agent-b")
			f.lease("h", "todo_bbb", "agent-b", 10, nil, "src/**")
		}, "agent-b", gdT0, []string{"src/a.go"}, ""},
		{"own ineffective lease does not help", func(f *gdFix) {
			f.lease("g", "todo_bbb", "agent-b", 1, nil, "src/**")
		}, "agent-b", gdMin(2), []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:src/**"},
		{"every goal is checked, sorted by path, goal, todo", func(f *gdFix) {
			f.goal("a-goal", "agent-c")
			f.lease("a-goal", "todo_ccc", "agent-c", 10, nil, "docs/**", "src/a.go")
		}, "agent-b", gdT0, []string{"src/a.go", "docs/x.md"},
			"docs/x.md:a-goal/todo_ccc:agent-c:docs/** src/a.go:a-goal/todo_ccc:agent-c:src/a.go src/a.go:g/todo_aaa:agent-a:src/**"},
		{"one violation per lease: first covering scope", func(f *gdFix) {
			f.lease("g", "todo_aaa", "agent-a", 10, nil, "src/**", "src/a.go", "**/*.go")
		}, "agent-b", gdT0, []string{"src/a.go"}, "src/a.go:g/todo_aaa:agent-a:**/*.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base()
			if c.setup != nil {
				c.setup(f)
			}
			if got := gdShort(f.check(t, c.agent, c.now, c.paths...)); got != c.want {
				t.Errorf("violations:\n got  %q\n want %q", got, c.want)
			}
		})
	}
}

func TestGuardCheckDetails(t *testing.T) {
	f := newGD()
	f.goal("g", "agent-a")
	f.lease("g", "todo_aaa", "agent-a", 10, nil, "src/**")
	got := f.check(t, "agent-b", gdT0, "src/a.go")
	want := []GuardViolation{{Path: "src/a.go", Goal: "g", TodoID: "todo_aaa", Owner: "agent-a", Scope: "src/**", ExpiresAt: gdMin(10)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestGuardCheckErrors(t *testing.T) {
	f := newGD()
	f.goal("g", "agent-a")
	f.lease("g", "todo_aaa", "agent-a", 10, nil, "src/**")
	v := NewView(f.files, "rev", gdT0)
	if _, err := GuardCheck(v, []string{"g"}, "Bad Agent", []string{"src/a.go"}, gdT0); !gdIsCode(err, CodeInvalidAgentID) {
		t.Errorf("bad agent id: got %v, want invalid_agent_id", err)
	}
	// A corrupt lease record fails closed, naming the path.
	f.files[LeasePath("g", "todo_bbb")] = []byte("todo_id: [\n")
	v = NewView(f.files, "rev", gdT0)
	_, err := GuardCheck(v, []string{"g"}, "agent-b", []string{"src/a.go"}, gdT0)
	if !gdIsCode(err, CodeCorruptRecord) {
		t.Fatalf("corrupt lease: got %v, want corrupt_record", err)
	}
	if e, _ := AsError(err); e.Details["path"] != LeasePath("g", "todo_bbb") {
		t.Errorf("corrupt_record path = %v", e.Details["path"])
	}
	// A corrupt todo behind a covering lease fails closed too.
	delete(f.files, LeasePath("g", "todo_bbb"))
	f.files[TodoPath("g", "todo_aaa")] = []byte("todo_id: todo_aaa\nstatus: nonsense\n")
	v = NewView(f.files, "rev", gdT0)
	if _, err := GuardCheck(v, []string{"g"}, "agent-b", []string{"src/a.go"}, gdT0); !gdIsCode(err, CodeCorruptRecord) {
		t.Errorf("corrupt todo: got %v, want corrupt_record", err)
	}
}

func gdIsCode(err error, code Code) bool {
	e, ok := AsError(err)
	return ok && e.Code == code
}

func TestGuardGoals(t *testing.T) {
	f := newGD()
	f.goal("g", "agent-a")
	f.goal("h", "agent-a")
	f.goal("empty")
	v := NewView(f.files, "rev", gdT0)
	if goals, err := GuardGoals(v); err != nil || len(goals) != 0 {
		t.Fatalf("no leases: got %v, %v", goals, err)
	}
	f.lease("h", "todo_aaa", "agent-a", 10, nil, "src/**")
	v = NewView(f.files, "rev", gdT0)
	v.PutFile(LeasePath("g", "todo_bbb"), []byte("x")) // the overlay counts too
	if goals, err := GuardGoals(v); err != nil || !reflect.DeepEqual(goals, []string{"g", "h"}) {
		t.Fatalf("got %v, %v; want [g h]", goals, err)
	}
}

func TestCommitAgentTrailer(t *testing.T) {
	cases := []struct {
		name, msg string
		agent     string
		found     bool
		code      Code
	}{
		{"none", "fix the lexer\n", "", false, ""},
		{"empty message (--allow-empty-message)", "", "", false, ""},
		{"blank message", "\n\n", "", false, ""},
		{"subject only is never a trailer", "Loopx-Agent: agent-a\n", "", false, ""},
		{"last paragraph", "fix\n\nbody text\n\nLoopx-Agent: agent-a\n", "agent-a", true, ""},
		{"among other trailers", "fix\n\nSigned-off-by: A <a@x>\nLoopx-Agent: agent-b\nCo-authored-by: C <c@x>\n", "agent-b", true, ""},
		{"key case-insensitive, blanks trimmed", "fix\n\nloopx-agent :  agent-a  \n", "agent-a", true, ""},
		{"trailing blank lines", "fix\n\nLoopx-Agent: agent-a\n\n\n", "agent-a", true, ""},
		{"CRLF", "fix\r\n\r\nLoopx-Agent: agent-a\r\n", "agent-a", true, ""},
		{"not in the last paragraph", "fix\n\nLoopx-Agent: agent-a\n\nmore text\n", "", false, ""},
		{"a continuation line is not a key", "fix\n\nNote: x\n Loopx-Agent: agent-a\n", "", false, ""},
		{"repeated, same agent", "fix\n\nLoopx-Agent: agent-a\nLoopx-Agent: agent-a\n", "agent-a", true, ""},
		{"two agents", "fix\n\nLoopx-Agent: agent-a\nLoopx-Agent: agent-b\n", "", false, CodeInvalidAgentID},
		{"not an agent id", "fix\n\nLoopx-Agent: Agent A\n", "", false, CodeInvalidAgentID},
		{"empty value", "fix\n\nLoopx-Agent:\n", "", false, CodeInvalidAgentID},
		{"other key with the prefix", "fix\n\nLoopx-Agent-Id: agent-a\n", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, found, err := CommitAgentTrailer(c.msg)
			if c.code != "" {
				if e, ok := AsError(err); !ok || e.Code != c.code {
					t.Fatalf("err = %v, want %s", err, c.code)
				}
				return
			}
			if err != nil || a != c.agent || found != c.found {
				t.Fatalf("= %q %v %v, want %q %v", a, found, err, c.agent, c.found)
			}
		})
	}
}

func TestCommitAgent(t *testing.T) {
	f := newGD()
	f.goal("g", "agent-a")
	f.goal("h")
	f.agent("h", "agent-gone", AgentUnregistered)
	v := NewView(f.files, "rev", gdT0)
	trailer := "fix\n\nLoopx-Agent: agent-t\n"
	cases := []struct {
		name, msg, email, configured string
		nilView                      bool
		agent, from                  string
		code                         Code
	}{
		{"trailer first", trailer, "agent-a@x", "agent-c", false, "agent-t", AgentFromTrailer, ""},
		{"configured next", "fix\n", "agent-a@x", "agent-c", false, "agent-c", "git_config", ""},
		{"author e-mail of a registered agent", "fix\n", "agent-a@loopx.invalid", "", false, "agent-a", AgentFromAuthorEmail, ""},
		{"author e-mail of an unknown agent", "fix\n", "someone@example.com", "", false, "", AgentFromNone, ""},
		{"author e-mail of an unregistered agent", "fix\n", "agent-gone@x", "", false, "", AgentFromNone, ""},
		{"author e-mail that is no agent id", "fix\n", "Some.One+x@example.com", "", false, "", AgentFromNone, ""},
		{"no store at that time", "fix\n", "agent-a@x", "", true, "", AgentFromNone, ""},
		{"bad trailer refused", "fix\n\nLoopx-Agent: A B\n", "agent-a@x", "agent-c", false, "", "", CodeInvalidAgentID},
		{"bad configured id refused", "fix\n", "agent-a@x", "Bad Id", false, "", "", CodeInvalidAgentID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vv := v
			if c.nilView {
				vv = nil
			}
			a, from, err := CommitAgent(vv, c.msg, c.email, c.configured, "git_config")
			if c.code != "" {
				if e, ok := AsError(err); !ok || e.Code != c.code {
					t.Fatalf("err = %v, want %s", err, c.code)
				}
				return
			}
			if err != nil || a != c.agent || from != c.from {
				t.Fatalf("= %q %q %v, want %q %q", a, from, err, c.agent, c.from)
			}
		})
	}
}
