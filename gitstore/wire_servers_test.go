package gitstore

// Real Git servers on 127.0.0.1 for the wire's tests: `git http-backend`
// behind net/http/cgi (optionally behind basic authentication) and an
// OpenSSH sshd serving git-upload-pack/git-receive-pack with a key of the
// test's own. Never go-git's own server: it ignores the old value of an
// update.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// httpGit serves the bare repositories of base over smart HTTP.
type httpGit struct {
	url     string       // http://127.0.0.1:port
	denied  atomic.Int32 // requests answered 401
	granted atomic.Int32 // requests that passed authentication
}

// httpGitServer starts git http-backend for base. With user set, every
// request must carry that user and password (basic authentication, from a
// credential helper or an extra header); others get 401 and an HTML page.
func httpGitServer(t testing.TB, base, user, password string) *httpGit {
	t.Helper()
	exe, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	if out, _ := exec.Command(exe, "http-backend").CombinedOutput(); !strings.Contains(string(out), "REQUEST_METHOD") &&
		!strings.Contains(string(out), "Status:") {
		t.Skipf("git http-backend is not available: %s", out)
	}
	h := &httpGit{}
	backend := &cgi.Handler{Path: exe, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != password {
				h.denied.Add(1)
				w.Header().Set("WWW-Authenticate", `Basic realm="loopx test forge"`)
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, "<!DOCTYPE html><html><body><h1>401 Unauthorized</h1><p>raw server page</p></body></html>")
				return
			}
			h.granted.Add(1)
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// serveBare makes base/name.git, pushable over every transport.
func serveBare(t testing.TB, base, name string) string {
	t.Helper()
	dir := filepath.Join(base, name+".git")
	runGitT(t, base, "init", "-q", "--bare", dir)
	runGitT(t, dir, "config", "http.receivepack", "true")
	return dir
}

// sshForge is an sshd on 127.0.0.1 and a client side for it: a key file,
// a known_hosts file holding the server's key and an ssh config naming the
// server as Host forge.
type sshForge struct {
	port       int
	dir        string
	key        string // the client's private key file (no agent)
	config     string // ssh config: Host forge → 127.0.0.1:port, IdentityFile key
	knownHosts string
}

// startSSHForge starts sshd (skipping the test when it cannot run here).
func startSSHForge(t testing.TB) *sshForge {
	t.Helper()
	requireGit(t)
	sshd := "/usr/sbin/sshd"
	if p, err := exec.LookPath("sshd"); err == nil {
		sshd = p
	}
	if _, err := os.Stat(sshd); err != nil {
		t.Skip("sshd is not installed (Debian: apt-get install openssh-server)")
	}
	for _, tool := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: apt-get install openssh-client)", tool)
		}
	}
	me, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	if me.Uid == "0" {
		// sshd running as root needs its privilege separation folder.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Skipf("sshd cannot run: /run/sshd: %v", err)
		}
	}
	f := &sshForge{dir: t.TempDir()}
	keygen := func(path string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "loopx-test", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	hostKey := filepath.Join(f.dir, "host_ed25519")
	f.key = filepath.Join(f.dir, "id_ed25519")
	keygen(hostKey)
	keygen(f.key)
	pub, err := os.ReadFile(f.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(f.dir, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := filepath.Join(f.dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowUsers %s
SetEnv PATH=%s
AcceptEnv GIT_PROTOCOL
LogLevel ERROR
`, f.port, hostKey, filepath.Join(f.dir, "sshd.pid"), authorized, me.Username, os.Getenv("PATH"))), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Skipf("sshd cannot run: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	up := false
	for i := 0; i < 300 && !up; i++ {
		select {
		case <-exited:
			t.Skipf("sshd cannot run here: %s", strings.TrimSpace(stderr.String()))
		default:
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", f.port), 100*time.Millisecond); err == nil {
			c.Close()
			up = true
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !up {
		t.Skipf("sshd did not listen: %s", strings.TrimSpace(stderr.String()))
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f.knownHosts = filepath.Join(f.dir, "known_hosts")
	fields := strings.Fields(string(hostPub))
	if err := os.WriteFile(f.knownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s %s\n", f.port, fields[0], fields[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	f.config = f.writeConfig(t, "ssh_config", f.key, f.knownHosts)
	return f
}

// writeConfig writes an ssh config naming the server Host forge, with a
// key file (only that one: IdentitiesOnly), or none ("": ssh offers the
// agent's keys), and a known_hosts file.
func (f *sshForge) writeConfig(t testing.TB, name, key, knownHosts string) string {
	t.Helper()
	me, _ := user.Current()
	identity := ""
	if key != "" {
		identity = fmt.Sprintf("  IdentityFile %s\n  IdentitiesOnly yes\n", key)
	}
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`Host forge
  HostName 127.0.0.1
  Port %d
  User %s
%s  UserKnownHostsFile %s
  StrictHostKeyChecking yes
  ConnectTimeout 10
`, f.port, me.Username, identity, knownHosts)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noAgent runs the test without an ssh agent (ssh then uses key files).
func noAgent(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	os.Unsetenv("SSH_AUTH_SOCK")
}

// testHome gives the test a fresh HOME (and no XDG config), so git's
// global configuration and ~/.git-credentials are the test's own.
func testHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_CONFIG_COUNT",
		"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return home
}

// proxyServer is a forward HTTP proxy (absolute-URI requests), counting
// what it forwarded.
type proxyServer struct {
	url       string
	forwarded atomic.Int32
}

func forwardProxy(t testing.TB) *proxyServer {
	t.Helper()
	p := &proxyServer{}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.Header.Del("Proxy-Connection")
		out.ContentLength = r.ContentLength
		resp, err := transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		p.forwarded.Add(1)
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}
