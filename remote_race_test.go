package loopx_test

// Remote mode against real Git servers on 127.0.0.1: a bare repository
// path (file transport: git-upload-pack / git-receive-pack), `git daemon`
// (git://) and `git http-backend` behind net/http/cgi (smart HTTP). Never
// go-git's own server: it does not check the old value of an update.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	loopxapi "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/soak"
	"github.com/loopx-dev/loopx/lease"
)

// gitServer serves the bare repositories of one folder.
type gitServer struct {
	kind string
	base string
	url  func(repo string) string
	stop func()
}

// bareRepo creates base/name.git, ready to receive pushes over every
// transport.
func bareRepo(t testing.TB, base, name string) string {
	t.Helper()
	dir := filepath.Join(base, name+".git")
	git(t, base, "init", "-q", "--bare", dir)
	git(t, dir, "config", "http.receivepack", "true")
	return dir
}

// needGit skips the test when a git program the transport needs is missing.
func needGit(t testing.TB, sub ...string) string {
	t.Helper()
	exe, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: install it (Debian: apt-get install git) to run the remote tests")
	}
	if len(sub) > 0 {
		out, _ := exec.Command(exe, append(sub, "-h")...).CombinedOutput()
		if !strings.Contains(string(out), "usage") && !strings.Contains(string(out), "REQUEST_METHOD") {
			t.Skipf("`git %s` is not available (%s): install it (Debian: it is in the git package, /usr/lib/git-core/git-%s) to run this test",
				sub[0], strings.TrimSpace(string(out)), sub[0])
		}
	}
	return exe
}

func fileServer(t testing.TB) *gitServer {
	needGit(t)
	base := t.TempDir()
	return &gitServer{kind: "file", base: base, url: func(repo string) string { return filepath.Join(base, repo+".git") }, stop: func() {}}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// daemon is a `git daemon` on 127.0.0.1 that can be killed and restarted
// on the same port.
type daemon struct {
	t    testing.TB
	base string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func (d *daemon) start() {
	d.t.Helper()
	exe := needGit(d.t, "daemon")
	d.mu.Lock()
	defer d.mu.Unlock()
	cmd := exec.Command(exe, "daemon", "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", d.port),
		"--base-path="+d.base, "--export-all", "--enable=receive-pack", "--informative-errors", d.base)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	// Its own process group, so kill takes the connection handlers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("git daemon: %v", err)
	}
	d.cmd = cmd
	for i := 0; i < 500; i++ {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.t.Fatalf("git daemon did not start: %s", stderr.String())
}

func (d *daemon) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		d.cmd.Wait()
		d.cmd = nil
	}
}

func daemonServer(t testing.TB) (*gitServer, *daemon) {
	needGit(t, "daemon")
	base := t.TempDir()
	d := &daemon{t: t, base: base, port: freePort(t)}
	d.start()
	t.Cleanup(d.kill)
	return &gitServer{kind: "daemon", base: base, stop: d.kill,
		url: func(repo string) string { return fmt.Sprintf("git://127.0.0.1:%d/%s.git", d.port, repo) }}, d
}

func httpServer(t testing.TB) *gitServer {
	exe := needGit(t, "http-backend")
	base := t.TempDir()
	h := &cgi.Handler{Path: exe, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &gitServer{kind: "http", base: base, stop: srv.Close,
		url: func(repo string) string { return srv.URL + "/" + repo + ".git" }}
}

func serverOf(t testing.TB, kind string) *gitServer {
	switch kind {
	case "file":
		return fileServer(t)
	case "daemon":
		s, _ := daemonServer(t)
		return s
	case "http":
		return httpServer(t)
	}
	t.Fatalf("unknown transport %s", kind)
	return nil
}

// machine makes a repository whose origin is url and runs `loopx init
// --remote origin` in it (publishing or adopting the state ref).
func machine(t testing.TB, url string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	git(t, dir, "remote", "add", "origin", url)
	r := must(t, dir, "init", "--remote", "origin")
	if r.out["remote"] != "origin" {
		t.Fatalf("init --remote: %s", r.raw)
	}
	return dir
}

// retryTransient runs loopx until it exits 0 or 1, retrying exit 3 with the
// same arguments (as the contract tells clients to).
func retryTransient(t testing.TB, dir string, args ...string) result {
	t.Helper()
	return retryTransientEnv(t, dir, nil, args...)
}

// txLine is the line LOOPX_TX_STATS=1 prints for a mutation.
var txLine = regexp.MustCompile(`(?m)^loopx: tx: (\{.*\})$`)

// retryTransientEnv is retryTransient with more environment variables.
func retryTransientEnv(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	var r result
	for i := 0; i < 40; i++ {
		r = loopx(t, dir, env, args...)
		if r.code != 3 {
			return r
		}
		transientRetries.Add(1)
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
	}
	return r
}

// transientRetries counts the exit-3 results retryTransient retried.
var transientRetries atomic.Int64

// serverChain returns the server's first-parent chain, oldest first, and
// checks that its history is linear.
func serverChain(t testing.TB, bare string) []string {
	t.Helper()
	all := strings.Fields(git(t, bare, "rev-list", "refs/loopx/state"))
	first := strings.Fields(git(t, bare, "rev-list", "--first-parent", "--reverse", "refs/loopx/state"))
	if merges := git(t, bare, "rev-list", "--merges", "refs/loopx/state"); merges != "" || len(all) != len(first) {
		t.Fatalf("server history is not linear: %d commits, %d on the first-parent chain", len(all), len(first))
	}
	git(t, bare, "fsck", "--no-dangling")
	return first
}

// applied is one applied (or replayed) result a client was told about.
type applied struct {
	op, todo, revision string
	version            float64
}

// leaseFiles adapts a gitstore snapshot to lease.Files for the checks.
type leaseFiles struct{ sn *gitstore.Snapshot }

func (f leaseFiles) Read(p string) ([]byte, bool, error) { return f.sn.Read(p) }
func (f leaseFiles) Walk(dir string, fn func(string, []byte) error) error {
	return f.sn.Walk(dir, fn)
}
func (f leaseFiles) List(dir string) ([]string, error) {
	entries, err := f.sn.List(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names, nil
}

// checkLeaseHistory replays the server's history oldest → newest and checks,
// at every commit, that no two todos' leases effective at that commit's
// decision time share a write scope, and that each todo's lease version and
// epoch never go back (and the version grows with every change but a
// release). It returns the number of commits checked.
func checkLeaseHistory(t testing.TB, bare, goal string, chain []string) {
	t.Helper()
	gs, err := gitstore.Open(bare, gitstore.Options{Ref: "refs/loopx/state"})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	type seen struct {
		version, epoch int64
		status         string
		raw            string
	}
	last := map[string]seen{}
	for _, rev := range chain {
		sn, err := gs.Snapshot(gitstore.Hash(mustHash(t, rev)))
		if err != nil {
			t.Fatal(err)
		}
		v := lease.NewView(leaseFiles{sn}, rev, sn.Time())
		leases, err := v.Leases(goal)
		if err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		at := sn.Time()
		owners := map[string]string{} // scope → todo of an effective lease
		for _, l := range leases {
			raw := string(lease.Encode(l))
			prev, had := last[l.TodoID]
			if had {
				if l.Version < prev.version || l.Epoch < prev.epoch {
					t.Fatalf("%s: lease of %s went back: v%d e%d after v%d e%d", rev, l.TodoID, l.Version, l.Epoch, prev.version, prev.epoch)
				}
				release := prev.status == lease.LeaseActive && l.Status == lease.LeaseReleased
				if raw != prev.raw && !release && l.Version == prev.version {
					t.Fatalf("%s: lease of %s changed without a new version (v%d)", rev, l.TodoID, l.Version)
				}
			}
			last[l.TodoID] = seen{l.Version, l.Epoch, l.Status, raw}
			if l.Status != lease.LeaseActive || !at.Before(l.ExpiresAt) {
				continue
			}
			for _, sc := range l.WriteScopes {
				if other, ok := owners[sc]; ok && other != l.TodoID {
					t.Fatalf("%s (at %s): %s and %s both hold an effective lease on %s", rev, at, other, l.TodoID, sc)
				}
				owners[sc] = l.TodoID
			}
		}
	}
}

func mustHash(t testing.TB, s string) gitstore.Hash {
	t.Helper()
	var h gitstore.Hash
	if _, err := hex.Decode(h[:], []byte(s)); err != nil || len(s) != 40 {
		t.Fatalf("bad hash %q", s)
	}
	return h
}

// TestRemoteRace: through a git daemon (in a soak run through each
// transport: file, daemon, http), 4 machines × 2 agents acquire, renew and
// release leases on 20 shared todos (todo i needs scope area<i%5>/**, so
// todos conflict by scope too) for 3 seconds (10 in a soak run). The server's history must
// be linear, hold every result a client was told was applied, and never
// show two effective leases on one scope.
//
// With the server deciding (server-hook install --decide), the same race
// must hold all that and lose no race at all: every mutation after a
// machine's first push is decided by the server in order.
func TestRemoteRace(t *testing.T) {
	t.Parallel()
	for _, kind := range soak.Pick([]string{"daemon"}, []string{"file", "daemon", "http"}) {
		t.Run(kind, func(t *testing.T) { remoteRace(t, kind, false) })
	}
	for _, kind := range soak.Pick([]string{"daemon"}, []string{"file", "daemon", "http"}) {
		t.Run(kind+"-decided", func(t *testing.T) { remoteRace(t, kind, true) })
	}
}

func remoteRace(t *testing.T, kind string, decide bool) {
	const machines, agentsPer, todos = 4, 2, 20
	run := soak.Pick(3*time.Second, 10*time.Second)
	if testing.Short() {
		run = 3 * time.Second
	}
	srv := serverOf(t, kind)
	bare := bareRepo(t, srv.base, "state")
	if decide {
		must(t, srv.base, "server-hook", "install", "--repo", bare, "--loopx", loopxWrapper(t), "--decide")
	}
	dirs := make([]string, machines)
	for m := range dirs {
		dirs[m] = machine(t, srv.url("state"))
	}
	must(t, dirs[0], "goal", "create", "--goal-id", "g")
	for m := 0; m < machines; m++ {
		for a := 0; a < agentsPer; a++ {
			must(t, dirs[m], "agent", "register", "--goal-id", "g", "--agent-id", fmt.Sprintf("m%da%d", m, a))
		}
	}
	for i := 0; i < todos; i++ {
		must(t, dirs[i%machines], "todo", "add", "--goal-id", "g", "--todo-id", fmt.Sprintf("todo_race_%02d", i), "--text", "race")
	}

	var (
		mu      sync.Mutex
		results []applied
		counts  = map[string]int{}
		errs    []string
	)
	note := func(op string, r result) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.code == 0:
			counts[op+" "+fmt.Sprint(r.out["status"])]++
			if decide {
				// Every mutation is decided by the server: none lost a race.
				m := txLine.FindStringSubmatch(r.raw)
				var st loopxapi.TxStats
				if m == nil || json.Unmarshal([]byte(m[1]), &st) != nil || st.DecidedBy != "server" || st.LostRaces != 0 || st.Attempts != 1 {
					errs = append(errs, fmt.Sprintf("%s was not decided by the server at once: %s", op, r.raw))
				}
			}
			lv, _ := r.out["lease"].(map[string]any)
			var version float64
			if lv != nil {
				version, _ = lv["version"].(float64)
			}
			results = append(results, applied{op: op, todo: fmt.Sprint(r.out["todo_id"]), revision: fmt.Sprint(r.out["revision"]), version: version})
		case r.code == 1:
			counts[op+" "+r.errCode()]++
		default:
			counts[op+" exit "+strconv.Itoa(r.code)+" "+r.errCode()]++
		}
	}
	var env []string
	if decide {
		env = []string{"LOOPX_TX_STATS=1"}
	}
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for m := 0; m < machines; m++ {
		for a := 0; a < agentsPer; a++ {
			wg.Add(1)
			go func(dir, agent string) {
				defer wg.Done()
				for n := 0; time.Now().Before(deadline); n++ {
					i := rand.IntN(todos)
					todo := fmt.Sprintf("todo_race_%02d", i)
					key := fmt.Sprintf("%s-%d", agent, n)
					base := []string{"--goal-id", "g", "--todo-id", todo, "--owner", agent, "--idempotency-key", key}
					r := retryTransientEnv(t, dir, env, append([]string{"task-lease", "acquire", "--ttl-seconds", "30",
						"--write-scope", fmt.Sprintf("area%d/**", i%5)}, base...)...)
					note("acquire", r)
					if r.code == 1 {
						switch r.errCode() {
						case "todo_lease_conflict", "write_scope_conflict":
						default:
							mu.Lock()
							errs = append(errs, fmt.Sprintf("acquire %s: %s", todo, r.raw))
							mu.Unlock()
						}
						continue
					}
					if r.code != 0 {
						mu.Lock()
						errs = append(errs, fmt.Sprintf("acquire %s: exit %d %s", todo, r.code, r.raw))
						mu.Unlock()
						continue
					}
					v := int(r.out["lease"].(map[string]any)["version"].(float64))
					if rand.IntN(2) == 0 {
						r = retryTransientEnv(t, dir, env, append([]string{"task-lease", "renew", "--ttl-seconds", "30", "--expected-version", strconv.Itoa(v)}, base...)...)
						note("renew", r)
						if r.code != 0 {
							mu.Lock()
							errs = append(errs, fmt.Sprintf("renew %s: exit %d %s", todo, r.code, r.raw))
							mu.Unlock()
							continue
						}
						v++
					}
					r = retryTransientEnv(t, dir, env, append([]string{"task-lease", "release", "--expected-version", strconv.Itoa(v)}, base...)...)
					note("release", r)
					if r.code != 0 {
						mu.Lock()
						errs = append(errs, fmt.Sprintf("release %s: exit %d %s", todo, r.code, r.raw))
						mu.Unlock()
					}
				}
			}(dirs[m], fmt.Sprintf("m%da%d", m, a))
		}
	}
	wg.Wait()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-40s %d", k, counts[k])
	}
	t.Logf("%-40s %d", "transient (exit 3) retries", transientRetries.Swap(0))
	for _, e := range errs {
		t.Error(e)
	}
	if counts["acquire applied"] == 0 {
		t.Fatal("no acquire was applied")
	}

	chain := serverChain(t, bare)
	t.Logf("%s: %d commits on the server", kind, len(chain))
	onServer := map[string]int{}
	for i, rev := range chain {
		onServer[rev] = i
	}
	for _, a := range results {
		if _, ok := onServer[a.revision]; !ok {
			t.Errorf("%s %s reported at %s, which is not on the server", a.op, a.todo, a.revision)
			continue
		}
		msg := git(t, bare, "log", "-1", "--format=%B", a.revision)
		e, _ := lease.ParseMessage(msg)
		if e.Operation != "task-lease."+a.op || e.Todo != a.todo || e.Receipt == "" {
			t.Errorf("%s %s at %s: the commit records %+v", a.op, a.todo, a.revision, e)
		}
		if a.op != "release" && float64(e.Version) != a.version {
			t.Errorf("%s %s at %s: reported v%v, the commit says v%d", a.op, a.todo, a.revision, a.version, e.Version)
		}
	}
	checkLeaseHistory(t, bare, "g", chain)
	// Every machine's local ref is a commit of the server's history.
	for _, dir := range dirs {
		if h := git(t, dir, "rev-parse", "refs/loopx/state"); onServer[h] == 0 && h != chain[0] {
			t.Errorf("%s: local ref %s is not on the server", dir, h)
		}
	}
}

// TestRemoteServerKilled: a mutation while the server is down is
// remote_unavailable (exit 3); once it is back, the same arguments succeed.
func TestRemoteServerKilled(t *testing.T) {
	t.Parallel()
	srv, d := daemonServer(t)
	bareRepo(t, srv.base, "state")
	dir := machine(t, srv.url("state"))
	must(t, dir, "goal", "create", "--goal-id", "g")
	must(t, dir, "agent", "register", "--goal-id", "g", "--agent-id", "a")
	must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_down", "--text", "x")
	d.kill()
	args := []string{"task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_down", "--owner", "a", "--idempotency-key", "k1", "--ttl-seconds", "300"}
	r := loopx(t, dir, nil, args...)
	if r.code != 3 || r.errCode() != "remote_unavailable" {
		t.Fatalf("with the server down: exit %d %s", r.code, r.raw)
	}
	// Reads fetch first too; --offline reads the local view and says so.
	if r := loopx(t, dir, nil, "todo", "show", "--goal-id", "g", "--todo-id", "todo_down"); r.code != 3 || r.errCode() != "remote_unavailable" {
		t.Fatalf("read with the server down: exit %d %s", r.code, r.raw)
	}
	r = must(t, dir, "--offline", "todo", "show", "--goal-id", "g", "--todo-id", "todo_down")
	if r.out["offline"] != true || r.out["view_fetched_at"] == nil {
		t.Fatalf("offline read: %s", r.raw)
	}
	d.start()
	r = must(t, dir, args...)
	if r.out["status"] != "applied" {
		t.Fatalf("after restart: %s", r.raw)
	}
	r = must(t, dir, args...)
	if r.out["status"] != "replayed" {
		t.Fatalf("again: %s", r.raw)
	}

	// Offline work survives a sync that cannot reach the server.
	must(t, dir, "--offline", "todo", "add", "--goal-id", "g", "--todo-id", "todo_offline", "--text", "y")
	d.kill()
	if r := loopx(t, dir, nil, "sync"); r.code != 3 || r.errCode() != "remote_unavailable" {
		t.Fatalf("sync with the server down: exit %d %s", r.code, r.raw)
	}
	d.start()
	r = must(t, dir, "sync")
	if r.out["applied"] != 1.0 || r.out["pending"] != 0.0 {
		t.Fatalf("sync after restart: %s", r.raw)
	}
	must(t, dir, "todo", "show", "--goal-id", "g", "--todo-id", "todo_offline")
}

// TestRemoteHookRejects: a pre-receive hook that refuses is remote_rejected
// (exit 1) with the hook's message, and nothing changes on either side.
func TestRemoteHookRejects(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"file", "daemon", "http"} {
		t.Run(kind, func(t *testing.T) {
			srv := serverOf(t, kind)
			bare := bareRepo(t, srv.base, "state")
			dir := machine(t, srv.url("state"))
			must(t, dir, "goal", "create", "--goal-id", "g")
			before := git(t, bare, "rev-parse", "refs/loopx/state")
			hook := filepath.Join(bare, "hooks", "pre-receive")
			if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'loopx state is frozen by policy' >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := loopx(t, dir, nil, "agent", "register", "--goal-id", "g", "--agent-id", "a")
			if r.code != 1 || r.errCode() != "remote_rejected" {
				t.Fatalf("exit %d %s", r.code, r.raw)
			}
			if !strings.Contains(r.raw, "frozen by policy") && !strings.Contains(r.raw, "pre-receive") {
				t.Errorf("the hook's message is missing: %s", r.raw)
			}
			if after := git(t, bare, "rev-parse", "refs/loopx/state"); after != before {
				t.Fatalf("server moved: %s → %s", before, after)
			}
			if local := git(t, dir, "rev-parse", "refs/loopx/state"); local != before {
				t.Fatalf("local ref moved to %s, the server holds %s", local, before)
			}
		})
	}
}

// cutProxy forwards TCP connections to a git daemon. Armed, it cuts the
// next receive-pack connection right after the client sent its pack, when
// the server starts answering (the update is then done on the server, and
// the client never hears of it), and closes its port until restored (the
// client cannot ask the server either).
type cutProxy struct {
	t       testing.TB
	addr    string
	target  string
	mu      sync.Mutex
	l       net.Listener
	armed   atomic.Bool
	cutDone chan struct{}
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	p := &cutProxy{t: t, addr: "127.0.0.1:0", target: target, cutDone: make(chan struct{}, 1)}
	p.restore()
	p.addr = p.l.Addr().String()
	t.Cleanup(p.close)
	return p
}

// restore (re)opens the proxy's port.
func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var l net.Listener
	var err error
	for i := 0; i < 100; i++ {
		if l, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.l = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
}

func (p *cutProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
}

func (p *cutProxy) port() int {
	_, port, _ := net.SplitHostPort(p.addr)
	n, _ := strconv.Atoi(port)
	return n
}

func (p *cutProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	var packSent atomic.Bool
	var receivePack atomic.Bool
	done := make(chan struct{}, 2)
	go func() { // client → server
		buf := make([]byte, 32<<10)
		var seen []byte
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if len(seen) < 4096 {
					seen = append(seen, buf[:n]...)
					if bytes.Contains(seen, []byte("git-receive-pack")) {
						receivePack.Store(true)
					}
				}
				if receivePack.Load() && bytes.Contains(buf[:n], []byte("PACK")) {
					packSent.Store(true)
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}()
	go func() { // server → client
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				if p.armed.Load() && packSent.Load() {
					// The server answers the update: it is applied. Lose it.
					p.armed.Store(false)
					p.close()
					c.Close()
					s.Close()
					p.cutDone <- struct{}{}
					break
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}()
	<-done
}

// TestRemoteConnectionLost: the connection drops after the push was sent
// and applied; the client cannot learn the outcome (exit 3,
// remote_unavailable); the retry with the same arguments is a replay of the
// original receipt, never a second application.
//
// The same when the server decides (server-hook install --decide): the
// request push is cut once the server has decided and answers; the retry
// is decided again by the server, which finds the receipt, and answers
// with the replay.
func TestRemoteConnectionLost(t *testing.T) {
	t.Parallel()
	t.Run("compare-and-swap", func(t *testing.T) { t.Parallel(); remoteConnectionLost(t, false) })
	t.Run("decided", func(t *testing.T) { t.Parallel(); remoteConnectionLost(t, true) })
}

func remoteConnectionLost(t *testing.T, decide bool) {
	srv, d := daemonServer(t)
	bare := bareRepo(t, srv.base, "state")
	if decide {
		must(t, srv.base, "server-hook", "install", "--repo", bare, "--loopx", loopxWrapper(t), "--decide")
	}
	proxy := newCutProxy(t, fmt.Sprintf("127.0.0.1:%d", d.port))
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	git(t, dir, "remote", "add", "origin", fmt.Sprintf("git://127.0.0.1:%d/state.git", proxy.port()))
	must(t, dir, "init", "--remote", "origin")
	must(t, dir, "goal", "create", "--goal-id", "g")
	must(t, dir, "agent", "register", "--goal-id", "g", "--agent-id", "a")
	must(t, dir, "todo", "add", "--goal-id", "g", "--todo-id", "todo_lost", "--text", "x")

	args := []string{"task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lost", "--owner", "a", "--idempotency-key", "k1", "--ttl-seconds", "300"}
	if decide {
		// The clone sends its requests to the server by now.
		r := loopx(t, dir, []string{"LOOPX_TX_STATS=1"}, "todo", "add", "--goal-id", "g", "--todo-id", "todo_other", "--text", "y")
		if r.code != 0 || !strings.Contains(r.raw, `"decided_by":"server"`) {
			t.Fatalf("not decided by the server: exit %d %s", r.code, r.raw)
		}
	}
	proxy.armed.Store(true)
	r := loopx(t, dir, nil, args...)
	select {
	case <-proxy.cutDone:
	default:
		t.Fatalf("the proxy did not cut the push: exit %d %s", r.code, r.raw)
	}
	if r.code != 3 || r.errCode() != "remote_unavailable" {
		t.Fatalf("lost response: exit %d %s", r.code, r.raw)
	}
	applied := git(t, bare, "log", "-1", "--format=%H %s", "--grep=task-lease acquire", "refs/loopx/state")
	if !strings.Contains(applied, "task-lease acquire g/todo_lost") {
		t.Fatalf("the acquire did not land on the server: %q", applied)
	}
	proxy.restore()
	r = must(t, dir, args...)
	if r.out["status"] != "replayed" || r.out["idempotent"] != true {
		t.Fatalf("retry: %s", r.raw)
	}
	if rev := r.out["revision"]; rev != strings.Fields(applied)[0] {
		t.Fatalf("retry reports revision %v, the acquire landed at %s", rev, applied)
	}
	if n := strings.Count(git(t, bare, "log", "--format=%s", "refs/loopx/state"), "task-lease acquire"); n != 1 {
		t.Fatalf("%d acquire commits on the server, want 1", n)
	}
	if refs := git(t, bare, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "refs/loopx/requests/") {
		t.Fatalf("a request ref was kept: %s", refs)
	}
	serverChain(t, bare)
}

// TestRemoteOfflineSync: work done --offline is replayed on the server's
// head by sync, in order; a replay the head now refuses is reported, never
// dropped; the local ref then mirrors the server.
func TestRemoteOfflineSync(t *testing.T) {
	t.Parallel()
	srv := fileServer(t)
	bare := bareRepo(t, srv.base, "state")
	a := machine(t, srv.url("state"))
	b := machine(t, srv.url("state"))
	must(t, a, "goal", "create", "--goal-id", "g")
	for _, ag := range []string{"agent-a", "agent-b"} {
		must(t, a, "agent", "register", "--goal-id", "g", "--agent-id", ag)
	}
	must(t, a, "todo", "add", "--goal-id", "g", "--todo-id", "todo_contested", "--text", "both want it")
	must(t, b, "todo", "show", "--goal-id", "g", "--todo-id", "todo_contested") // b's view is fresh

	// a works offline: an acquire (the server will refuse it) and a new todo.
	r := must(t, a, "--offline", "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_contested",
		"--owner", "agent-a", "--idempotency-key", "ka", "--ttl-seconds", "600")
	if r.out["offline"] != true {
		t.Fatalf("offline acquire: %s", r.raw)
	}
	must(t, a, "--offline", "todo", "add", "--goal-id", "g", "--text", "found offline")
	// Meanwhile b takes the todo online.
	must(t, b, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_contested",
		"--owner", "agent-b", "--idempotency-key", "kb", "--ttl-seconds", "600")

	// Online mutations on a wait for sync.
	if r := loopx(t, a, nil, "agent", "register", "--goal-id", "g", "--agent-id", "agent-c"); r.errCode() != "invalid_request" || !strings.Contains(r.raw, "loopx sync") {
		t.Fatalf("online mutation with offline work pending: exit %d %s", r.code, r.raw)
	}
	// One offline request is refused on the server's head: sync exits 1
	// and lists it; the other is synced.
	r = loopx(t, a, nil, "sync")
	if r.code != 1 || r.errCode() != "todo_lease_conflict" {
		t.Fatalf("sync with a refusal: exit %d %s", r.code, r.raw)
	}
	syncData, _ := r.out["error"].(map[string]any)["sync"].(map[string]any)
	replays, _ := syncData["replays"].([]any)
	if len(replays) != 2 || syncData["refused"] != 1.0 || syncData["applied"] != 1.0 {
		t.Fatalf("sync: %s", r.raw)
	}
	first := replays[0].(map[string]any)
	if first["status"] != "refused" || first["error"].(map[string]any)["code"] != "todo_lease_conflict" {
		t.Fatalf("the contested acquire: %v", first)
	}
	if second := replays[1].(map[string]any); second["status"] != "applied" || second["operation"] != "todo.add" {
		t.Fatalf("the offline todo: %v", second)
	}
	head := git(t, bare, "rev-parse", "refs/loopx/state")
	if local := git(t, a, "rev-parse", "refs/loopx/state"); local != head {
		t.Fatalf("after sync the local ref is %s, the server %s", local, head)
	}
	// Nothing is pending any more, and a second sync does nothing.
	r = must(t, a, "sync")
	if replays, _ := r.out["replays"].([]any); len(replays) != 0 {
		t.Fatalf("second sync: %s", r.raw)
	}
	must(t, a, "agent", "register", "--goal-id", "g", "--agent-id", "agent-c")
	serverChain(t, bare)
}

func TestRemoteURLs(t *testing.T) {
	t.Parallel()
	// A relative path as origin, and --remote naming an unknown remote.
	srv := fileServer(t)
	bareRepo(t, srv.base, "state")
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	rel, err := filepath.Rel(dir, srv.url("state"))
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "remote", "add", "origin", rel)
	must(t, dir, "init", "--remote", "origin")
	r := loopx(t, dir, nil, "--remote", "nosuch", "goal", "list")
	if r.code != 1 || r.errCode() != "invalid_request" {
		t.Fatalf("unknown remote: exit %d %s", r.code, r.raw)
	}
	r = loopx(t, dir, nil, "--remote", "git://127.0.0.1:1/none.git", "goal", "list")
	if r.code != 3 || r.errCode() != "remote_unavailable" {
		t.Fatalf("unreachable remote: exit %d %s", r.code, r.raw)
	}
}

// TestRemoteInitPublishAdopt: init --remote publishes a local history to a
// remote that lacks the state ref, and a machine with a store of its own
// adopts the remote's only with --adopt (store_mismatch without it),
// keeping its own under refs/loopx/backup/.
func TestRemoteInitPublishAdopt(t *testing.T) {
	t.Parallel()
	srv := fileServer(t)
	bare := bareRepo(t, srv.base, "state")
	a := newStore(t, "from-a", "agent-a") // used locally first
	localA := git(t, a, "rev-parse", "refs/loopx/state")
	git(t, a, "remote", "add", "origin", srv.url("state"))
	r := must(t, a, "init", "--remote", "origin")
	if r.out["remote_action"] != "published" || r.out["status"] != "no_change" {
		t.Fatalf("publish: %s", r.raw)
	}
	if got := git(t, bare, "rev-parse", "refs/loopx/state"); got != localA {
		t.Fatalf("server holds %s, a had %s", got, localA)
	}

	b := newStore(t, "from-b")
	localB := git(t, b, "rev-parse", "refs/loopx/state")
	git(t, b, "remote", "add", "origin", srv.url("state"))
	// b's store is another store: taken only when asked (contract section 8).
	if r := loopx(t, b, nil, "init", "--remote", "origin"); r.code != 1 || r.errCode() != "store_mismatch" {
		t.Fatalf("init --remote of another store without --adopt: exit %d %s", r.code, r.raw)
	}
	if got := git(t, b, "rev-parse", "refs/loopx/state"); got != localB {
		t.Fatalf("b's ref moved to %s", got)
	}
	r = must(t, b, "init", "--remote", "origin", "--adopt")
	if r.out["remote_action"] != "adopted" {
		t.Fatalf("adopt: %s", r.raw)
	}
	if got := git(t, b, "rev-parse", "refs/loopx/state"); got != localA {
		t.Fatalf("b's ref is %s, the server's %s", got, localA)
	}
	if got := git(t, b, "rev-parse", "refs/loopx/backup/origin/loopx/state/"+localB); got != localB {
		t.Fatalf("backup of b's history: %s", got)
	}
	r = must(t, b, "goal", "list")
	if !strings.Contains(r.raw, `"goal_id":"from-a"`) || strings.Contains(r.raw, `"goal_id":"from-b"`) {
		t.Fatalf("b sees: %s", r.raw)
	}
	if r := must(t, b, "init", "--remote", "origin"); r.out["remote_action"] != "up_to_date" {
		t.Fatalf("again: %s", r.raw)
	}
}
