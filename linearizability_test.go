package loopx_test

// TestLinearizability: concurrent client processes (real loopx processes)
// send random task-lease acquire / renew / transfer / release / inspect and
// todo claim / clear-claim requests on a few todos, on one repository
// ("local") and through a `git daemon` on 127.0.0.1 with one clone per
// client ("daemon"). Clients are killed (SIGKILL) at random points and, in
// daemon mode, so is the daemon (then restarted). Every attempt is recorded
// with its start and end (monotonic, for the order; wall clock seconds, for
// the decision time), its arguments and its result, and the history is
// checked with porcupine against the sequential model of one todo in
// linearize_model_test.go (the history partitions by todo).
//
// Results: exit 0 is the JSON result, exit 1 a decided refusal with its
// code. Exit 3 and kills are unknown outcomes: the client retries with the
// same arguments (the contract's retry rule), and both the unknown attempt
// and every retry are in the history. A local attempt cannot take effect
// after its process was reaped, so its interval ends there. Through a
// server, a push the client sent may still land after the client died: an
// unknown remote attempt's interval ends -linearize.remote-grace (5 s) after
// its process did, or never with 0. (Without a bound, porcupine needs hours
// to prove a history with hundreds of such attempts illegal, since each may
// be placed anywhere after its start; a receive-pack finishing 5 s after its
// client died is not something a loopback daemon does.) Unknown inspects are
// left out (a read has no effect).
//
// Longer runs: go test -run TestLinearizability -linearize.ops=500
// -linearize.clients=8 (or bash bench/linearize.sh).

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/loopx-dev/loopx/internal/soak"
)

var (
	linOpsFlag     = flag.Int("linearize.ops", 0, "TestLinearizability: requests per client (0: 30 local, 15 through git daemon, where one request takes about half a second; 120 and 60 in a soak run)")
	linClientsFlag = flag.Int("linearize.clients", 4, "TestLinearizability: client processes")
	linModesFlag   = flag.String("linearize.modes", "local,daemon", "TestLinearizability: comma-separated modes (local: one repository; daemon: one clone per client through git daemon)")
	linKillFlag    = flag.Float64("linearize.kill", 0.08, "TestLinearizability: probability that an attempt is killed (SIGKILL) at a random point")
	linTimeoutFlag = flag.Duration("linearize.check-timeout", 2*time.Minute, "TestLinearizability: porcupine's time limit")
	linGraceFlag   = flag.Duration("linearize.remote-grace", 5*time.Second, "TestLinearizability: how long after a remote attempt with an unknown outcome ended its push may still land on the server (0: forever)")
	linOutFlag     = flag.String("linearize.out", "", "TestLinearizability: folder for the visualization of a history that fails (default: the system's temp folder)")
	linSeedFlag    = flag.Uint64("linearize.seed", 0, "TestLinearizability: random seed (0: from the clock)")
	linDaemonKill  = flag.Bool("linearize.kill-daemon", true, "TestLinearizability: kill and restart the git daemon at random moments")
	linAsUnknown   = flag.String("linearize.unknown-codes", "", "TestLinearizability, for diagnosis only: comma-separated exit-1 error codes to treat as unknown outcomes and retry (a transient failure that is wrongly exit 1), so the rest of a history can still be checked")
)

const linGoal = "g"

var (
	linTodos  = []string{"todo_lin_0", "todo_lin_1", "todo_lin_2"}
	linAgents = []string{"a0", "a1", "a2"}
	linTTLs   = []int64{1, 2, 3, 30}
)

// linCodes are the refusals the model can give; any other exit-1 code is a
// failure of its own (e.g. a transient cause reported as exit 1).
var linCodes = []string{"claim_conflict", "todo_lease_conflict", "idempotency_key_reuse", "version_mismatch",
	"execution_not_current", "lease_not_active", "lease_proof_mismatch", "not_claim_owner", "lease_fence_required"}

func TestLinearizability(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real processes for several seconds; runs without -short")
	}
	for _, mode := range strings.Split(*linModesFlag, ",") {
		t.Run(mode, func(t *testing.T) { linearizability(t, mode) })
	}
}

// linKnow is what the clients together have seen of one todo; they pick
// plausible (and some implausible) requests from it.
type linKnow struct {
	has        bool
	owner, key string
	version    int64
	claimant   string
	keys       []string
	acquires   []linInput // acquires that were applied, to send again
}

type linRun struct {
	t         *testing.T
	mode      string
	exe       string
	dirs      []string
	base      time.Time
	kill      float64
	meanDur   time.Duration // moving average of an attempt's duration: kills land within it
	remote    bool
	mu        sync.Mutex
	hist      []porcupine.Operation
	unknownIx []int // indexes in hist of unknown remote attempts (interval without end)
	know      map[string]*linKnow
	counts    map[string]int
	stats     struct{ calls, attempts, killed, transient, daemonKills, staleLocks int }
	nextID    int
}

func linearizability(t *testing.T, mode string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	clients, ops := *linClientsFlag, *linOpsFlag
	if ops == 0 {
		ops = soak.Pick(map[string]int{"local": 30, "daemon": 15}, map[string]int{"local": 120, "daemon": 60})[mode]
	}
	seed := *linSeedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("%s: %d clients × %d requests, kill probability %.2f, seed %d", mode, clients, ops, *linKillFlag, seed)
	r := &linRun{t: t, mode: mode, exe: exe, kill: *linKillFlag, know: map[string]*linKnow{}, counts: map[string]int{}, nextID: clients}
	for _, td := range linTodos {
		r.know[td] = &linKnow{}
	}
	var d *daemon
	var bare string
	switch mode {
	case "local":
		dir := newStore(t, linGoal, linAgents...)
		for range clients {
			r.dirs = append(r.dirs, dir)
		}
		r.meanDur = 40 * time.Millisecond
	case "daemon":
		var srv *gitServer
		srv, d = daemonServer(t)
		bare = bareRepo(t, srv.base, "state")
		for range clients {
			r.dirs = append(r.dirs, machine(t, srv.url("state")))
		}
		must(t, r.dirs[0], "goal", "create", "--goal-id", linGoal)
		for _, a := range linAgents {
			must(t, r.dirs[0], "agent", "register", "--goal-id", linGoal, "--agent-id", a)
		}
		r.remote = true
		r.meanDur = 400 * time.Millisecond
	default:
		t.Fatalf("unknown mode %q (want local or daemon)", mode)
	}
	for _, td := range linTodos {
		must(t, r.dirs[0], "todo", "add", "--goal-id", linGoal, "--todo-id", td, "--text", "linearizability")
	}

	r.base = time.Now()
	stopKiller := make(chan struct{})
	killerDone := make(chan struct{})
	if d != nil && *linDaemonKill {
		go r.daemonKiller(d, bare, rand.New(rand.NewPCG(seed, 99)), stopKiller, killerDone)
	} else {
		close(killerDone)
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			for call := range ops {
				r.do(c, call, r.pick(c, call, rng), rng)
			}
		}()
	}
	wg.Wait()
	close(stopKiller)
	<-killerDone
	// A final read of every todo once everything is quiet.
	for _, td := range linTodos {
		r.do(0, ops, linInput{Todo: td, Kind: "inspect"}, rand.New(rand.NewPCG(seed, 7)))
	}
	elapsed := time.Since(r.base)

	// Unknown remote attempts may take effect after the client is gone.
	var end int64
	for _, op := range r.hist {
		end = max(end, op.Return)
	}
	for _, i := range r.unknownIx {
		if g := linGraceFlag.Nanoseconds(); g > 0 {
			r.hist[i].Return = min(end+1, r.hist[i].Return+g)
		} else {
			r.hist[i].Return = end + 1
		}
	}

	r.report(elapsed)
	// Contract section 3: two callers are never both told applied for one
	// application. Checked directly too, for a plain message (porcupine
	// finds it, but proving a history with many unknown outcomes illegal
	// can take it long).
	timeout := *linTimeoutFlag
	if dup := linDoubleApplied(r.hist); dup != "" {
		t.Errorf("%s: one commit reported applied to several callers:\n%s", mode, dup)
		timeout = min(timeout, 30*time.Second)
	}
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(linModel(), r.hist, timeout)
	t.Logf("%s: porcupine: %s (%d operations in the history, checked in %v)", mode, res, len(r.hist), time.Since(start).Round(time.Millisecond))
	if res != porcupine.Ok {
		out := *linOutFlag
		if out == "" {
			out = os.TempDir()
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(out, fmt.Sprintf("loopx-linearize-%s-%d.html", mode, time.Now().UnixNano()))
		if err := porcupine.VisualizePath(linModel(), info, path); err != nil {
			t.Errorf("visualization: %v", err)
		}
		text := strings.TrimSuffix(path, ".html") + ".txt"
		if err := os.WriteFile(text, []byte(linHistoryText(r.hist)), 0o644); err != nil {
			t.Errorf("history: %v", err)
		}
		t.Fatalf("%s: the history is not linearizable (porcupine: %s)\n%s\nvisualization: %s\nhistory: %s",
			mode, res, linExplain(r.hist, info), path, text)
	}
	t.Logf("%s: linearizable", mode)

	if bare != "" {
		serverChain(t, bare)
	} else {
		checkLinear(t, r.dirs[0])
	}
}

// pick chooses the next request of client c.
func (r *linRun) pick(c, call int, rng *rand.Rand) linInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	todo := linTodos[rng.IntN(len(linTodos))]
	k := r.know[todo]
	in := linInput{Todo: todo, Client: c, Call: call}
	agent := func() string { return linAgents[rng.IntN(len(linAgents))] }
	fresh := fmt.Sprintf("c%d-%d", c, call)
	old := func() string {
		if len(k.keys) > 0 {
			return k.keys[rng.IntN(len(k.keys))]
		}
		return fresh
	}
	ttl := linTTLs[rng.IntN(len(linTTLs))]
	// proof: the known current lease mostly, else a wrong one.
	proof := func() {
		if k.has && rng.IntN(100) < 85 {
			in.Owner, in.Key, in.EV = k.owner, k.key, k.version
			return
		}
		in.Owner, in.Key = agent(), old()
		in.EV = max(0, k.version+int64(rng.IntN(3))-1)
	}
	switch x := rng.IntN(100); {
	case x < 22:
		in.Kind, in.Owner, in.Key, in.TTL = "acquire", agent(), fresh, ttl
		switch y := rng.IntN(100); {
		case y < 10 && k.has: // the current execution's key: replay or key reuse
			in.Owner, in.Key = k.owner, k.key
		case y < 15:
			in.Key = old()
		}
		switch y := rng.IntN(100); {
		case y < 35:
			in.HasEV, in.EV = true, k.version
		case y < 50:
			in.HasEV, in.EV = true, k.version+1
		}
		if rng.IntN(2) == 0 {
			in.Scope = "w/" + todo + "/**"
		}
		if len(k.acquires) > 0 && rng.IntN(100) < 20 {
			// An applied acquire sent again, later: replayed while its
			// execution is current, else execution_not_current.
			a := k.acquires[rng.IntN(len(k.acquires))]
			in.Owner, in.Key, in.HasEV, in.EV, in.TTL, in.Scope = a.Owner, a.Key, a.HasEV, a.EV, a.TTL, a.Scope
		}
	case x < 36:
		in.Kind, in.TTL = "renew", ttl
		proof()
	case x < 46:
		in.Kind, in.TTL = "transfer", ttl
		proof()
		in.NewOwner, in.NewKey = agent(), fresh+"t"
		if rng.IntN(100) < 15 {
			in.NewKey = old()
		}
	case x < 60:
		in.Kind = "release"
		proof()
	case x < 74:
		in.Kind = "inspect"
	case x < 87:
		in.Kind, in.Owner = "claim", agent()
		if rng.IntN(100) < 30 {
			in.ClaimTTLMin = 1
		}
		if rng.IntN(100) < 40 {
			in.Key, in.TTL = fresh, ttl
		}
	default:
		in.Kind, in.Owner = "clear", agent()
		if k.claimant != "" && rng.IntN(100) < 70 {
			in.Owner = k.claimant
		}
		switch y := rng.IntN(100); {
		case k.has && k.owner == in.Owner && y < 80:
			in.Key, in.EV = k.key, k.version
		case y < 10:
			in.Key, in.EV = old(), k.version
		}
	}
	return in
}

// linArgs is the command line of a request.
func linArgs(in linInput) []string {
	base := []string{"--goal-id", linGoal, "--todo-id", in.Todo}
	v := strconv.FormatInt
	switch in.Kind {
	case "inspect":
		return append([]string{"task-lease", "inspect"}, base...)
	case "acquire":
		a := append([]string{"task-lease", "acquire"}, base...)
		a = append(a, "--owner", in.Owner, "--idempotency-key", in.Key, "--ttl-seconds", v(in.TTL, 10))
		if in.HasEV {
			a = append(a, "--expected-version", v(in.EV, 10))
		}
		if in.Scope != "" {
			a = append(a, "--write-scope", in.Scope)
		}
		return a
	case "renew", "transfer", "release":
		a := append([]string{"task-lease", in.Kind}, base...)
		a = append(a, "--owner", in.Owner, "--idempotency-key", in.Key, "--expected-version", v(in.EV, 10))
		if in.Kind != "release" {
			a = append(a, "--ttl-seconds", v(in.TTL, 10))
		}
		if in.Kind == "transfer" {
			a = append(a, "--new-owner", in.NewOwner, "--new-idempotency-key", in.NewKey)
		}
		return a
	case "claim":
		a := append([]string{"todo", "claim"}, base...)
		a = append(a, "--agent-id", in.Owner)
		if in.ClaimTTLMin > 0 {
			a = append(a, "--claim-ttl-minutes", v(in.ClaimTTLMin, 10))
		}
		if in.Key != "" {
			a = append(a, "--task-lease-idempotency-key", in.Key, "--ttl-seconds", v(in.TTL, 10))
		}
		return a
	case "clear":
		a := append([]string{"todo", "update"}, base...)
		a = append(a, "--agent-id", in.Owner, "--clear-claim")
		if in.Key != "" {
			a = append(a, "--task-lease-idempotency-key", in.Key, "--task-lease-expected-version", v(in.EV, 10))
		}
		return a
	}
	panic(in.Kind)
}

// do runs one client call: attempts until one has a known outcome.
func (r *linRun) do(c, call int, in linInput, rng *rand.Rand) {
	args := linArgs(in)
	r.mu.Lock()
	r.stats.calls++
	r.mu.Unlock()
	for attempt := 0; ; attempt++ {
		a := in
		a.Attempt = attempt
		var delay time.Duration = -1
		if rng.Float64() < r.kill/float64(attempt+1) {
			r.mu.Lock()
			delay = time.Duration(rng.Int64N(int64(r.meanDur) * 5 / 4))
			r.mu.Unlock()
		}
		out, callT, retT := r.attempt(c, &a, args, delay)
		r.record(c, &a, out, callT, retT)
		if !out.Unknown {
			return
		}
		if attempt >= 200 {
			r.t.Errorf("client %d: %v: still unknown after %d attempts: %s", c, args, attempt+1, out.Detail)
			return
		}
		time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
	}
}

type linJSONLease struct {
	Owner       string     `json:"owner"`
	Key         string     `json:"idempotency_key"`
	Version     int64      `json:"version"`
	Epoch       int64      `json:"epoch"`
	Status      string     `json:"status"`
	WriteScopes []string   `json:"write_scopes"`
	AcquiredAt  *time.Time `json:"acquired_at"`
	RenewedAt   *time.Time `json:"renewed_at"`
	ReleasedAt  *time.Time `json:"released_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Effective   bool       `json:"effective"`
}

type linJSON struct {
	OK              bool          `json:"ok"`
	Status          string        `json:"status"`
	Revision        string        `json:"revision"`
	Lease           *linJSONLease `json:"lease"`
	ClaimedBy       string        `json:"claimed_by"`
	OriginalReceipt *struct {
		Status    string        `json:"status"`
		DecidedAt time.Time     `json:"decided_at"`
		Lease     *linJSONLease `json:"lease"`
	} `json:"original_receipt"`
	Todo *struct {
		ClaimedAt      *time.Time `json:"claimed_at"`
		ClaimExpiresAt *time.Time `json:"claim_expires_at"`
		UpdatedAt      time.Time  `json:"updated_at"`
	} `json:"todo"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func linUnix(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

func (l *linJSONLease) model() linLease {
	return linLease{Owner: l.Owner, Key: l.Key, Version: l.Version, Epoch: l.Epoch, Active: l.Status == "active",
		Expires: l.ExpiresAt.Unix(), Acquired: linUnix(l.AcquiredAt), Renewed: linUnix(l.RenewedAt),
		Released: linUnix(l.ReleasedAt), Scopes: linSortedScopes(l.WriteScopes)}
}

// attempt runs one loopx process for in, killing it after delay (when
// delay >= 0), and returns its output and its interval.
func (r *linRun) attempt(c int, in *linInput, args []string, delay time.Duration) (*linOutput, int64, int64) {
	cmd := exec.Command(r.exe, args...)
	cmd.Dir = r.dirs[c]
	cmd.Env = append(os.Environ(), "LOOPX_TEST_CLI=1", "LOOPX_FORMAT=json", "LOOPX_LOCK_TIMEOUT=20s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	in.Lo = time.Now().Unix()
	callT := time.Since(r.base).Nanoseconds()
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start loopx: %v", err)
	}
	var timer *time.Timer
	if delay >= 0 {
		timer = time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	}
	err := cmd.Wait()
	retT := time.Since(r.base).Nanoseconds()
	in.Hi = time.Now().Unix()
	if timer != nil {
		timer.Stop()
	}
	raw := strings.TrimSpace(stdout.String() + " " + stderr.String())
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &linOutput{Unknown: true, Detail: "killed"}, callT, retT
		}
		code = ee.ExitCode()
	default:
		r.t.Fatalf("loopx %v: %v", args, err)
	}
	var j linJSON
	if jerr := json.Unmarshal(stdout.Bytes(), &j); jerr != nil && code != 3 {
		r.t.Errorf("client %d: loopx %v: exit %d, output is not JSON (%v): %s", c, args, code, jerr, raw)
		return &linOutput{Unknown: true, Detail: fmt.Sprintf("exit %d, no JSON", code)}, callT, retT
	}
	errCode := ""
	if j.Error != nil {
		errCode = j.Error.Code
	}
	switch code {
	case 0:
	case 1:
		if slices.Contains(strings.Split(*linAsUnknown, ","), errCode) {
			r.t.Logf("client %d: loopx %v: exit 1, treated as unknown: %s", c, args, raw)
			return &linOutput{Unknown: true, Detail: "exit 1 " + errCode + " (as unknown)"}, callT, retT
		}
		if !slices.Contains(linCodes, errCode) {
			r.t.Errorf("client %d: loopx %v: exit 1 with %q, which no lease rule of this test gives: %s", c, args, errCode, raw)
		}
		return &linOutput{Code: errCode, Detail: raw}, callT, retT
	case 3:
		return &linOutput{Unknown: true, Detail: "exit 3 " + errCode}, callT, retT
	default:
		r.t.Errorf("client %d: loopx %v: exit %d: %s", c, args, code, raw)
		return &linOutput{Unknown: true, Detail: fmt.Sprintf("exit %d", code)}, callT, retT
	}
	o := &linOutput{Status: j.Status, Revision: j.Revision, ClaimedBy: j.ClaimedBy, Detail: "exit 0"}
	if j.Lease != nil {
		o.Lease = &linView{linLease: j.Lease.model(), Effective: j.Lease.Effective}
	}
	if rc := j.OriginalReceipt; rc != nil {
		o.Orig = &linReceiptOut{Status: rc.Status, Decided: rc.DecidedAt.Unix()}
		if rc.Lease != nil {
			o.Orig.HasLease, o.Orig.Lease = true, rc.Lease.model()
		}
	}
	if j.Todo != nil {
		o.ClaimedAt, o.ClaimExpires, o.UpdatedAt = linUnix(j.Todo.ClaimedAt), linUnix(j.Todo.ClaimExpiresAt), j.Todo.UpdatedAt.Unix()
	}
	return o, callT, retT
}

// record adds one attempt to the history and learns from its result.
func (r *linRun) record(c int, in *linInput, out *linOutput, callT, retT int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.attempts++
	if out.Detail != "killed" {
		r.meanDur = (r.meanDur*15 + time.Duration(retT-callT)) / 16
	}
	key := in.Kind + " "
	switch {
	case out.Detail == "killed":
		r.stats.killed++
		key += "killed"
	case out.Unknown:
		r.stats.transient++
		key += out.Detail
	case out.Code != "":
		key += out.Code
	case out.Status != "":
		key += out.Status
	default:
		key += "ok"
	}
	r.counts[key]++
	if out.Unknown && in.Kind == "inspect" {
		return // no effect, nothing learnt
	}
	op := porcupine.Operation{ClientId: c, Input: in, Call: callT, Output: out, Return: retT}
	if out.Unknown && r.remote {
		op.ClientId = r.nextID
		r.nextID++
		r.unknownIx = append(r.unknownIx, len(r.hist))
	}
	r.hist = append(r.hist, op)
	if out.Unknown || out.Code != "" {
		return
	}
	k := r.know[in.Todo]
	if out.Lease != nil {
		k.has, k.owner, k.key, k.version = true, out.Lease.Owner, out.Lease.Key, out.Lease.Version
		if !slices.Contains(k.keys, out.Lease.Key) {
			k.keys = append(k.keys, out.Lease.Key)
		}
	}
	if in.Kind == "claim" || in.Kind == "clear" {
		k.claimant = out.ClaimedBy
	}
	if in.Kind == "acquire" && out.Status == "applied" {
		k.acquires = append(k.acquires, *in)
	}
}

// daemonKiller kills the git daemon (its whole process group, so pushes
// and fetches in flight die too) at random moments and restarts it.
//
// A receive-pack killed between creating refs/loopx/state.lock and renaming
// it leaves that lock in the server's repository, and git never removes it:
// every later push is refused until someone does. While the daemon is down
// no git process runs on the server's repository, so the killer does what
// the server's operator would do (and git's message says): it removes the
// lock files, and counts them.
func (r *linRun) daemonKiller(d *daemon, bare string, rng *rand.Rand, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(500+rng.IntN(1500)) * time.Millisecond):
		}
		d.kill()
		r.mu.Lock()
		r.stats.daemonKills++
		r.mu.Unlock()
		if n := linRemoveServerLocks(r.t, bare); n > 0 {
			r.mu.Lock()
			r.stats.staleLocks += n
			r.mu.Unlock()
		}
		time.Sleep(time.Duration(30+rng.IntN(200)) * time.Millisecond)
		if err := restartDaemon(d); err != nil {
			r.t.Errorf("restart git daemon: %v", err)
			return
		}
	}
}

// linRemoveServerLocks removes the ref lock files left in a bare
// repository (refs/**.lock, packed-refs.lock) and returns how many.
func linRemoveServerLocks(t testing.TB, bare string) int {
	n := 0
	remove := func(p string) {
		if err := os.Remove(p); err == nil {
			n++
			t.Logf("removed %s, left by a git receive-pack killed with the daemon", p)
		}
	}
	_ = filepath.WalkDir(filepath.Join(bare, "refs"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".lock") {
			remove(p)
		}
		return nil
	})
	remove(filepath.Join(bare, "packed-refs.lock"))
	return n
}

// linStartDaemon starts d again on its port, as daemon.start does, but
// returns its error (it runs off the test goroutine).
// restartDaemon starts a killed daemon again on its port, trying a few
// times (the port may still be held for a moment).
func restartDaemon(d *daemon) error {
	var err error
	for range 5 {
		if err = linStartDaemon(d); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

func linStartDaemon(d *daemon) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", d.port),
		"--base-path="+d.base, "--export-all", "--enable=receive-pack", "--informative-errors", d.base)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	d.cmd = cmd
	for range 500 {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("git daemon did not start: %s", stderr.String())
}

// report logs the operation counts.
func (r *linRun) report(elapsed time.Duration) {
	t := r.t
	keys := make([]string, 0, len(r.counts))
	for k := range r.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-36s %d", k, r.counts[k])
	}
	t.Logf("%s: attempts by outcome:%s", r.mode, b.String())
	unknown := 0
	for _, op := range r.hist {
		if op.Output.(*linOutput).Unknown {
			unknown++
		}
	}
	t.Logf("%s: %d calls, %d attempts in %v: %d killed, %d exit 3 (all retried with the same arguments), %d unknown outcomes in the history, %d git daemon kills, %d stale server ref locks removed",
		r.mode, r.stats.calls, r.stats.attempts, elapsed.Round(time.Millisecond), r.stats.killed, r.stats.transient, unknown, r.stats.daemonKills, r.stats.staleLocks)
}

// linExplain says where each partition that does not linearize gets stuck:
// the end of its longest linearizable prefix, the model's states there, and
// the requests none of which can come next.
func linExplain(hist []porcupine.Operation, info porcupine.LinearizationInfo) string {
	model := linModel()
	parts := model.Partition(hist)
	partials := info.PartialLinearizationsOperations()
	var b strings.Builder
	for p, part := range parts {
		if p >= len(partials) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		done := map[*linInput]bool{}
		state := model.Init()
		for _, op := range longest {
			done[op.Input.(*linInput)] = true
			_, state = model.Step(state, op.Input, op.Output)
		}
		fmt.Fprintf(&b, "%s: %d of %d requests linearize; the last ones:\n", part[0].Input.(*linInput).Todo, len(longest), len(part))
		for _, op := range longest[max(0, len(longest)-6):] {
			fmt.Fprintf(&b, "    %s\n", linDescribe(op.Input, op.Output))
		}
		fmt.Fprintf(&b, "  model state(s) then: %s\n  none of these can come next:\n", model.DescribeState(state))
		minRet := int64(math.MaxInt64)
		for _, op := range part {
			if !done[op.Input.(*linInput)] {
				minRet = min(minRet, op.Return)
			}
		}
		for _, op := range part {
			if !done[op.Input.(*linInput)] && op.Call <= minRet {
				fmt.Fprintf(&b, "    %s\n", linDescribe(op.Input, op.Output))
			}
		}
	}
	return b.String()
}

// linHistoryText is the whole history, by start time, one attempt a line
// (times in ms since the run started).
func linHistoryText(hist []porcupine.Operation) string {
	ops := slices.Clone(hist)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	for _, op := range ops {
		o := op.Output.(*linOutput)
		fmt.Fprintf(&b, "%9.1f %9.1f  %s  %s\n", float64(op.Call)/1e6, float64(op.Return)/1e6, op.Input.(*linInput).Todo,
			linDescribe(op.Input, o))
		if o.Code != "" {
			fmt.Fprintf(&b, "%20s  %s\n", "", o.Detail)
		}
	}
	return b.String()
}

// linDoubleApplied lists the revisions that more than one attempt was told
// it applied.
func linDoubleApplied(hist []porcupine.Operation) string {
	by := map[string][]porcupine.Operation{}
	for _, op := range hist {
		if o := op.Output.(*linOutput); o.Status == "applied" && o.Revision != "" {
			by[o.Revision] = append(by[o.Revision], op)
		}
	}
	var b strings.Builder
	for _, rev := range slices.Sorted(maps.Keys(by)) {
		if ops := by[rev]; len(ops) > 1 {
			for _, op := range ops {
				fmt.Fprintf(&b, "  %9.1f..%9.1f ms  %s\n", float64(op.Call)/1e6, float64(op.Return)/1e6, linDescribe(op.Input, op.Output))
			}
		}
	}
	return b.String()
}
