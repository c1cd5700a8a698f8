package loopx_test

// The server-side check against real Git servers on 127.0.0.1 (`git
// daemon` and `git http-backend`, which both run a bare repository's
// hooks), the hook installed by `loopx server-hook install`: forged,
// future-dated, non-fast-forward, unsigned and wrongly signed pushes are
// refused with the server's ref unchanged; a commit signed by `git
// commit-tree -S` with the agent's key is accepted; honest clients racing
// through the hooked server all succeed.

import (
	"bytes"
	"crypto/ed25519"
	crand "crypto/rand"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx/internal/soak"
)

// agentKey is an ed25519 key pair on disk.
type agentKey struct {
	priv, pub string
	signer    ssh.Signer
}

func newAgentKey(t testing.TB, dir, name string) agentKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(k, name)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, name)
	if err := os.WriteFile(priv, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sg, _ := ssh.NewSignerFromKey(k)
	if err := os.WriteFile(priv+".pub", ssh.MarshalAuthorizedKey(sg.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	return agentKey{priv: priv, pub: priv + ".pub", signer: sg}
}

func (k agentKey) env() []string { return []string{"LOOPX_SIGNING_KEY=" + k.priv} }

// loopxWrapper is a `loopx` executable for hooks: this test binary running
// the command line.
func loopxWrapper(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "loopx")
	script := "#!/bin/sh\nLOOPX_TEST_CLI=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// hookedServer serves a bare repository whose pre-receive hook is the one
// `loopx server-hook install` writes.
func hookedServer(t testing.TB, kind string) (*gitServer, string) {
	t.Helper()
	srv := serverOf(t, kind)
	bare := bareRepo(t, srv.base, "state")
	r := must(t, srv.base, "server-hook", "install", "--repo", bare, "--loopx", loopxWrapper(t))
	if r.out["changed"] != true {
		t.Fatalf("install: %s", r.raw)
	}
	return srv, bare
}

// signedMachine is machine() for a client acting with key k.
func signedMachine(t testing.TB, url string, k agentKey, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	git(t, dir, "remote", "add", "origin", url)
	if r := loopx(t, dir, k.env(), append([]string{"init", "--remote", "origin"}, extra...)...); r.code != 0 {
		t.Fatalf("init: %s", r.raw)
	}
	return dir
}

func mustEnv(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	r := loopx(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("loopx %v: exit %d: %s", args, r.code, r.raw)
	}
	return r
}

// gitIn runs git with extra environment and stdin, returning stdout and
// the combined output.
func gitIn(t testing.TB, dir string, env []string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return strings.TrimSpace(stdout.String()), stdout.String() + stderr.String(), err
}

// pushRefused pushes rev to the server's state ref with plain git and
// expects the hook to refuse it with want in its output, the server's ref
// staying at before.
func pushRefused(t *testing.T, dir, bare, rev, before, want string, force bool) {
	t.Helper()
	args := []string{"push", "origin", rev + ":refs/loopx/state"}
	if force {
		args = []string{"push", "--force", "origin", rev + ":refs/loopx/state"}
	}
	_, out, err := gitIn(t, dir, nil, "", args...)
	if err == nil {
		t.Fatalf("push of %s was accepted:\n%s", rev, out)
	}
	if !strings.Contains(out, "loopx server-hook: refused") || !strings.Contains(out, want) {
		t.Fatalf("push of %s: the hook's refusal does not say %q:\n%s", rev, want, out)
	}
	if after := git(t, bare, "rev-parse", "refs/loopx/state"); after != before {
		t.Fatalf("the server's ref moved: %s → %s", before, after)
	}
}

// splitSig returns a commit object without its gpgsig header, and the
// signature (as gitstore and git split them).
func splitSig(raw string) (payload, sig string) {
	var p, s strings.Builder
	head, body, _ := strings.Cut(raw, "\n\n")
	in := false
	for _, line := range strings.Split(head, "\n") {
		switch {
		case strings.HasPrefix(line, "gpgsig "):
			s.WriteString(strings.TrimPrefix(line, "gpgsig ") + "\n")
			in = true
		case in && strings.HasPrefix(line, " "):
			s.WriteString(line[1:] + "\n")
		default:
			in = false
			p.WriteString(line + "\n")
		}
	}
	return p.String() + "\n" + body, s.String()
}

// withSig puts an armored signature into a commit object as git does.
func withSig(payload, armored string) string {
	head, body, _ := strings.Cut(payload, "\n\n")
	sig := strings.ReplaceAll(strings.TrimSuffix(armored, "\n"), "\n", "\n ")
	return head + "\ngpgsig " + sig + "\n\n" + body
}

func writeCommit(t testing.TB, dir, raw string) string {
	t.Helper()
	out, all, err := gitIn(t, dir, nil, raw, "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		t.Fatalf("hash-object: %v %s", err, all)
	}
	return out
}

func TestServerHookRefuses(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"daemon", "http"} {
		t.Run(kind, func(t *testing.T) { serverHookRefuses(t, kind) })
	}
}

func serverHookRefuses(t *testing.T, kind string) {
	srv, bare := hookedServer(t, kind)
	keys := t.TempDir()
	ka, kb := newAgentKey(t, keys, "a"), newAgentKey(t, keys, "b")
	dir := signedMachine(t, srv.url("state"), ka, "--require-signatures", "--admin", "a", "--admin-key", ka.pub)
	mustEnv(t, dir, ka.env(), "goal", "create", "--goal-id", "g")
	mustEnv(t, dir, ka.env(), "agent", "register", "--goal-id", "g", "--agent-id", "a", "--signing-key", ka.pub)
	mustEnv(t, dir, kb.env(), "agent", "register", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb.pub)
	mustEnv(t, dir, ka.env(), "todo", "add", "--goal-id", "g", "--todo-id", "todo_hook", "--text", "x", "--agent-id", "a")
	lease := []string{"--goal-id", "g", "--todo-id", "todo_hook", "--owner", "a", "--idempotency-key", "k1"}
	mustEnv(t, dir, ka.env(), append([]string{"task-lease", "acquire", "--ttl-seconds", "7200"}, lease...)...)
	head := git(t, bare, "rev-parse", "refs/loopx/state")
	// The server's history verifies, signatures included.
	if r := must(t, srv.base, "verify", "--history", "--repo", bare); r.out["history"].(map[string]any)["valid"] != true {
		t.Fatalf("verify --history on the server: %s", r.raw)
	}

	// Locally, a client without the agent's key is refused before writing.
	r := loopx(t, dir, kb.env(), append([]string{"task-lease", "renew", "--ttl-seconds", "600", "--expected-version", "1"}, lease...)...)
	if r.code != 1 || r.errCode() != "signature_required" {
		t.Fatalf("renew with another agent's key: exit %d %s", r.code, r.raw)
	}

	// A forged state commit: the lease's owner changed with git plumbing.
	forger := t.TempDir()
	git(t, forger, "init", "-q")
	git(t, forger, "remote", "add", "origin", srv.url("state"))
	git(t, forger, "fetch", "-q", "origin", "refs/loopx/state:refs/loopx/state")
	leasePath := ""
	for _, p := range strings.Fields(git(t, forger, "ls-tree", "-r", "--name-only", head)) {
		if strings.Contains(p, "/leases/") {
			leasePath = p
		}
	}
	rec := strings.Replace(git(t, forger, "show", head+":"+leasePath), "owner: a", "owner: b", 1) + "\n"
	blob, _, _ := gitIn(t, forger, nil, rec, "hash-object", "-w", "--stdin")
	idx := []string{"GIT_INDEX_FILE=" + filepath.Join(forger, "forged.idx")}
	if _, out, err := gitIn(t, forger, idx, "", "read-tree", head); err != nil {
		t.Fatal(out)
	}
	if _, out, err := gitIn(t, forger, idx, "", "update-index", "--cacheinfo", "100644,"+blob+","+leasePath); err != nil {
		t.Fatal(out)
	}
	tree, _, _ := gitIn(t, forger, idx, "", "write-tree")
	msg := git(t, forger, "log", "-1", "--format=%B", head+"~1")
	ident := []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@loopx.invalid", "GIT_COMMITTER_NAME=loopx", "GIT_COMMITTER_EMAIL=loopx@loopx.invalid"}
	forged, out, err := gitIn(t, forger, ident, msg+"\n", "commit-tree", tree, "-p", head)
	if err != nil {
		t.Fatal(out)
	}
	pushRefused(t, forger, bare, forged, head, "corrupt_record", false)

	// A commit dated an hour ahead: the client's decision is refused by
	// the server, and the client says why.
	ahead := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = loopx(t, dir, append(ka.env(), "LOOPX_NOW="+ahead), append([]string{"task-lease", "renew", "--ttl-seconds", "600", "--expected-version", "1"}, lease...)...)
	if r.code != 1 || r.errCode() != "remote_rejected" {
		t.Fatalf("renew an hour ahead: exit %d %s", r.code, r.raw)
	}
	if e := r.out["error"].(map[string]any); e["reason"] != "clock_skew" || !strings.Contains(fmt.Sprint(e["message"]), "ahead of the server's clock") {
		t.Fatalf("the reason does not reach the client's error: %s", r.raw)
	}
	if after := git(t, bare, "rev-parse", "refs/loopx/state"); after != head {
		t.Fatalf("the server's ref moved to %s", after)
	}

	// A non-fast-forward (the ref forced back).
	pushRefused(t, forger, bare, head+"~2", head, "not_linear", true)

	// An unsigned commit, and one signed by another agent's key: an honest
	// offline renewal (signed by a) with its signature taken out or made
	// with b's key.
	mustEnv(t, forger, ka.env(), "init", "--remote", "origin")
	mustEnv(t, forger, ka.env(), append([]string{"--offline", "task-lease", "renew", "--ttl-seconds", "7200", "--expected-version", "1"}, lease...)...)
	honest := git(t, forger, "rev-parse", "refs/loopx/state")
	if git(t, forger, "rev-parse", honest+"~1") != head {
		t.Fatalf("the offline renewal is not a child of the server's head")
	}
	payload, sig := splitSig(git(t, forger, "cat-file", "commit", honest) + "\n")
	if sig == "" {
		t.Fatal("loopx did not sign its commit")
	}
	unsigned := writeCommit(t, forger, payload)
	pushRefused(t, forger, bare, unsigned, head, "signature_required", false)
	bsig, err := sshsig.Sign(strings.NewReader(payload), kb.signer, sshsig.HashSHA512, "git")
	if err != nil {
		t.Fatal(err)
	}
	wrong := writeCommit(t, forger, withSig(payload, string(sshsig.Armor(bsig))))
	pushRefused(t, forger, bare, wrong, head, "signature_invalid", false)
	// Tampered: a signature by a's key, but over other bytes.
	asig, err := sshsig.Sign(strings.NewReader(payload+"tampered"), ka.signer, sshsig.HashSHA512, "git")
	if err != nil {
		t.Fatal(err)
	}
	tampered := writeCommit(t, forger, withSig(payload, string(sshsig.Armor(asig))))
	pushRefused(t, forger, bare, tampered, head, "signature_invalid", false)

	// Interop: loopx's signature verifies with git, and the same commit
	// signed by `git commit-tree -S` with the agent's key is accepted.
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Log("ssh-keygen is not on the PATH: git cannot sign or verify SSH signatures; interop skipped")
		return
	}
	allowed := filepath.Join(keys, "allowed_signers")
	pubA, _ := os.ReadFile(ka.pub)
	if err := os.WriteFile(allowed, []byte("a@loopx.invalid namespaces=\"git\" "+string(pubA)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out, err := gitIn(t, forger, nil, "", "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", honest); err != nil {
		t.Fatalf("git verify-commit of loopx's commit: %v\n%s", err, out)
	}
	f := strings.Fields(git(t, forger, "log", "-1", "--format=%T %P %at", honest))
	date := f[2] + " +0000"
	ident = []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@loopx.invalid", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=loopx", "GIT_COMMITTER_EMAIL=loopx@loopx.invalid", "GIT_COMMITTER_DATE=" + date}
	msgFile := filepath.Join(forger, "msg")
	// Without its Loopx-Offline trailer: the server refuses offline work
	// pushed as it is (contract section 8); the message is otherwise loopx's.
	var kept []string
	for _, line := range strings.Split(git(t, forger, "log", "-1", "--format=%B", honest), "\n") {
		if !strings.HasPrefix(line, "Loopx-Offline: ") {
			kept = append(kept, line)
		}
	}
	os.WriteFile(msgFile, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	bygit, out, err := gitIn(t, forger, ident, "", "-c", "gpg.format=ssh", "-c", "user.signingKey="+ka.priv,
		"commit-tree", "-S", f[0], "-p", f[1], "-F", msgFile)
	if err != nil {
		t.Fatalf("git commit-tree -S: %v\n%s", err, out)
	}
	// The honest offline commit itself, pushed as it is, is refused.
	pushRefused(t, forger, bare, honest, head, "offline_commit", false)
	if _, out, err := gitIn(t, forger, nil, "", "push", "origin", bygit+":refs/loopx/state"); err != nil {
		t.Fatalf("the push of a commit signed by git was refused:\n%s", out)
	}
	if after := git(t, bare, "rev-parse", "refs/loopx/state"); after != bygit {
		t.Fatalf("the server is at %s, not at the pushed %s", after, bygit)
	}
	t.Logf("git commit-tree -S made %s, loopx made %s offline (its message with Loopx-Offline)", bygit, honest)

	// Pushes to other refs are not looked at.
	git(t, forger, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "code")
	if _, out, err := gitIn(t, forger, nil, "", "push", "origin", "HEAD:refs/heads/main"); err != nil {
		t.Fatalf("a push of a branch was refused:\n%s", out)
	}
}

// TestServerHookHonestRace: 8 agents on 4 machines, each with its own key in
// a store that requires signatures, make 40 lease operations in all
// through the hooked server (a git daemon; in a soak run 100, and through
// git http-backend too); none is refused by the hook, and the server's
// history verifies.
func TestServerHookHonestRace(t *testing.T) {
	t.Parallel()
	for _, kind := range soak.Pick([]string{"daemon"}, []string{"daemon", "http"}) {
		t.Run(kind, func(t *testing.T) { serverHookRace(t, kind) })
	}
}

func serverHookRace(t *testing.T, kind string) {
	const machines, agentsPer, todos = 4, 2, 12
	ops := soak.Pick(40, 100)
	srv, bare := hookedServer(t, kind)
	keyDir := t.TempDir()
	keys := map[string]agentKey{}
	var agents []string
	for m := 0; m < machines; m++ {
		for a := 0; a < agentsPer; a++ {
			id := fmt.Sprintf("m%da%d", m, a)
			agents = append(agents, id)
			keys[id] = newAgentKey(t, keyDir, id)
		}
	}
	dirs := make([]string, machines)
	for m := range dirs {
		extra := []string{}
		if m == 0 {
			k := keys[agents[0]]
			extra = []string{"--require-signatures", "--admin", agents[0], "--admin-key", k.pub}
		}
		dirs[m] = signedMachine(t, srv.url("state"), keys[agents[m*agentsPer]], extra...)
	}
	mustEnv(t, dirs[0], keys[agents[0]].env(), "goal", "create", "--goal-id", "g")
	for i, id := range agents {
		mustEnv(t, dirs[i/agentsPer], keys[id].env(), "agent", "register", "--goal-id", "g", "--agent-id", id, "--signing-key", keys[id].pub)
	}
	for i := 0; i < todos; i++ {
		mustEnv(t, dirs[0], keys[agents[0]].env(), "todo", "add", "--goal-id", "g", "--agent-id", agents[0], "--todo-id", fmt.Sprintf("todo_hr_%02d", i), "--text", "race")
	}
	var (
		mu     sync.Mutex
		done   int
		counts = map[string]int{}
		errs   []string
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if done >= ops {
			return false
		}
		done++
		return true
	}
	run := func(dir string, env []string, op string, args ...string) result {
		var r result
		for i := 0; i < 40; i++ {
			r = loopx(t, dir, env, args...)
			if r.code != 3 {
				break
			}
			time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.code == 0:
			counts[op+" "+fmt.Sprint(r.out["status"])]++
		case r.code == 1 && (r.errCode() == "todo_lease_conflict" || r.errCode() == "write_scope_conflict"):
			counts[op+" "+r.errCode()]++
		default:
			errs = append(errs, fmt.Sprintf("%s: exit %d %s", op, r.code, r.raw))
		}
		return r
	}
	var wg sync.WaitGroup
	for i, id := range agents {
		wg.Add(1)
		go func(dir, id string) {
			defer wg.Done()
			env := keys[id].env()
			for n := 0; take(); n++ {
				todo := fmt.Sprintf("todo_hr_%02d", rand.IntN(todos))
				base := []string{"--goal-id", "g", "--todo-id", todo, "--owner", id, "--idempotency-key", fmt.Sprintf("%s-%d", id, n)}
				r := run(dir, env, "acquire", append([]string{"task-lease", "acquire", "--ttl-seconds", "60"}, base...)...)
				if r.code != 0 || !take() {
					continue
				}
				v := int(r.out["lease"].(map[string]any)["version"].(float64))
				run(dir, env, "release", append([]string{"task-lease", "release", "--expected-version", strconv.Itoa(v)}, base...)...)
			}
		}(dirs[i/agentsPer], id)
	}
	wg.Wait()
	for k, n := range counts {
		t.Logf("%-36s %d", k, n)
	}
	for _, e := range errs {
		t.Error(e)
	}
	if counts["acquire applied"] == 0 {
		t.Fatal("nothing was applied")
	}
	chain := serverChain(t, bare)
	r := must(t, srv.base, "verify", "--history", "--repo", bare)
	h := r.out["history"].(map[string]any)
	if h["valid"] != true || int(h["commits"].(float64)) != len(chain) {
		t.Fatalf("the server's history does not verify: %s", r.raw)
	}
	t.Logf("%s: %d commits on the server, all verified and signed", kind, len(chain))
}

// TestSignedStoreLocal: in a store that requires signatures, an agent acts
// only with its registered key (refused before writing otherwise),
// registration is signed by the key it registers, rotation is signed by the
// old key or by an orchestrator's, and verify --history refuses an unsigned
// state commit with signature_required.
func TestSignedStoreLocal(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	ka, ka2, kb, kb2, kl := newAgentKey(t, keys, "a"), newAgentKey(t, keys, "a2"), newAgentKey(t, keys, "b"), newAgentKey(t, keys, "b2"), newAgentKey(t, keys, "lead")
	kr := newAgentKey(t, keys, "root")
	dir := t.TempDir()
	mustEnv(t, dir, ka.env(), "init", "--require-signatures", "--admin", "root", "--admin-key", kr.pub)
	mustEnv(t, dir, ka.env(), "goal", "create", "--goal-id", "g")
	mustEnv(t, dir, ka.env(), "agent", "register", "--goal-id", "g", "--agent-id", "a", "--signing-key", ka.pub)
	refused := func(env []string, code string, args ...string) {
		t.Helper()
		before := git(t, dir, "rev-parse", "refs/loopx/state")
		r := loopx(t, dir, env, args...)
		if r.code != 1 || r.errCode() != code {
			t.Fatalf("%v: exit %d %s, want %s", args, r.code, r.raw, code)
		}
		if after := git(t, dir, "rev-parse", "refs/loopx/state"); after != before {
			t.Fatalf("%v: refused, yet the ref moved", args)
		}
	}
	refused(kb.env(), "signature_required", "agent", "register", "--goal-id", "g", "--agent-id", "b")
	refused(ka.env(), "signature_required", "agent", "register", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb.pub)
	mustEnv(t, dir, kb.env(), "agent", "register", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb.pub)
	// Granting authority is the admin's, signed with the admin's key.
	refused(kl.env(), "authority_required", "agent", "register", "--goal-id", "g", "--agent-id", "lead", "--role", "orchestrator",
		"--lifecycle-authority", "reassign", "--signing-key", kl.pub)
	refused(kl.env(), "signature_required", "agent", "register", "--goal-id", "g", "--agent-id", "lead", "--role", "orchestrator",
		"--lifecycle-authority", "reassign", "--signing-key", kl.pub, "--by", "root")
	mustEnv(t, dir, kr.env(), "agent", "register", "--goal-id", "g", "--agent-id", "lead", "--role", "orchestrator",
		"--lifecycle-authority", "reassign", "--signing-key", kl.pub, "--by", "root")
	refused(nil, "signature_required", "todo", "add", "--goal-id", "g", "--agent-id", "a", "--text", "x", "--todo-id", "todo_sig")
	mustEnv(t, dir, ka.env(), "todo", "add", "--goal-id", "g", "--agent-id", "a", "--text", "x", "--todo-id", "todo_sig")

	// Rotation by the agent, signed with the old key; then only the new one acts.
	refused(ka2.env(), "signature_required", "agent", "rotate-key", "--goal-id", "g", "--agent-id", "a", "--signing-key", ka2.pub)
	r := mustEnv(t, dir, ka.env(), "agent", "rotate-key", "--goal-id", "g", "--agent-id", "a", "--signing-key", ka2.pub)
	if r.out["status"] != "applied" || r.out["operation"] != "agent.rotate-key" {
		t.Fatalf("rotate-key: %s", r.raw)
	}
	claim := []string{"todo", "claim", "--goal-id", "g", "--todo-id", "todo_sig", "--agent-id", "a"}
	refused(ka.env(), "signature_required", claim...)
	mustEnv(t, dir, ka2.env(), claim...)
	// Another agent's key: not an orchestrator's in a store with admins;
	// an admin's, signed with the admin's key.
	refused(kl.env(), "authority_required", "agent", "rotate-key", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb2.pub, "--by", "lead")
	refused(kb.env(), "signature_required", "agent", "rotate-key", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb2.pub, "--by", "root")
	mustEnv(t, dir, kr.env(), "agent", "rotate-key", "--goal-id", "g", "--agent-id", "b", "--signing-key", kb2.pub, "--by", "root")
	log := git(t, dir, "log", "-1", "--format=%an %B", "refs/loopx/state")
	if !strings.HasPrefix(log, "root agent rotate-key g by root") || !strings.Contains(log, "Loopx-Operation: agent.rotate-key") {
		t.Fatalf("the rotation's audit trail:\n%s", log)
	}
	r = must(t, dir, "verify", "--history")
	if h := r.out["history"].(map[string]any); h["valid"] != true {
		t.Fatalf("verify --history: %s", r.raw)
	}

	// An unsigned state commit (the head's signature taken out) does not verify.
	head := git(t, dir, "rev-parse", "refs/loopx/state")
	payload, sig := splitSig(git(t, dir, "cat-file", "commit", head) + "\n")
	if sig == "" {
		t.Fatal("the head is not signed")
	}
	unsigned := writeCommit(t, dir, payload)
	git(t, dir, "update-ref", "refs/loopx/state", unsigned, head)
	r = loopx(t, dir, nil, "verify", "--history")
	if r.code != 1 || r.errCode() != "signature_required" || r.out["error"].(map[string]any)["revision"] != unsigned {
		t.Fatalf("verify --history of an unsigned head: exit %d %s", r.code, r.raw)
	}
	// Signed by b's key instead: signature_invalid.
	bsig, err := sshsig.Sign(strings.NewReader(payload), kb2.signer, sshsig.HashSHA512, "git")
	if err != nil {
		t.Fatal(err)
	}
	wrong := writeCommit(t, dir, withSig(payload, string(sshsig.Armor(bsig))))
	git(t, dir, "update-ref", "refs/loopx/state", wrong, unsigned)
	r = loopx(t, dir, nil, "verify", "--history")
	if r.code != 1 || r.errCode() != "signature_invalid" {
		t.Fatalf("verify --history of a head signed by another key: exit %d %s", r.code, r.raw)
	}
}
