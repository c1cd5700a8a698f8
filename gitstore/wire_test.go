package gitstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/internal/soak"
)

// The wire against real servers on 127.0.0.1, reached as git reaches them:
// smart HTTP behind basic authentication with git's credential helper or
// http.extraHeader, ssh through a host alias of an ssh config with a key
// file and no agent (core.sshCommand or GIT_SSH_COMMAND), and a remote
// named through url.<base>.insteadOf. Each: publish and adopt, a race of
// two clones for one lease (one wins; the loser re-decides and is
// refused), and a server hook's refusal.

const (
	forgeUser     = "loopx"
	forgePassword = "s3cret-pw"
)

// wireCase is one way of reaching a server.
type wireCase struct {
	// base holds the bare repositories; url is the remote URL a client
	// is given for one of them.
	base string
	url  func(repo string) string
	// setup configures a client repository (HOME is the test's own).
	setup func(t *testing.T, dir string)
	http  *httpGit
	proxy *proxyServer
}

// writeGlobal appends to the test HOME's ~/.gitconfig.
func writeGlobal(t *testing.T, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.Getenv("HOME"), ".gitconfig"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// storeCredentials sets up git's `store` helper in HOME with a login for
// url.
func storeCredentials(t *testing.T, url, user, password string) {
	t.Helper()
	writeGlobal(t, "[credential]\n\thelper = store\n")
	host := strings.TrimPrefix(url, "http://")
	line := fmt.Sprintf("http://%s:%s@%s\n", user, password, host)
	if err := os.WriteFile(filepath.Join(os.Getenv("HOME"), ".git-credentials"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

func basicHeader(user, password string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// wireCases are the ways of reaching a server, by name; each is set up
// in the test's fresh HOME.
var wireCases = []struct {
	name string
	mk   func(t *testing.T) wireCase
}{
	{"http-credential-helper", func(t *testing.T) wireCase { // HTTP, login from git's store helper
		base := t.TempDir()
		h := httpGitServer(t, base, forgeUser, forgePassword)
		storeCredentials(t, h.url, forgeUser, forgePassword)
		return wireCase{base: base, http: h,
			url: func(repo string) string { return h.url + "/" + repo + ".git" }}
	}},
	{"http-extraheader", func(t *testing.T) wireCase { // HTTP, login in an extra header (CI runners)
		base := t.TempDir()
		h := httpGitServer(t, base, forgeUser, forgePassword)
		writeGlobal(t, fmt.Sprintf("[http %q]\n\textraHeader = %s\n", h.url+"/", basicHeader(forgeUser, forgePassword)))
		return wireCase{base: base, http: h,
			url: func(repo string) string { return h.url + "/" + repo + ".git" }}
	}},
	{"insteadof", func(t *testing.T) wireCase { // HTTP named through url.<base>.insteadOf
		base := t.TempDir()
		h := httpGitServer(t, base, forgeUser, forgePassword)
		storeCredentials(t, h.url, forgeUser, forgePassword)
		writeGlobal(t, fmt.Sprintf("[url %q]\n\tinsteadOf = team:\n", h.url+"/"))
		return wireCase{base: base, http: h,
			url: func(repo string) string { return "team:" + repo + ".git" }}
	}},
	{"http-proxy", func(t *testing.T) wireCase { // HTTP through http.proxy
		base := t.TempDir()
		h := httpGitServer(t, base, forgeUser, forgePassword)
		storeCredentials(t, h.url, forgeUser, forgePassword)
		p := forwardProxy(t)
		writeGlobal(t, fmt.Sprintf("[http]\n\tproxy = %s\n", p.url))
		return wireCase{base: base, http: h, proxy: p,
			url: func(repo string) string { return h.url + "/" + repo + ".git" }}
	}},
	{"ssh-core.sshCommand", func(t *testing.T) wireCase { // ssh: host alias, key file, no agent, core.sshCommand
		noAgent(t)
		f := startSSHForge(t)
		base := t.TempDir()
		return wireCase{base: base,
			url: func(repo string) string { return "forge:" + filepath.Join(base, repo+".git") },
			setup: func(t *testing.T, dir string) {
				runGitT(t, dir, "config", "core.sshCommand", "ssh -F "+f.config)
			}}
	}},
	{"ssh-GIT_SSH_COMMAND", func(t *testing.T) wireCase {
		// ssh: the same through GIT_SSH_COMMAND and an ssh:// URL, with
		// connection sharing (ControlMaster/ControlPersist, whose master
		// outlives the git that started it).
		noAgent(t)
		f := startSSHForge(t)
		cm, err := os.MkdirTemp("", "cm")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(cm) })
		t.Setenv("GIT_SSH_COMMAND", "ssh -F "+f.config+" -o ControlMaster=auto -o ControlPersist=5 -o ControlPath="+cm+"/%C")
		base := t.TempDir()
		return wireCase{base: base,
			url: func(repo string) string { return "ssh://forge" + filepath.Join(base, repo+".git") }}
	}},
}

// wireClient makes a repository whose origin is url and opens its store.
func (c wireCase) client(t *testing.T, url string) *Store {
	t.Helper()
	dir := newRepo(t)
	runGitT(t, dir, "remote", "add", "origin", url)
	if c.setup != nil {
		c.setup(t, dir)
	}
	return openT(t, dir, Options{})
}

var errLeaseTaken = errors.New("lease taken")

// acquire is a decision as loopx makes them: the lease file of a todo is
// taken unless it exists.
func acquire(owner string, before func()) Decide {
	return func(sn *Snapshot) (*Proposal, error) {
		if before != nil {
			before()
		}
		if _, ok, err := sn.Read("leases/todo_1.yaml"); err != nil {
			return nil, err
		} else if ok {
			return nil, errLeaseTaken
		}
		return &Proposal{Changes: []Change{put("leases/todo_1.yaml", "owner: "+owner+"\n")}, Info: CommitInfo{Message: "acquire " + owner}}, nil
	}
}

func TestWireTransports(t *testing.T) {
	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			if testing.Short() && strings.HasPrefix(wc.name, "ssh") {
				t.Skip("-short: an sshd session costs about a second here; the full run covers ssh")
			}
			if wc.name == "ssh-core.sshCommand" {
				// Seven ssh sessions without connection sharing; the
				// default tier reaches sshd through GIT_SSH_COMMAND.
				soak.Only(t, "ssh named by core.sshCommand")
			}
			testHome(t)
			c := wc.mk(t)
			t.Logf("remote URL %s", c.url("state"))
			wireScenario(t, c)
		})
	}
}

func wireScenario(t *testing.T, c wireCase) {
	ctx := context.Background()
	bare := serveBare(t, c.base, "state")

	// Publish: a's history goes to a server that lacks the ref.
	a := c.client(t, c.url("state"))
	if h, err := a.Fetch(ctx, "origin"); err != nil || !h.IsZero() {
		t.Fatalf("fetch from the empty server: %v %v", h, err)
	}
	c1 := pushCommit(t, a, ZeroHash, put("goal.yaml", "id: g\n"))
	if got := runGitT(t, bare, "rev-parse", DefaultRef); got != c1.String() {
		t.Fatalf("server at %s, published %s", got, c1)
	}
	// Adopt: b takes the server's history.
	b := c.client(t, c.url("state"))
	if h, err := b.Fetch(ctx, "origin"); err != nil || h != c1 {
		t.Fatalf("adopt: %v %v", h, err)
	}
	if sn, err := b.Snapshot(c1); err != nil || readT(t, sn, "goal.yaml") != "id: g\n" {
		t.Fatalf("adopted snapshot: %v", err)
	}

	// The race: both decide on c1 before either pushes, and the second
	// push starts once the first has landed (so git sees the server's ref
	// elsewhere than the lease says; pushes that overlap meet the server's
	// ref lock instead, as in the root package's race tests).
	var pushes atomic.Int32
	testHook = func(point string) {
		if point == "push-sending" && pushes.Add(1) == 2 {
			for i := 0; i < 1000; i++ {
				if out, _ := tryGit(bare, "", "rev-parse", DefaultRef); out != c1.String() {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	defer func() { testHook = nil }()
	var arrived sync.WaitGroup
	arrived.Add(2)
	barrier := func() func() {
		var once sync.Once
		return func() {
			once.Do(func() {
				arrived.Done()
				done := make(chan struct{})
				go func() { arrived.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
				}
			})
		}
	}
	type outcome struct {
		res TxResult
		err error
	}
	results := make([]outcome, 2)
	var wg sync.WaitGroup
	for i, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Bind(&Remote{Name: "origin"}, DefaultRetry).Transact(ctx, acquire(fmt.Sprint("agent-", i), barrier()))
			results[i] = outcome{res, err}
		}()
	}
	wg.Wait()
	testHook = nil
	winner := -1
	for i, r := range results {
		switch {
		case r.err == nil:
			if winner >= 0 {
				t.Fatalf("both acquired: %+v", results)
			}
			winner = i
		case !errors.Is(r.err, errLeaseTaken):
			t.Fatalf("client %d: %v", i, r.err)
		}
	}
	if winner < 0 {
		t.Fatalf("nobody acquired: %+v", results)
	}
	loser := results[1-winner]
	if loser.res.Conflicts < 1 || loser.res.Attempts < 2 || loser.res.Base == c1 {
		t.Fatalf("the loser did not lose a compare-and-swap and decide again on the new head: %+v", loser.res)
	}
	head := runGitT(t, bare, "rev-parse", DefaultRef)
	if head != results[winner].res.Head.String() || loser.res.Base.String() != head {
		t.Fatalf("server at %s; winner pushed %s, loser re-decided on %s", head, results[winner].res.Head, loser.res.Base)
	}
	if got := runGitT(t, bare, "show", DefaultRef+":leases/todo_1.yaml"); got != fmt.Sprintf("owner: agent-%d", winner) {
		t.Fatalf("server's lease: %q", got)
	}
	if n := runGitT(t, bare, "rev-list", "--count", DefaultRef); n != "2" {
		t.Fatalf("%s commits on the server, want 2", n)
	}
	runGitT(t, bare, "fsck", "--strict", "--no-dangling")

	// A server hook refuses: ErrRemoteRejected with its reason; nothing moves.
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'loopx state is frozen by policy' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := a.Bind(&Remote{Name: "origin"}, DefaultRetry).Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{Changes: []Change{put("notes/x", "x")}, Info: CommitInfo{Message: "note"}}, nil
	})
	if !errors.Is(err, ErrRemoteRejected) || !strings.Contains(err.Error(), "frozen by policy") {
		t.Fatalf("push refused by the hook: %v", err)
	}
	if got := runGitT(t, bare, "rev-parse", DefaultRef); got != head {
		t.Fatalf("server moved to %s", got)
	}
	if c.http != nil && c.http.granted.Load() == 0 {
		t.Fatal("the server saw no authenticated request")
	}
	if c.proxy != nil && c.proxy.forwarded.Load() == 0 {
		t.Fatal("no request went through the proxy")
	}
}

// An ssh key in an agent (no key file named): publish and adopt.
func TestWireSSHAgent(t *testing.T) {
	testHome(t)
	ctx := context.Background()
	f := startSSHForge(t)
	sock := filepath.Join(f.dir, "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Skipf("ssh-agent cannot run: %v", err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	if out, err := execOut("ssh-add", f.key); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	// No key file named: the agent has it. (ssh also tries the default
	// key files of the user's ~/.ssh, which the server does not know.)
	cfg := f.writeConfig(t, "ssh_config_agent", "", f.knownHosts)
	base := t.TempDir()
	bare := serveBare(t, base, "state")
	c := wireCase{setup: func(t *testing.T, dir string) { runGitT(t, dir, "config", "core.sshCommand", "ssh -F "+cfg) }}
	a := c.client(t, "forge:"+filepath.Join(base, "state.git"))
	c1 := pushCommit(t, a, ZeroHash, put("goal.yaml", "id: g\n"))
	b := c.client(t, "forge:"+filepath.Join(base, "state.git"))
	if h, err := b.Fetch(ctx, "origin"); err != nil || h != c1 {
		t.Fatalf("adopt through the agent: %v %v", h, err)
	}
	if got := runGitT(t, bare, "rev-parse", DefaultRef); got != c1.String() {
		t.Fatalf("server at %s", got)
	}
}

// A login the server refuses is ErrRemoteRejected (a decision: it fails
// again until someone fixes the setup), never "unavailable"; the message
// names the credential git offered (helper, header, key file, agent) but
// not the secret, says how to fix it, and holds no page of the server's.
func TestWireAuthFailures(t *testing.T) {
	ctx := context.Background()
	type check struct {
		want, never []string
	}
	expect := func(t *testing.T, what string, err error, class error, c check) {
		t.Helper()
		if !errors.Is(err, class) {
			t.Fatalf("%s: %v, want %v", what, err, class)
		}
		msg := err.Error()
		t.Logf("%s: %s", what, msg)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the message lacks %q: %s", what, w, msg)
			}
		}
		for _, n := range append(c.never, forgePassword, "<html", "raw server page", "<!DOCTYPE") {
			if strings.Contains(msg, n) {
				t.Errorf("%s: the message holds %q: %s", what, n, msg)
			}
		}
	}

	t.Run("http-helper-wrong-password", func(t *testing.T) {
		testHome(t)
		base := t.TempDir()
		bare := serveBare(t, base, "state")
		h := httpGitServer(t, base, forgeUser, forgePassword)
		storeCredentials(t, h.url, forgeUser, "wrong-password")
		s := (wireCase{}).client(t, h.url+"/state.git")
		_, err := s.Fetch(ctx, "origin")
		expect(t, "fetch", err, ErrRemoteRejected, check{
			want:  []string{"refused the login", `credential helper "store" (credential.helper)`, "git credential approve", "git ls-remote origin"},
			never: []string{"wrong-password"},
		})
		if h.denied.Load() == 0 {
			t.Fatal("the server saw no login")
		}
		// git told the helper to forget the refused password (credential
		// reject): now there is none, and the push says so.
		c1, err := s.WriteCommit(ZeroHash, []Change{put("a", "a")}, CommitInfo{Message: "a"})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Push(ctx, "origin", ZeroHash, c1)
		expect(t, "push", err, ErrRemoteRejected, check{want: []string{"asks for a login and git has none", "push"}})
		if n := runGitT(t, bare, "for-each-ref"); n != "" {
			t.Fatalf("the server's refs changed: %s", n)
		}
	})
	t.Run("http-no-login", func(t *testing.T) {
		testHome(t)
		base := t.TempDir()
		serveBare(t, base, "state")
		h := httpGitServer(t, base, forgeUser, forgePassword)
		s := (wireCase{}).client(t, h.url+"/state.git")
		_, err := s.LsRemote(ctx, "origin")
		expect(t, "ls-remote", err, ErrRemoteRejected, check{want: []string{"asks for a login and git has none", "credential.helper", "http.extraHeader"}})
	})
	t.Run("http-wrong-header", func(t *testing.T) {
		testHome(t)
		base := t.TempDir()
		serveBare(t, base, "state")
		h := httpGitServer(t, base, forgeUser, forgePassword)
		bad := basicHeader(forgeUser, "wrong-password")
		writeGlobal(t, fmt.Sprintf("[http %q]\n\textraHeader = %s\n", h.url+"/", bad))
		s := (wireCase{}).client(t, h.url+"/state.git")
		_, err := s.Fetch(ctx, "origin")
		expect(t, "fetch", err, ErrRemoteRejected, check{
			want:  []string{`the header "Authorization" from http.` + h.url + `/.extraheader`},
			never: []string{strings.TrimPrefix(bad, "Authorization: ")},
		})
	})
	t.Run("ssh-wrong-key", func(t *testing.T) {
		testHome(t)
		noAgent(t)
		f := startSSHForge(t)
		other := filepath.Join(f.dir, "id_other")
		runGitT(t, f.dir, "version") // (git is there)
		if out, err := execOut("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		cfg := f.writeConfig(t, "ssh_config_other", other, f.knownHosts)
		base := t.TempDir()
		serveBare(t, base, "state")
		s := (wireCase{setup: func(t *testing.T, dir string) {
			runGitT(t, dir, "config", "core.sshCommand", "ssh -F "+cfg)
		}}).client(t, "forge:"+filepath.Join(base, "state.git"))
		_, err := s.Fetch(ctx, "origin")
		expect(t, "fetch", err, ErrRemoteRejected, check{want: []string{
			"refused the ssh login", "Permission denied (publickey)", "the key files " + other,
			"no ssh agent", "core.sshCommand = `ssh -F " + cfg + "`", "(127.0.0.1 port", "IdentityFile for Host forge",
		}})
	})
	t.Run("ssh-unknown-host-key", func(t *testing.T) {
		testHome(t)
		noAgent(t)
		f := startSSHForge(t)
		empty := filepath.Join(f.dir, "known_hosts_empty")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GIT_SSH_COMMAND", "ssh -F "+f.writeConfig(t, "ssh_config_nohost", f.key, empty))
		base := t.TempDir()
		serveBare(t, base, "state")
		s := (wireCase{}).client(t, "forge:"+filepath.Join(base, "state.git"))
		_, err := s.LsRemote(ctx, "origin")
		expect(t, "ls-remote", err, ErrRemoteRejected, check{want: []string{"Host key verification failed", "known_hosts", empty, "ssh-keyscan -p"}})
	})
	t.Run("ssh-closed-port", func(t *testing.T) {
		testHome(t)
		noAgent(t)
		f := startSSHForge(t)
		f.port = 1
		t.Setenv("GIT_SSH_COMMAND", "ssh -F "+f.writeConfig(t, "ssh_config_closed", f.key, f.knownHosts))
		base := t.TempDir()
		serveBare(t, base, "state")
		s := (wireCase{}).client(t, "forge:"+filepath.Join(base, "state.git"))
		_, err := s.Fetch(ctx, "origin")
		expect(t, "fetch", err, ErrRemoteUnavailable, check{want: []string{"Connection refused"}})
	})
}

func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// Two clients push the identical commit (the same request decided on the
// same head in the same second): the server holds it after the first, and
// git reports the second "up to date". That is not the second client's
// application: ErrConflict, so it decides again (and finds the replay).
func TestWireIdenticalCommit(t *testing.T) {
	testHome(t)
	ctx := context.Background()
	for _, kind := range []string{"file", "http"} {
		t.Run(kind, func(t *testing.T) {
			base := t.TempDir()
			bare := serveBare(t, base, "state")
			url := filepath.Join(base, "state.git")
			if kind == "http" {
				url = httpGitServer(t, base, "", "").url + "/state.git"
			}
			a := (wireCase{}).client(t, url)
			b := (wireCase{}).client(t, url)
			c1 := pushCommit(t, a, ZeroHash, put("goal.yaml", "id: g\n"))
			if h, err := b.Fetch(ctx, "origin"); err != nil || h != c1 {
				t.Fatalf("fetch: %v %v", h, err)
			}
			info := CommitInfo{Message: "acquire", When: time.Unix(1700000000, 0)}
			na, err := a.WriteCommit(c1, []Change{put("leases/todo_1.yaml", "owner: x\n")}, info)
			if err != nil {
				t.Fatal(err)
			}
			nb, err := b.WriteCommit(c1, []Change{put("leases/todo_1.yaml", "owner: x\n")}, info)
			if err != nil || nb != na {
				t.Fatalf("not the identical commit: %s %s %v", na, nb, err)
			}
			if err := a.Push(ctx, "origin", c1, na); err != nil {
				t.Fatal(err)
			}
			err = b.Push(ctx, "origin", c1, nb)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "not installed by this push") {
				t.Fatalf("the second identical push: %v", err)
			}
			if got := runGitT(t, bare, "rev-parse", DefaultRef); got != na.String() {
				t.Fatalf("server at %s", got)
			}
		})
	}
}
