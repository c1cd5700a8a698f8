package loopx_test

// Remote mode through a server that needs a login, end to end through the
// CLI: smart HTTP behind basic authentication, the login coming from git's
// own credential helper (`store`, in a HOME of the test's own), as for any
// GitHub, GitLab or Gitea remote over HTTPS.

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRemoteLoginCLI(t *testing.T) {
	exe := needGit(t, "http-backend")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_CONFIG_COUNT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	base := t.TempDir()
	backend := &cgi.Handler{Path: exe, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "agent" || p != "t0ken" {
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, "<html><body>401 Unauthorized: please log in</body></html>")
			return
		}
		backend.ServeHTTP(w, r)
	}))
	defer srv.Close()
	bare := bareRepo(t, base, "state")
	url := srv.URL + "/state.git"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[credential]\n\thelper = store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(home, ".git-credentials")
	login := func(password string) {
		line := fmt.Sprintf("http://agent:%s@%s\n", password, strings.TrimPrefix(srv.URL, "http://"))
		if err := os.WriteFile(creds, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	login("t0ken")

	a := machine(t, url) // publishes
	must(t, a, "goal", "create", "--goal-id", "g")
	for _, ag := range []string{"agent-a", "agent-b"} {
		must(t, a, "agent", "register", "--goal-id", "g", "--agent-id", ag)
	}
	must(t, a, "todo", "add", "--goal-id", "g", "--todo-id", "todo_login", "--text", "x")
	b := t.TempDir()
	git(t, b, "init", "-q")
	git(t, b, "remote", "add", "origin", url)
	if r := must(t, b, "init", "--remote", "origin"); r.out["remote_action"] != "adopted" {
		t.Fatalf("b: %s", r.raw)
	}

	// Two machines race for one todo: one lease, the other is refused.
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, dir := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = retryTransient(t, dir, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_login",
				"--owner", []string{"agent-a", "agent-b"}[i], "--idempotency-key", "k", "--ttl-seconds", "600")
		}()
	}
	wg.Wait()
	won := 0
	for _, r := range results {
		switch {
		case r.code == 0 && r.out["status"] == "applied":
			won++
		case r.code == 1 && r.errCode() == "todo_lease_conflict":
		default:
			t.Fatalf("acquire: exit %d %s", r.code, r.raw)
		}
	}
	if won != 1 {
		t.Fatalf("%d machines hold the lease: %+v", won, results)
	}
	serverChain(t, bare)

	// A server hook's refusal: remote_rejected with its reason.
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'state frozen for the release' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := loopx(t, b, nil, "todo", "add", "--goal-id", "g", "--text", "y")
	if r.code != 1 || r.errCode() != "remote_rejected" || !strings.Contains(r.raw, "state frozen for the release") {
		t.Fatalf("hook refusal: exit %d %s", r.code, r.raw)
	}
	os.Remove(hook)

	// A wrong password: remote_rejected (exit 1, not a passing failure),
	// naming the helper, without the password or the server's page.
	login("wrong-pw")
	c := t.TempDir()
	git(t, c, "init", "-q")
	git(t, c, "remote", "add", "origin", url)
	r = loopx(t, c, nil, "init", "--remote", "origin")
	if r.code != 1 || r.errCode() != "remote_rejected" {
		t.Fatalf("wrong password: exit %d %s", r.code, r.raw)
	}
	for _, want := range []string{`credential helper \"store\" (credential.helper)`, "git ls-remote origin"} {
		if !strings.Contains(r.raw, want) {
			t.Errorf("the message lacks %s: %s", want, r.raw)
		}
	}
	for _, never := range []string{"wrong-pw", "t0ken", "<html", "please log in"} {
		if strings.Contains(r.raw, never) {
			t.Errorf("the message holds %q: %s", never, r.raw)
		}
	}
}
