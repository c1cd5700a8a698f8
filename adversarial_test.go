package loopx_test

// The adversarial suite of governance (contract section 8), against a real
// `git daemon` on 127.0.0.1 whose pre-receive hook is the one `loopx
// server-hook install` writes, in a store that requires signatures and has
// one admin (root). Each attack is tried twice: through the command line,
// which refuses before anything is written, and as a commit made by hand —
// well formed, its request decided as an honest loopx would decide it if
// the store had no admins, signed by the attacker's own registered key —
// pushed with plain git: the hook refuses it. Afterwards the server's ref
// has not moved and the victim's lease is intact.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx/lease"
)

// forgeCommit builds, with git plumbing in dir and nothing of loopx's
// mutation path, the commit an honest loopx would make for call on parent
// at when if the store named no admins: the request resolved and decided
// on the parent's records with the admins left out of loopx.yaml, the
// decision's writes laid on the parent's tree (a loopx.yaml it writes keeps
// the parent's admins), the message and identity loopx writes, signed with
// signer. Its one fault is that its author had no authority.
func forgeCommit(t *testing.T, dir, parent string, call lease.Call, when time.Time, signer ssh.Signer) string {
	t.Helper()
	files := lease.MemFiles{}
	for _, p := range strings.Fields(git(t, dir, "ls-tree", "-r", "--name-only", parent)) {
		out, _, err := gitIn(t, dir, nil, "", "cat-file", "blob", parent+":"+p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = []byte(out + "\n")
	}
	var secs int64
	fmt.Sscan(git(t, dir, "log", "-1", "--format=%ct", parent), &secs)
	parentTime := time.Unix(secs, 0).UTC()
	meta, err := lease.NewView(files, parent, parentTime).Meta()
	if err != nil || meta == nil {
		t.Fatalf("the parent's loopx.yaml: %v", err)
	}
	open := *meta
	open.Admins = nil
	files[lease.MetaPath] = lease.Encode(&open)
	v := lease.NewView(files, parent, parentTime)
	c := call.Clone()
	if err := c.Resolve(v, lease.Defaults{}, when); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	o, err := c.Decide(v, when)
	if err != nil || !o.Write {
		t.Fatalf("the open store's decision: %v (%+v)", err, o)
	}
	req, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o.Request = string(req)
	idx := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "forged.idx")}
	if _, out, err := gitIn(t, dir, idx, "", "read-tree", parent); err != nil {
		t.Fatal(out)
	}
	for _, ch := range v.Changes() {
		data := ch.Data
		if ch.Path == lease.MetaPath && data != nil {
			m, err := lease.NewView(lease.MemFiles{lease.MetaPath: data}, "", when).Meta()
			if err != nil {
				t.Fatal(err)
			}
			m.Admins = meta.Admins
			data = lease.Encode(m)
		}
		if data == nil {
			if _, out, err := gitIn(t, dir, idx, "", "update-index", "--force-remove", ch.Path); err != nil {
				t.Fatal(out)
			}
			continue
		}
		blob, out, err := gitIn(t, dir, nil, string(data), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(out)
		}
		if _, out, err := gitIn(t, dir, idx, "", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+ch.Path); err != nil {
			t.Fatal(out)
		}
	}
	tree, out, err := gitIn(t, dir, idx, "", "write-tree")
	if err != nil {
		t.Fatal(out)
	}
	actor := o.Actor
	if actor == "" {
		actor = "loopx"
	}
	ts := fmt.Sprintf("%d +0000", when.Unix())
	msg := o.Message()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	payload := fmt.Sprintf("tree %s\nparent %s\nauthor %s <%s@loopx.invalid> %s\ncommitter loopx <loopx@loopx.invalid> %s\n\n%s",
		tree, parent, actor, actor, ts, ts, msg)
	sig, err := sshsig.Sign(strings.NewReader(payload), signer, sshsig.HashSHA512, "git")
	if err != nil {
		t.Fatal(err)
	}
	return writeCommit(t, dir, withSig(payload, string(sshsig.Armor(sig))))
}

func TestAdversarialGovernance(t *testing.T) {
	t.Parallel()
	needGit(t)
	srv, bare := hookedServer(t, "daemon")
	keys := t.TempDir()
	kroot, ka, kb, kc := newAgentKey(t, keys, "root"), newAgentKey(t, keys, "a"), newAgentKey(t, keys, "b"), newAgentKey(t, keys, "c")
	dir := signedMachine(t, srv.url("state"), kroot, "--require-signatures", "--admin", "root", "--admin-key", kroot.pub)
	mustEnv(t, dir, ka.env(), "goal", "create", "--goal-id", "g")
	mustEnv(t, dir, ka.env(), "agent", "register", "--goal-id", "g", "--agent-id", "a", "--signing-key", ka.pub)
	mustEnv(t, dir, kb.env(), "agent", "register", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb.pub)
	mustEnv(t, dir, ka.env(), "todo", "add", "--goal-id", "g", "--todo-id", "todo_victim", "--text", "a's work", "--agent-id", "a",
		"--required-write-scope", "src/**")
	mustEnv(t, dir, ka.env(), "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_victim", "--owner", "a",
		"--idempotency-key", "exec-a", "--ttl-seconds", "3600")
	head := git(t, bare, "rev-parse", "refs/loopx/state")
	now := time.Now().UTC().Truncate(time.Second)

	// The attacker's clone: b, with b's key only.
	evil := t.TempDir()
	git(t, evil, "init", "-q")
	git(t, evil, "remote", "add", "origin", srv.url("state"))
	mustEnv(t, evil, kb.env(), "init", "--remote", "origin")
	if got := git(t, evil, "rev-parse", "refs/loopx/state"); got != head {
		t.Fatalf("the attacker's clone is at %s, the server at %s", got, head)
	}

	// lead: an orchestrator with reassign authority, registered by the admin.
	kl := newAgentKey(t, keys, "lead")
	mustEnv(t, dir, kroot.env(), "agent", "register", "--goal-id", "g", "--agent-id", "lead", "--role", "orchestrator",
		"--lifecycle-authority", "reassign", "--signing-key", kl.pub, "--by", "root")
	head = git(t, bare, "rev-parse", "refs/loopx/state")
	mustEnv(t, evil, kb.env(), "todo", "list", "--goal-id", "g") // the attacker's clone follows
	var headSecs int64
	fmt.Sscan(git(t, bare, "log", "-1", "--format=%ct", head), &headSecs)
	now = time.Now().UTC().Truncate(time.Second)
	if h := time.Unix(headSecs, 0).UTC(); now.Before(h) {
		now = h
	}

	attacks := []struct {
		name string
		key  agentKey   // the attacker's own key, registered or registering
		cli  []string   // the command the attacker runs (refused locally)
		call lease.Call // the same request, made by hand and pushed
	}{
		{"self-made orchestrator", kc,
			[]string{"agent", "register", "--goal-id", "g", "--agent-id", "boss", "--role", "orchestrator", "--lifecycle-authority", "reassign", "--signing-key", kc.pub},
			lease.CallOf(lease.RegisterRequest{Goal: "g", Agent: "boss", Role: lease.RoleOrchestrator, LifecycleAuthority: []string{"reassign"}, SigningKey: pubOf(t, kc)})},
		{"an orchestrator re-keys another agent", kl,
			[]string{"agent", "rotate-key", "--goal-id", "g", "--agent-id", "a", "--signing-key", kc.pub, "--by", "lead"},
			lease.CallOf(lease.RotateKeyRequest{Goal: "g", Agent: "a", SigningKey: pubOf(t, kc), By: "lead"})},
		{"an orchestrator unregisters another agent", kl,
			[]string{"agent", "unregister", "--goal-id", "g", "--agent-id", "a", "--by", "lead"},
			lease.CallOf(lease.UnregisterRequest{Goal: "g", Agent: "a", By: "lead"})},
		{"loosened rules: the skew bound", kb,
			[]string{"init", "--max-clock-skew-seconds", "86400", "--by", "b"},
			lease.CallOf(lease.InitRequest{FormatVersion: lease.FormatVersion, MaxClockSkewSeconds: 86400, By: "b"})},
		{"goal archive kills every lease", kb,
			[]string{"goal", "archive", "--goal-id", "g", "--agent-id", "b"},
			lease.CallOf(lease.GoalArchiveRequest{Goal: "g", Actor: "b"})},
		{"self-made admin", kb,
			[]string{"admin", "add", "--admin-id", "b", "--signing-key", kb.pub},
			lease.CallOf(lease.AdminAddRequest{Admin: "b", SigningKey: pubOf(t, kb)})},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			r := loopx(t, evil, a.key.env(), a.cli...)
			if r.code != 1 || r.errCode() != "authority_required" {
				t.Fatalf("the command line: exit %d %s", r.code, r.raw)
			}
			forged := forgeCommit(t, evil, head, a.call, now, a.key.signer)
			pushRefused(t, evil, bare, forged, head, "authority_required", false)
		})
	}

	// An older schema version whose rules were looser (todo.update/v1 let a
	// scope agent take its orchestrator's delegated claim): on a store of
	// format 3 it is no history, only a way around today's rules.
	t.Run("an older schema version's rules", func(t *testing.T) {
		mustEnv(t, dir, ka.env(), "todo", "add", "--goal-id", "g", "--todo-id", "todo_deleg", "--text", "delegated", "--agent-id", "a")
		mustEnv(t, dir, kl.env(), "todo", "claim", "--goal-id", "g", "--todo-id", "todo_deleg", "--agent-id", "lead", "--scope-agent-id", "b")
		base := git(t, bare, "rev-parse", "refs/loopx/state")
		mustEnv(t, evil, kb.env(), "todo", "list", "--goal-id", "g")
		r := loopx(t, evil, kb.env(), "todo", "update", "--goal-id", "g", "--todo-id", "todo_deleg", "--agent-id", "b", "--claimed-by", "b")
		if r.code != 1 || r.errCode() != "authority_required" {
			t.Fatalf("the command line: exit %d %s", r.code, r.raw)
		}
		call, err := lease.DecodeRequest([]byte(`{"schema":"loopx.todo.update/v1","goal_id":"g","todo_id":"todo_deleg","agent_id":"b","claimed_by":"b"}`))
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().UTC().Truncate(time.Second)
		var s int64
		fmt.Sscan(git(t, bare, "log", "-1", "--format=%ct", base), &s)
		if h := time.Unix(s, 0).UTC(); at.Before(h) {
			at = h
		}
		forged := forgeCommit(t, evil, base, call, at, kb.signer)
		pushRefused(t, evil, bare, forged, base, "unknown_schema", false)
		head = base
	})

	// Time travel: a reset dated yesterday, even by the admin with its key,
	// is refused by the server's clock; the attacker's own reset needs an
	// admin.
	t.Run("time travel", func(t *testing.T) {
		r := loopx(t, evil, append(kb.env(), "LOOPX_NOW="+now.Add(-24*time.Hour).Format(time.RFC3339)), "clock-reset", "--agent-id", "b", "--reason", "x")
		if r.code != 1 {
			t.Fatalf("clock-reset at a faked past: exit %d %s", r.code, r.raw)
		}
		// The head is not ahead of real time: a reset dated yesterday by the
		// admin finds "something to reset" only at its faked time.
		forged := forgeCommit(t, evil, head, lease.CallOf(lease.ClockResetRequest{Actor: "root", Reason: "x"}), now.Add(-24*time.Hour), kroot.signer)
		pushRefused(t, evil, bare, forged, head, "clock_skew", false)
	})

	// An offline commit pushed as it is.
	t.Run("offline commit published raw", func(t *testing.T) {
		mustEnv(t, evil, kb.env(), "--offline", "agent", "register", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb.pub)
		mustEnv(t, evil, kb.env(), "--offline", "todo", "add", "--goal-id", "g", "--agent-id", "b", "--todo-id", "todo_bee", "--text", "b")
		pushRefused(t, evil, bare, "refs/loopx/state", head, "offline_commit", false)
	})

	// Nothing moved; a's lease is intact and a still renews it.
	if after := git(t, bare, "rev-parse", "refs/loopx/state"); after != head {
		t.Fatalf("the server's ref moved: %s → %s", head, after)
	}
	r := mustEnv(t, dir, ka.env(), "task-lease", "inspect", "--goal-id", "g", "--todo-id", "todo_victim")
	l := r.out["lease"].(map[string]any)
	if l["owner"] != "a" || l["epoch"] != float64(1) || l["effective"] != true {
		t.Fatalf("the victim's lease: %s", r.raw)
	}
	mustEnv(t, dir, ka.env(), "task-lease", "renew", "--goal-id", "g", "--todo-id", "todo_victim", "--owner", "a",
		"--idempotency-key", "exec-a", "--expected-version", "1", "--ttl-seconds", "3600")
	// The admin does what the attacker could not, and the server accepts it.
	mustEnv(t, dir, kroot.env(), "agent", "register", "--goal-id", "g", "--agent-id", "boss", "--role", "orchestrator", "--by", "root")
	if r := must(t, srv.base, "verify", "--history", "--repo", bare); r.out["history"].(map[string]any)["valid"] != true {
		t.Fatalf("verify --history on the server: %s", r.raw)
	}
}

func pubOf(t *testing.T, k agentKey) string {
	t.Helper()
	data, err := os.ReadFile(k.pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
