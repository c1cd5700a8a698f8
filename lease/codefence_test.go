package lease

import (
	"strings"
	"testing"
)

// fenceFix: goal g; agent-a holds todo_lexer (epoch 2, src/lexer/**; epoch 1
// was agent-b's, taken over), agent-b holds todo_parser (epoch 1,
// src/parser/**); todo_done's lease (docs/**) was released by agent-b;
// todo_gone's (old/**) expired.
func fenceFix(t *testing.T, signing bool) *gdFix {
	t.Helper()
	f := newGD()
	f.files[MetaPath] = Encode(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: gdT0, RequireSignatures: signing})
	f.goal("g")
	f.keyed("g", "agent-a", RoleAgent, keyA, nil, false)
	f.keyed("g", "agent-b", RoleAgent, keyB, nil, false)
	f.lease("g", "todo_lexer", "agent-a", 60, func(_ *Todo, l *Lease) {
		l.Epoch, l.Version = 2, 2
		l.Holders = []Holder{{Epoch: 1, Owner: "agent-b", IdempotencyKey: "old", StartedAt: gdT0, EndReason: "expired"},
			{Epoch: 2, Owner: "agent-a", IdempotencyKey: "k-todo_lexer", StartedAt: gdT0}}
	}, "src/lexer/**")
	f.lease("g", "todo_parser", "agent-b", 60, nil, "src/parser/**")
	f.lease("g", "todo_done", "agent-b", 60, func(_ *Todo, l *Lease) {
		l.Status, l.ReleasedAt, l.Epoch, l.Version = LeaseReleased, timePtr(gdMin(1)), 2, 3
		l.Holders = []Holder{{Epoch: 1, Owner: "agent-a", IdempotencyKey: "a1", StartedAt: gdT0, EndReason: "expired"},
			{Epoch: 2, Owner: "agent-b", IdempotencyKey: "k-todo_done", StartedAt: gdT0, EndedAt: timePtr(gdMin(1)), EndReason: "released"}}
	}, "docs/**")
	f.lease("g", "todo_gone", "agent-b", -1, nil, "old/**")
	return f
}

var keyA, keyB, keyC string

func TestJudgeCode(t *testing.T) {
	keyA, keyB, keyC = edKey(t), edKey(t), edKey(t)
	msg := func(trailers ...string) string {
		return "work\n\nbody\n\n" + strings.Join(trailers, "\n") + "\n"
	}
	p := func(paths ...string) []CodePath {
		var out []CodePath
		for _, s := range paths {
			link, target, ok := strings.Cut(s, " -> ")
			if ok {
				out = append(out, CodePath{Path: link, LinkTarget: LinkTarget(link, target)})
			} else {
				out = append(out, CodePath{Path: s})
			}
		}
		return out
	}
	cases := []struct {
		name    string
		signing bool
		c       CodeCommit
		want    string // "code:path" of each refusal, space separated
	}{
		{"a path no lease covers passes", false, CodeCommit{Message: "plain\n", Paths: p("README.md", "cmd/x.go")}, ""},
		{"nobody's commit into a's scope", false, CodeCommit{Message: "plain\n", Paths: p("src/lexer/a.go")}, "write_scope_conflict:src/lexer/a.go"},
		{"a's own scope", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_lexer@2"), Paths: p("src/lexer/a.go")}, ""},
		{"b into a's scope", false, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("src/lexer/a.go", "src/parser/p.go")}, "write_scope_conflict:src/lexer/a.go"},
		{"a deletion is a write", false, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("src/lexer/gone.go")}, "write_scope_conflict:src/lexer/gone.go"},
		{"a rename out of a's scope: its old path", false, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("src/lexer/a.go", "src/parser/a.go")}, "write_scope_conflict:src/lexer/a.go"},
		{"case folded", false, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("Src/Lexer/X.go")}, "write_scope_conflict:Src/Lexer/X.go"},
		{"a symlink into a's scope", false, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("tools/link -> ../src/lexer/a.go")}, "write_scope_conflict:tools/link -> src/lexer/a.go"},
		{"a symlink out of the repository", false, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("tools/link -> ../../etc/passwd")}, ""},
		{"a released lease guards nothing", false, CodeCommit{Message: msg("Loopx-Agent: agent-a"), Paths: p("docs/x.md")}, ""},
		{"an expired lease guards nothing", false, CodeCommit{Message: msg("Loopx-Agent: agent-a"), Paths: p("old/x.go")}, ""},
		{"the paused writer: epoch 1 since held by a", false, CodeCommit{Message: msg("Loopx-Agent: agent-b", "Loopx-Lease: g/todo_lexer@1"), Paths: p("src/lexer/a.go")},
			"stale_epoch: write_scope_conflict:src/lexer/a.go"},
		{"the paused writer after the taker released: still stale", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_done@1"), Paths: p("docs/x.md")},
			"stale_epoch:"},
		{"epoch 0 is no lease", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_lexer@0"), Paths: nil}, "invalid_request:"},
		{"a lease never held by its agent", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_parser@1"), Paths: p("README.md")}, "stale_epoch:"},
		{"a lease from the future", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_lexer@3"), Paths: nil}, "stale_epoch:"},
		{"a lease that does not exist", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_nothing@1"), Paths: nil}, "stale_epoch:"},
		{"a lease named by nobody", false, CodeCommit{Message: msg("Loopx-Lease: g/todo_lexer@2"), Paths: nil}, "stale_epoch:"},
		{"a malformed lease trailer", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Lease: g/todo_lexer"), Paths: nil}, "invalid_request:"},
		{"two agents named", false, CodeCommit{Message: msg("Loopx-Agent: agent-a", "Loopx-Agent: agent-b"), Paths: nil}, "invalid_agent_id:"},
		{"the subject is not a trailer", false, CodeCommit{Message: "Loopx-Agent: agent-a\n", Paths: p("src/lexer/a.go")}, "write_scope_conflict:src/lexer/a.go"},

		// A store that requires signatures: identity is proven.
		{"signed by the named agent", true, CodeCommit{Message: msg("Loopx-Agent: agent-a"), Paths: p("src/lexer/a.go"), Signed: true, SignerKey: keyA}, ""},
		{"the trailer lies: signed by b's key", true, CodeCommit{Message: msg("Loopx-Agent: agent-a"), Paths: p("src/lexer/a.go"), Signed: true, SignerKey: keyB}, "signature_invalid:src/lexer/a.go"},
		{"unsigned into a leased scope", true, CodeCommit{Message: msg("Loopx-Agent: agent-a"), Paths: p("src/lexer/a.go")}, "signature_required:src/lexer/a.go"},
		{"a bad signature", true, CodeCommit{Message: msg("Loopx-Agent: agent-a"), Paths: p("src/lexer/a.go"), Signed: true, SignatureProblem: "the signature does not verify"}, "signature_invalid:src/lexer/a.go"},
		{"nobody into an expired lease's scope: signed by nobody", true, CodeCommit{Message: "plain\n", Paths: p("old/x.go")}, "signature_required:old/x.go"},
		{"unsigned outside every leased scope", true, CodeCommit{Message: "plain\n", Paths: p("README.md")}, ""},
		{"an unknown key", true, CodeCommit{Message: msg("Loopx-Agent: agent-b"), Paths: p("src/parser/p.go"), Signed: true, SignerKey: keyC}, "signature_invalid:src/parser/p.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fenceFix(t, c.signing)
			fence, err := NewCodeFence(NewView(f.files, "rev", gdT0), gdMin(5))
			if err != nil {
				t.Fatal(err)
			}
			c.c.Hash = "c0ffee"
			got, err := fence.Judge(c.c)
			if err != nil {
				t.Fatal(err)
			}
			var short []string
			for _, r := range got {
				short = append(short, string(r.Code)+":"+r.Path)
				if r.Revision != "c0ffee" || r.Message == "" {
					t.Errorf("refusal without its commit or message: %+v", r)
				}
			}
			if strings.Join(short, " ") != c.want {
				t.Fatalf("got %q, want %q\n%+v", strings.Join(short, " "), c.want, got)
			}
		})
	}
}

func TestLinkTarget(t *testing.T) {
	for _, c := range []struct{ link, target, want string }{
		{"a/b/link", "../c/d.go", "a/c/d.go"},
		{"link", "src/x", "src/x"},
		{"a/link", "../../x", ""},
		{"a/link", "/etc/passwd", ""},
		{"a/link", "", ""},
		{"a/link", ".", "a"},
	} {
		if got := LinkTarget(c.link, c.target); got != c.want {
			t.Errorf("LinkTarget(%q, %q) = %q, want %q", c.link, c.target, got, c.want)
		}
	}
}
