package loopx_test

// The code fence (contract section 9) against real Git servers on
// 127.0.0.1 (`git daemon` and `git http-backend`), the pre-receive hook
// written by `loopx server-hook install` (code refs guarded by default),
// agents working in clones with `loopx guard install` (the pre-commit and
// commit-msg hooks) as people do: a push into another agent's leased scope,
// the paused writer's stale push (also after the taker released), a
// symlink, a case variant, a tag smuggled in first and a merge that throws
// away another agent's work are refused and the server's branch does not
// move; work outside every leased scope and a merge of main are accepted.
// In a store that requires signatures, commits made inside `loopx run` are
// signed by git itself with the agent's key, accepted, and verified by `git
// verify-commit`; unsigned commits into a leased scope, commits signed by
// another agent's key and author or trailer lies are refused.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/soak"
)

// fenceAgent is one agent's clone of a hooked server.
type fenceAgent struct {
	t   *testing.T
	id  string
	dir string
	env []string // PATH with a `loopx`, the agent's signing key
	key agentKey
}

// fencePath returns the environment entry that puts the test binary's
// `loopx` wrapper first on PATH (the hooks `loopx guard install` writes
// from a test binary call `loopx` on PATH).
func fencePath(t testing.TB) string {
	return "PATH=" + filepath.Dir(loopxWrapper(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// newFenceAgent clones url (or, first, makes the first clone: a commit
// pushed to main), runs `loopx init --remote origin` (with initArgs) and
// installs the guard hooks (pre-commit and commit-msg).
func newFenceAgent(t *testing.T, url, id, path string, key agentKey, first bool, initArgs ...string) *fenceAgent {
	t.Helper()
	a := &fenceAgent{t: t, id: id, dir: t.TempDir(), env: []string{path}, key: key}
	if key.priv != "" {
		a.env = append(a.env, key.env()...)
	}
	if first {
		a.git("init", "-q", "-b", "main")
		a.git("remote", "add", "origin", url)
	} else {
		a.git("clone", "-q", url, ".")
	}
	a.git("config", "user.name", id)
	a.git("config", "user.email", id+"@example.com")
	a.git("config", "loopx.agent", id)
	if first {
		a.write("README.md", "the project\n")
		a.git("add", "README.md")
		a.git("commit", "-q", "-m", "base")
		a.git("push", "-q", "origin", "HEAD:refs/heads/main")
	}
	a.loopx(append([]string{"init", "--remote", "origin"}, initArgs...)...)
	a.loopx("guard", "install")
	return a
}

func (a *fenceAgent) loopx(args ...string) result {
	a.t.Helper()
	return mustEnv(a.t, a.dir, a.env, args...)
}

// git runs git in the clone (hooks on PATH) and fails the test on error.
func (a *fenceAgent) git(args ...string) string {
	a.t.Helper()
	out, all, err := gitIn(a.t, a.dir, a.env, "", args...)
	if err != nil {
		a.t.Fatalf("%s: git %v: %v\n%s", a.id, args, err, all)
	}
	return out
}

func (a *fenceAgent) write(path, content string) {
	a.t.Helper()
	p := filepath.Join(a.dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		a.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		a.t.Fatal(err)
	}
}

// commit writes path and commits it with git commit (args added: -S,
// --no-verify, --trailer ...), returning the new commit.
func (a *fenceAgent) commit(path, msg string, args ...string) string {
	a.t.Helper()
	a.write(path, a.id+" wrote "+path+" at "+time.Now().Format(time.RFC3339Nano)+"\n")
	a.git("add", path)
	a.git(append([]string{"commit", "-q", "-m", msg}, args...)...)
	return a.git("rev-parse", "HEAD")
}

// commitAt commits as commit does, with its hooks deciding at now
// (LOOPX_NOW): a commit made while a short lease was in force, however long
// a loaded machine took to get there.
func (a *fenceAgent) commitAt(now time.Time, path, msg string, args ...string) string {
	a.t.Helper()
	saved := a.env
	a.env = append(slices.Clone(a.env), "LOOPX_NOW="+now.UTC().Format(time.RFC3339))
	defer func() { a.env = saved }()
	return a.commit(path, msg, args...)
}

// push pushes HEAD (or a refspec) and expects it accepted.
func (a *fenceAgent) push(refspec string) {
	a.t.Helper()
	if _, out, err := gitIn(a.t, a.dir, a.env, "", "push", "origin", refspec); err != nil {
		a.t.Fatalf("%s: push %s refused:\n%s", a.id, refspec, out)
	}
}

// fenceLine is one refusal line of the server hook, as the pusher sees it.
var fenceLine = regexp.MustCompile(`(?m)^remote: loopx server-hook: refused ([0-9a-f]{40}) on (\S+): ([a-z_]+)(?: \([a-z_]+\))?: (.*)$`)

// refusal is one refused commit, as the hook's line names it.
type refusal struct{ rev, ref, code, msg string }

func parseRefusals(out string) []refusal {
	var rs []refusal
	for _, m := range fenceLine.FindAllStringSubmatch(out, -1) {
		rs = append(rs, refusal{m[1], m[2], m[3], strings.TrimSpace(m[4])})
	}
	return rs
}

// pushFenced pushes refspec, expects the server hook to refuse it with
// exactly want (each "SHA code" or "SHA code: message part"), and checks
// the server's ref did not move. It returns git's output.
func (a *fenceAgent) pushFenced(bare, refspec string, want ...string) string {
	a.t.Helper()
	ref := refspec[strings.LastIndex(refspec, ":")+1:]
	before, _, _ := gitIn(a.t, bare, nil, "", "rev-parse", "--verify", "--quiet", ref)
	_, out, err := gitIn(a.t, a.dir, a.env, "", "push", "origin", refspec)
	if err == nil {
		a.t.Fatalf("%s: push %s was accepted, want %v:\n%s", a.id, refspec, want, out)
	}
	got := parseRefusals(out)
	if len(got) != len(want) || !strings.Contains(out, "pre-receive hook declined") {
		a.t.Fatalf("%s: push %s: %d refusal lines, want %d (%v):\n%s", a.id, refspec, len(got), len(want), want, out)
	}
	for _, w := range want {
		rev, rest, _ := strings.Cut(w, " ")
		code, part, _ := strings.Cut(rest, ": ")
		if !slices.ContainsFunc(got, func(r refusal) bool {
			return r.rev == rev && r.ref == ref && r.code == code && strings.Contains(r.msg, part)
		}) {
			a.t.Fatalf("%s: push %s: no refusal %q:\n%s", a.id, refspec, w, out)
		}
	}
	if after, _, _ := gitIn(a.t, bare, nil, "", "rev-parse", "--verify", "--quiet", ref); after != before {
		a.t.Fatalf("%s: push %s was refused, yet the server's %s moved: %s → %s", a.id, refspec, ref, before, after)
	}
	return out
}

func TestCodeFenceServer(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"daemon", "http"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "http" {
				// The hook is the same whichever transport brings the
				// push; the wire tests reach git http-backend in the
				// default tier.
				soak.Only(t, "the code fence through git http-backend")
			}
			t.Run("leases", func(t *testing.T) { codeFenceLeases(t, kind) })
			t.Run("signatures", func(t *testing.T) { codeFenceSignatures(t, kind) })
		})
	}
}

// codeFenceLeases: a store without signatures; agent-a and agent-b in
// their own clones.
func codeFenceLeases(t *testing.T, kind string) {
	srv, bare := hookedServer(t, kind)
	path := fencePath(t)
	url := srv.url("state")
	a := newFenceAgent(t, url, "agent-a", path, agentKey{}, true)
	a.loopx("goal", "create", "--goal-id", "g")
	for _, id := range []string{"agent-a", "agent-b"} {
		a.loopx("agent", "register", "--goal-id", "g", "--agent-id", id)
	}
	a.loopx("todo", "add", "--goal-id", "g", "--todo-id", "todo_parser", "--text", "the parser", "--required-write-scope", "src/parser/**")
	a.loopx("todo", "add", "--goal-id", "g", "--todo-id", "todo_lexer", "--text", "the lexer", "--required-write-scope", "src/lexer/**")
	b := newFenceAgent(t, url, "agent-b", path, agentKey{}, false)

	// The paused writer: agent-a commits under its lease (epoch 1) and is
	// paused past its TTL; agent-b takes the todo over (epoch 2), pushes
	// its work (accepted) and, later, releases.
	r := a.loopx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_parser", "--owner", "agent-a", "--idempotency-key", "exec-a", "--ttl-seconds", "3")
	expires, _ := time.Parse(time.RFC3339, r.out["lease"].(map[string]any)["expires_at"].(string))
	// Made a second before the lease expires (a loaded machine may take
	// longer than the 3 s TTL to get here).
	a.commitAt(expires.Add(-time.Second), "src/parser/a.go", "parser: first cut")
	if msg := a.git("log", "-1", "--format=%B"); !strings.Contains(msg, "Loopx-Agent: agent-a\nLoopx-Lease: g/todo_parser@1") {
		t.Fatalf("the commit-msg hook did not name the lease:\n%s", msg)
	}
	time.Sleep(time.Until(expires.Add(100 * time.Millisecond)))
	r = b.loopx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_parser", "--owner", "agent-b", "--idempotency-key", "exec-b", "--ttl-seconds", "600")
	if epoch := r.out["lease"].(map[string]any)["epoch"]; epoch != float64(2) {
		t.Fatalf("the takeover's epoch is %v: %s", epoch, r.raw)
	}
	b.git("pull", "-q", "--rebase", "origin", "main")
	b.commit("src/parser/b.go", "parser: done")
	b.push("HEAD:refs/heads/main")
	// agent-a wakes up and rebases its work on main as people do: the
	// commit keeps its message (its lease), gets a new hash and a fresh
	// committer date, which proves nothing.
	a.git("pull", "-q", "--rebase", "origin", "main")
	stale := a.git("rev-parse", "HEAD")
	out := a.pushFenced(bare, "HEAD:refs/heads/main",
		stale+" stale_epoch: Loopx-Lease g/todo_parser@1: the todo has since been held by agent-b (epoch 2)",
		stale+" write_scope_conflict: src/parser/a.go is inside agent-b's write scope src/parser/** (lease of g/todo_parser")
	t.Logf("the paused writer's push (%s):\n%s", kind, out)
	b.loopx("task-lease", "release", "--goal-id", "g", "--todo-id", "todo_parser", "--owner", "agent-b", "--idempotency-key", "exec-b", "--expected-version", "2")
	out = a.pushFenced(bare, "HEAD:refs/heads/main", stale+" stale_epoch: Loopx-Lease g/todo_parser@1: the todo has since been held by agent-b (epoch 2)")
	t.Logf("after agent-b released (%s):\n%s", kind, out)
	a.git("reset", "-q", "--hard", "origin/main")

	// agent-a holds the lexer; agent-b writes into it past its own hooks
	// (--no-verify skips the pre-commit guard): every way in is refused.
	a.loopx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "exec-a-lex", "--ttl-seconds", "600")
	b.loopx("todo", "list", "--goal-id", "g") // agent-b's clone sees the lease
	b.git("pull", "-q", "--rebase", "origin", "main")
	main := b.git("rev-parse", "HEAD")
	into := func(path string, args ...string) string {
		t.Helper()
		b.git("reset", "-q", "--hard", main)
		return b.commit(path, "b: "+path, append([]string{"--no-verify"}, args...)...)
	}
	conflict := func(path string) string {
		return " write_scope_conflict: " + path + " is inside agent-a's write scope src/lexer/** (lease of g/todo_lexer"
	}
	c := into("src/lexer/x.go")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+conflict("src/lexer/x.go"))
	// A branch is a code ref too; so is a new one.
	b.pushFenced(bare, "HEAD:refs/heads/b-work", c+conflict("src/lexer/x.go"))
	// A case variant, on a server that is case-sensitive.
	c = into("SRC/Lexer/Y.go")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+conflict("SRC/Lexer/Y.go"))
	// A symlink pointing into the scope.
	b.git("reset", "-q", "--hard", main)
	os.MkdirAll(filepath.Join(b.dir, "tools"), 0o755)
	if err := os.Symlink("../src/lexer/x.go", filepath.Join(b.dir, "tools", "lx")); err != nil {
		t.Fatal(err)
	}
	b.git("add", "tools/lx")
	b.git("commit", "-q", "--no-verify", "-m", "b: a link")
	c = b.git("rev-parse", "HEAD")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+conflict("tools/lx -> src/lexer/x.go"))
	// The author line proves nothing: agent-b's commit with agent-a's
	// name and e-mail is still agent-b's (its Loopx-Agent trailer).
	c = into("src/lexer/z.go", "--author", "agent-a <agent-a@example.com>", "--trailer", "Loopx-Agent: agent-b")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+conflict("src/lexer/z.go"))
	// Without signatures a Loopx-Agent trailer is a claim nobody can check:
	// the lie passes the fence here (the signatures subtest refuses it).
	// A commit first pushed to a ref the fence does not guard (a tag) is
	// judged when it reaches a guarded branch.
	c = into("src/lexer/w.go")
	b.push(c + ":refs/tags/smuggled")
	b.pushFenced(bare, c+":refs/heads/main", c+conflict("src/lexer/w.go"))
	// Several commits: each refused one is named, the clean one is not.
	b.git("reset", "-q", "--hard", main)
	b.commit("docs/ok.md", "b: docs")
	c = b.commit("src/lexer/v.go", "b: lexer", "--no-verify")
	b.commit("docs/ok2.md", "b: more docs")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+conflict("src/lexer/v.go"))

	// Work that touches no leased scope is accepted, trailers or not.
	b.git("reset", "-q", "--hard", main)
	b.commit("docs/notes.md", "b: notes")
	b.commit("src/shared/util.go", "plain", "--no-verify")
	b.push("HEAD:refs/heads/main")

	// agent-a's own work in its scope is accepted.
	a.git("pull", "-q", "--rebase", "origin", "main")
	base := a.git("rev-parse", "HEAD")
	a.commit("src/lexer/lexer.go", "lexer: tokens")
	a.push("HEAD:refs/heads/main")

	// A merge of main into agent-b's branch is accepted: main's commits
	// are not judged again (the merge wrote nothing of its own), on the
	// branch nor when the branch lands on main.
	b.git("reset", "-q", "--hard", base)
	b.commit("docs/guide.md", "b: guide")
	b.push("HEAD:refs/heads/b-guide")
	b.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
	if parents := strings.Fields(b.git("log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("no merge made: %v", parents)
	}
	b.push("HEAD:refs/heads/b-guide")
	b.push("HEAD:refs/heads/main")

	// A merge that throws main's work in agent-a's scope away (`-s ours`:
	// the merge takes agent-b's side, where src/lexer/lexer.go is as it was
	// before agent-a wrote it) writes into agent-a's scope: refused.
	a.git("pull", "-q", "--rebase", "origin", "main")
	a.commit("src/lexer/lexer.go", "lexer: more tokens")
	a.push("HEAD:refs/heads/main")
	b.git("checkout", "-q", "-b", "b-old", base)
	b.commit("docs/old.md", "b: old docs")
	b.git("fetch", "-q", "origin")
	b.git("merge", "-q", "-s", "ours", "--no-edit", "origin/main")
	ours := b.git("rev-parse", "HEAD")
	b.pushFenced(bare, "HEAD:refs/heads/main", ours+conflict("src/lexer/lexer.go"))

	// The client's own checks agree with the server: guard check --range
	// on the paused writer's commit (after the release: stale_epoch only).
	rr := loopx(t, a.dir, a.env, "guard", "check", "--range", stale+"~1.."+stale)
	if rr.code != 1 || rr.errCode() != "stale_epoch" {
		t.Fatalf("guard check --range of the stale commit: exit %d %s", rr.code, rr.raw)
	}
}

// codeFenceSignatures: a store that requires signatures; agent-a works
// inside `loopx run`, which has git sign its commits with agent-a's key.
func codeFenceSignatures(t *testing.T, kind string) {
	srv, bare := hookedServer(t, kind)
	path := fencePath(t)
	url := srv.url("state")
	keys := t.TempDir()
	kroot, ka, kb := newAgentKey(t, keys, "root"), newAgentKey(t, keys, "agent-a"), newAgentKey(t, keys, "agent-b")
	a := newFenceAgent(t, url, "agent-a", path, ka, true, "--require-signatures", "--admin", "root", "--admin-key", kroot.pub)
	a.loopx("goal", "create", "--goal-id", "g")
	a.loopx("agent", "register", "--goal-id", "g", "--agent-id", "agent-a", "--signing-key", ka.pub)
	a.loopx("todo", "add", "--goal-id", "g", "--agent-id", "agent-a", "--todo-id", "todo_lexer", "--text", "the lexer", "--required-write-scope", "src/lexer/**")
	a.loopx("todo", "add", "--goal-id", "g", "--agent-id", "agent-a", "--todo-id", "todo_api", "--text", "the api", "--required-write-scope", "src/api/**")
	b := newFenceAgent(t, url, "agent-b", path, kb, false)
	b.loopx("agent", "register", "--goal-id", "g", "--agent-id", "agent-b", "--signing-key", kb.pub)
	b.loopx("todo", "add", "--goal-id", "g", "--agent-id", "agent-b", "--todo-id", "todo_docs", "--text", "the docs", "--required-write-scope", "docs/**")
	allowed := filepath.Join(keys, "allowed_signers")
	pa, pb := pubOf(t, ka), pubOf(t, kb)
	if err := os.WriteFile(allowed, []byte("agent-a namespaces=\"git\" "+pa+"agent-b namespaces=\"git\" "+pb), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func(c *fenceAgent, rev, who string) {
		t.Helper()
		_, out, err := gitIn(t, c.dir, nil, "", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "-v", rev)
		if err != nil || !strings.Contains(out, `Good "git" signature for `+who) {
			t.Fatalf("git verify-commit %s: %v\n%s", rev, err, out)
		}
	}

	// agent-a's work inside `loopx run`: the command commits and pushes;
	// loopx run has git sign the commits (gpg.format=ssh, commit.gpgSign,
	// user.signingKey) and the commit-msg hook names the lease.
	log := filepath.Join(t.TempDir(), "push.log")
	script := `set -e
mkdir -p src/api
echo "package api // $LOOPX_OWNER at epoch $LOOPX_EPOCH" > src/api/api.go
git add src/api/api.go
git commit -q -m 'api: first cut'
git push origin HEAD:refs/heads/main 2>>"$PUSH_LOG"`
	r := loopx(t, a.dir, append(a.env, "PUSH_LOG="+log), "run", "--goal-id", "g", "--todo-id", "todo_api", "--owner", "agent-a",
		"--idempotency-key", "run-api", "--ttl-seconds", "600", "--", "sh", "-c", script)
	if r.code != 0 {
		pushed, _ := os.ReadFile(log)
		t.Fatalf("loopx run: exit %d %s\n%s", r.code, r.raw, pushed)
	}
	signed := a.git("rev-parse", "HEAD")
	if got := git(t, bare, "rev-parse", "refs/heads/main"); got != signed {
		t.Fatalf("the server's main is %s, not the commit pushed from inside loopx run (%s)", got, signed)
	}
	if msg := a.git("log", "-1", "--format=%B"); !strings.Contains(msg, "Loopx-Agent: agent-a\nLoopx-Lease: g/todo_api@1") {
		t.Fatalf("the commit made inside loopx run:\n%s", msg)
	}
	verify(a, signed, "agent-a")

	// agent-a holds the lexer; each of these, pushed by agent-b (or by
	// agent-a without its key), is refused and main stays.
	a.loopx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "exec-lex", "--ttl-seconds", "600")
	b.loopx("todo", "list", "--goal-id", "g")
	b.git("pull", "-q", "--rebase", "origin", "main")
	main := b.git("rev-parse", "HEAD")
	b.git("config", "gpg.format", "ssh")
	b.git("config", "user.signingKey", kb.priv)
	into := func(path string, args ...string) string {
		t.Helper()
		b.git("reset", "-q", "--hard", main)
		return b.commit(path, "b: "+path, append([]string{"--no-verify"}, args...)...)
	}
	// Signed by agent-b's key while claiming to be agent-a, under agent-a's
	// lease: the key is not agent-a's.
	c := into("src/lexer/x.go", "-S", "--trailer", "Loopx-Agent: agent-a", "--trailer", "Loopx-Lease: g/todo_lexer@1")
	verify(b, c, "agent-b") // a good signature: only not agent-a's
	b.pushFenced(bare, "HEAD:refs/heads/main", c+" signature_invalid: src/lexer/x.go is inside a leased scope: signed by another key, not by agent-a's registered key")
	// The same claim unsigned: the trailer lie without the key.
	c = into("src/lexer/x.go", "--trailer", "Loopx-Agent: agent-a", "--trailer", "Loopx-Lease: g/todo_lexer@1")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+" signature_required: src/lexer/x.go is inside a leased scope: the commit must be signed with agent-a's registered key")
	// The author line lie: agent-a's name and e-mail, no trailer.
	c = into("src/lexer/y.go", "--author", "agent-a <agent-a@example.com>")
	b.pushFenced(bare, "HEAD:refs/heads/main",
		c+" write_scope_conflict: src/lexer/y.go is inside agent-a's write scope src/lexer/**",
		c+" signature_required: src/lexer/y.go is inside a leased scope: the commit must name its agent (Loopx-Agent)")
	// agent-b's own signed commit into agent-a's scope: the signature is
	// good, the scope is not agent-b's.
	c = into("src/lexer/z.go", "-S", "--trailer", "Loopx-Agent: agent-b")
	b.pushFenced(bare, "HEAD:refs/heads/main", c+" write_scope_conflict: src/lexer/z.go is inside agent-a's write scope src/lexer/**")
	// agent-a's own commit into its own scope, unsigned (made outside
	// loopx run, signing turned off): signature_required.
	a.git("pull", "-q", "--rebase", "origin", "main")
	c = a.commit("src/lexer/lexer.go", "lexer: unsigned")
	a.pushFenced(bare, "HEAD:refs/heads/main", c+" signature_required: src/lexer/lexer.go is inside a leased scope: the commit must be signed with agent-a's registered key")
	// The same commit signed by git with agent-a's key is accepted.
	a.git("-c", "gpg.format=ssh", "-c", "user.signingKey="+ka.priv, "commit", "-q", "--amend", "--no-edit", "-S")
	c = a.git("rev-parse", "HEAD")
	verify(a, c, "agent-a")
	a.push("HEAD:refs/heads/main")

	// agent-b's own lease, its commit signed by git with its key: accepted.
	b.git("reset", "-q", "--hard", main)
	b.git("pull", "-q", "--rebase", "origin", "main")
	b.loopx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_docs", "--owner", "agent-b", "--idempotency-key", "exec-docs", "--ttl-seconds", "600")
	c = b.commit("docs/guide.md", "docs: guide", "-S")
	if msg := b.git("log", "-1", "--format=%B"); !strings.Contains(msg, "Loopx-Lease: g/todo_docs@1") {
		t.Fatalf("agent-b's commit:\n%s", msg)
	}
	verify(b, c, "agent-b")
	b.push("HEAD:refs/heads/main")
	// Unsigned work outside every leased scope is accepted: people who
	// never use loopx are not in its way.
	b.commit("README.md", "readme", "--no-verify")
	b.push("HEAD:refs/heads/main")
}

// TestCodeFenceHonestSession: four agents, each in its own clone, each
// inside `loopx run` on its own todo (its own write scope), commit and push
// to main through the hooked `git daemon` concurrently, rebasing when git
// rejects the push as people do (`git pull --rebase`, push again): every
// push lands in the end, and the hook refuses none of them.
func TestCodeFenceHonestSession(t *testing.T) {
	t.Parallel()
	const agents, commits = 4, 3
	srv, bare := hookedServer(t, "daemon")
	path := fencePath(t)
	url := srv.url("state")
	first := newFenceAgent(t, url, "agent-0", path, agentKey{}, true)
	first.loopx("goal", "create", "--goal-id", "g")
	clones := []*fenceAgent{first}
	for i := 0; i < agents; i++ {
		id := fmt.Sprintf("agent-%d", i)
		first.loopx("agent", "register", "--goal-id", "g", "--agent-id", id)
		first.loopx("todo", "add", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_part%d", i), "--text", "part "+id,
			"--required-write-scope", fmt.Sprintf("src/part%d/**", i))
		if i > 0 {
			clones = append(clones, newFenceAgent(t, url, id, path, agentKey{}, false))
		}
	}
	script := `set -e
for i in $(seq 1 $COMMITS); do
	mkdir -p "src/$PART"
	echo "change $i by $LOOPX_OWNER" > "src/$PART/f$i.go"
	git add -A src
	git commit -q -m "$PART: change $i"
	n=0
	until git push origin HEAD:refs/heads/main 2>>"$PUSH_LOG"; do
		n=$((n+1))
		[ "$n" -lt 30 ] || { echo "gave up after $n attempts" >&2; exit 1; }
		git pull -q --rebase origin main 2>>"$PUSH_LOG"
	done
	echo "pushed $i after $n rejections" >>"$PUSH_LOG"
done`
	logs := make([]string, agents)
	results := make([]result, agents)
	var wg sync.WaitGroup
	for i, c := range clones {
		logs[i] = filepath.Join(t.TempDir(), "push.log")
		wg.Add(1)
		go func(i int, c *fenceAgent) {
			defer wg.Done()
			env := append(slices.Clone(c.env), "PUSH_LOG="+logs[i], fmt.Sprintf("PART=part%d", i), fmt.Sprintf("COMMITS=%d", commits))
			results[i] = loopx(t, c.dir, env, "run", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_part%d", i), "--owner", c.id,
				"--idempotency-key", "run-"+c.id, "--ttl-seconds", "60", "--", "sh", "-c", script)
		}(i, c)
	}
	wg.Wait()
	rejections := 0
	for i, r := range results {
		data, _ := os.ReadFile(logs[i])
		log := string(data)
		if r.code != 0 {
			t.Errorf("%s: loopx run exit %d %s\n%s", clones[i].id, r.code, r.raw, log)
		}
		if rs := parseRefusals(log); len(rs) > 0 || strings.Contains(log, "loopx server-hook") || strings.Contains(log, "pre-receive hook declined") {
			t.Errorf("%s: the hook refused an honest push:\n%s", clones[i].id, log)
		}
		// Every rejection is git's own: main moved on meanwhile.
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "[rejected]") || strings.Contains(line, "[remote rejected]") {
				rejections++
				if !strings.Contains(line, "fetch first") && !strings.Contains(line, "non-fast-forward") &&
					!strings.Contains(line, "cannot lock ref") && !strings.Contains(line, "failed to update ref") {
					t.Errorf("%s: a rejection that is not git's non-fast-forward: %s", clones[i].id, line)
				}
			}
		}
	}
	// Everything landed: each part's commits, each naming its agent and lease.
	got := strings.Split(git(t, bare, "log", "--format=%H", "refs/heads/main"), "\n")
	if len(got) != 1+agents*commits {
		t.Fatalf("main has %d commits, want %d", len(got), 1+agents*commits)
	}
	for i := 0; i < agents; i++ {
		for n := 1; n <= commits; n++ {
			msg := git(t, bare, "log", "-1", "--format=%B", "--grep", fmt.Sprintf("^part%d: change %d$", i, n), "refs/heads/main")
			want := fmt.Sprintf("Loopx-Agent: agent-%d\nLoopx-Lease: g/todo_part%d@1", i, i)
			if !strings.Contains(msg, want) {
				t.Errorf("part%d change %d on main:\n%s", i, n, msg)
			}
		}
	}
	t.Logf("%d agents, %d commits each: all on main after %d rejections by git (none by the hook)", agents, commits, rejections)
}
