// Package doctor checks that a clone is set up to work with loopx and
// explains what is not, each check with its fix (`loopx doctor`): git's
// version, the store and its format, the hooks and the loopx they run, the
// agent identity and where it is registered, the signing key, the remote
// (reachable, which store it serves) and the clock against the heads.
//
// Decisions written down here (docs/DECISIONS.md, "loopx doctor"):
//   - Doctor never writes: it opens the store offline, reads records
//     without the derived caches (records.View), and looks at the remote
//     with gitstore.PeekRemote, which keeps nothing. Nothing it calls
//     retries; every look at the network is bounded by Options.Timeout.
//   - A missing guard hook is a problem (commits and pushes are then not
//     checked against other agents' write scopes); so is a missing agent
//     identity (the hooks would check commits as nobody's) and one that is
//     registered in no goal.
//   - A hook whose recorded loopx no longer exists is a problem even when
//     a loopx on PATH stands in for it (the hook runs another loopx than
//     it was installed with); the fix removes loopx's block and installs
//     it again, since install leaves a hook that holds the block as it is.
//   - A signing key is judged as a mutation would use it (Store.SigningKey):
//     an agent with a registered key must have that key at hand; in a store
//     that requires signatures an agent must have a registered key at
//     hand; $LOOPX_SIGNING_KEY naming a key the agent has not registered is
//     a problem (loopx signs with it, and nobody can check it); git's
//     user.signingKey is not, where loopx does not use it.
//   - The clock: a head (the remote's, and the local ref's) dated more than
//     the store's skew bound ahead of this machine's clock is a problem:
//     mutations are refused until the clock or the head is set right.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/signing"
)

// Check is one thing doctor looked at: ok, or a problem with its fix.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// Report is every check, in the order they were made; OK when all are.
type Report struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Check names, as the JSON and the text show them.
const (
	CheckGit        = "git_version"
	CheckStore      = "store_format"
	CheckPreCommit  = "pre_commit_hook"
	CheckCommitMsg  = "commit_msg_hook"
	CheckPrePush    = "pre_push_hook"
	CheckPreReceive = "pre_receive_hook"
	CheckIdentity   = "agent_identity"
	CheckSigning    = "signing_key"
	CheckRemote     = "remote"
	CheckClock      = "clock_skew"
)

// DefaultTimeout bounds each look at the network.
const DefaultTimeout = 10 * time.Second

// Options say which store doctor looks at and how.
type Options struct {
	// Store opens the store as the commands do (Offline is forced: doctor
	// never decides on a remote's head).
	Store loopx.Options
	// AgentID is the agent to check ($LOOPX_AGENT_ID or --agent-id; else
	// git config loopx.agent).
	AgentID string
	// NoRemote skips the remote (--offline).
	NoRemote bool
	// Timeout bounds each look at the network (default DefaultTimeout).
	Timeout time.Duration
	// LookPath finds a program on PATH (default exec.LookPath).
	LookPath func(file string) (string, error)
}

// doc is one run's state.
type doc struct {
	o      Options
	r      Report
	s      *loopx.Store
	view   *lease.View
	meta   *lease.StoreMeta
	head   gitstore.Hash
	agent  string
	agents map[string]*lease.Agent // goal → the agent's record (registered or not)
}

func (d *doc) ok(name, detail string) {
	d.r.Checks = append(d.r.Checks, Check{Name: name, OK: true, Detail: detail})
}

func (d *doc) problem(name, detail, fix string) {
	d.r.Checks = append(d.r.Checks, Check{Name: name, Detail: detail, Fix: fix})
}

// Run makes every check.
func Run(ctx context.Context, o Options) Report {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	d := &doc{o: o}
	d.checkGit(ctx)
	d.checkStore()
	if d.s != nil {
		defer d.s.Close()
		d.checkHooks()
		d.checkIdentity()
		d.checkSigning()
		remoteHead, remoteTime := d.checkRemote(ctx)
		d.checkClock(remoteHead, remoteTime)
	}
	d.r.OK = true
	for _, c := range d.r.Checks {
		d.r.OK = d.r.OK && c.OK
	}
	if d.r.Checks == nil {
		d.r.Checks = []Check{}
	}
	return d.r
}

// checkGit: a git binary, new enough for remote mode when the store has a
// remote (judged after the store is read: see checkRemote).
func (d *doc) checkGit(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	v, err := gitstore.GitVersion(ctx)
	if err != nil {
		d.problem(CheckGit, fmt.Sprintf("git cannot be run: %v", err),
			"install git (2.29 or later) and put it on PATH: loopx runs it for hooks, remotes and signatures")
		return
	}
	d.ok(CheckGit, v)
}

// checkStore opens the store and reads its format.
func (d *doc) checkStore() {
	opts := d.o.Store
	opts.Offline = true
	s, err := loopx.Open(opts)
	if err != nil {
		msg := err.Error()
		if le, ok := lease.AsError(err); ok {
			msg = le.Message
		}
		d.problem(CheckStore, msg, "run loopx inside the repository that holds the store (or give --repo or --registry), or create one with `loopx init`")
		return
	}
	d.s = s
	g := s.Git()
	head, err := g.Head()
	if err != nil {
		d.problem(CheckStore, fmt.Sprintf("the state ref %s cannot be read: %v", g.Ref(), err), "run `loopx verify` for what is wrong with the store")
		return
	}
	where := g.Ref()
	if dir := firstNonEmpty(g.WorkDir(), g.CommonDir()); dir != "" {
		where += " in " + dir
	}
	if head.IsZero() {
		fix := "create it with `loopx init`"
		if s.Remote() != "" {
			fix = fmt.Sprintf("join the shared store with `loopx init --remote %s`", s.Remote())
		}
		d.problem(CheckStore, "no loopx store on "+where, fix)
		return
	}
	d.head = head
	sn, err := g.Snapshot(head)
	if err != nil {
		d.problem(CheckStore, fmt.Sprintf("the head of %s cannot be read: %v", where, err), "run `loopx verify` for what is wrong with the store")
		return
	}
	d.view = records.View(sn)
	meta, err := d.view.Meta()
	switch {
	case err != nil:
		d.problem(CheckStore, fmt.Sprintf("%s: %v", lease.MetaPath, err), "run `loopx verify` for what is wrong with the store")
		return
	case meta == nil:
		d.problem(CheckStore, fmt.Sprintf("%s has no %s", where, lease.MetaPath), "run `loopx verify` for what is wrong with the store")
		return
	}
	d.meta = meta
	switch {
	case meta.FormatVersion > lease.FormatVersion:
		d.problem(CheckStore, fmt.Sprintf("format %d (%s), newer than this loopx's %d: it reads the store but refuses to write it", meta.FormatVersion, where, lease.FormatVersion),
			"install a newer loopx (`loopx version` says which format it writes)")
	case meta.FormatVersion < lease.FormatVersion:
		d.ok(CheckStore, fmt.Sprintf("format %d (%s); upgrade pending: this loopx writes format %d and upgrades the store, in a commit of its own, before its first mutation", meta.FormatVersion, where, lease.FormatVersion))
	default:
		d.ok(CheckStore, fmt.Sprintf("format %d (%s), the format this loopx writes", meta.FormatVersion, where))
	}
}

// checkHooks: the guard's hooks in a working tree (pre-commit, its
// commit-msg companion, pre-push), the server hook in a bare repository,
// each installed and running a loopx that exists.
func (d *doc) checkHooks() {
	g := d.s.Git()
	dir, err := g.HooksDir()
	if err != nil {
		d.problem(CheckPreCommit, fmt.Sprintf("the hooks folder cannot be found: %v", err), "check that git can read this repository (`git rev-parse --git-path hooks`)")
		return
	}
	if g.WorkDir() == "" {
		d.checkHook(dir, "pre-receive", CheckPreReceive, audit.ServerHookMarker, "# <<< loopx server-hook <<<",
			"pushes to the state ref are not checked by this server (forged, future-dated or unsigned commits are accepted)",
			"loopx server-hook install --repo "+shellQuote(g.CommonDir()))
		return
	}
	preCommit := d.checkHook(dir, "pre-commit", CheckPreCommit, audit.GuardHookMarker, "# <<< loopx guard <<<",
		"commits are not checked against the write scopes of other agents' leases", "loopx guard install")
	msgPath := filepath.Join(dir, "commit-msg")
	if _, err := os.Stat(msgPath); err == nil || preCommit {
		d.checkHook(dir, "commit-msg", CheckCommitMsg, audit.GuardHookMarker, "# <<< loopx guard <<<",
			"commits get no Loopx-Agent and Loopx-Lease trailers, so the code fence judges them as nobody's", "loopx guard install")
	}
	d.checkHook(dir, "pre-push", CheckPrePush, audit.GuardHookMarker, "# <<< loopx guard <<<",
		"pushed commits are not checked before they leave (amended and --no-verify commits included)", "loopx guard install --pre-push")
}

// checkHook checks one hook; it reports whether loopx's block is there.
func (d *doc) checkHook(dir, name, check, marker, end, missing, install string) bool {
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		d.problem(check, fmt.Sprintf("not installed (%s): %s", path, missing), install)
		return false
	}
	if err != nil {
		d.problem(check, fmt.Sprintf("%s cannot be read: %v", path, err), "make the hook readable, or remove it and run `"+install+"`")
		return false
	}
	text := string(data)
	if !strings.Contains(text, marker) {
		d.problem(check, fmt.Sprintf("%s has no loopx block: %s", path, missing), install+" (the hook there is kept and runs first)")
		return false
	}
	if st, err := os.Stat(path); err == nil && st.Mode()&0o111 == 0 {
		d.problem(check, path+" is not executable: git skips it", "chmod +x "+shellQuote(path))
		return true
	}
	exe := hookLoopx(text, marker)
	reinstall := fmt.Sprintf("remove loopx's block (the lines from %q to %q) from %s, then run `%s`", marker, end, path, install)
	if exe != "" && exe != "loopx" {
		if isExecutable(exe) {
			d.ok(check, fmt.Sprintf("installed (%s), runs %s", path, exe))
			return true
		}
		if found, err := d.o.LookPath("loopx"); err == nil {
			d.problem(check, fmt.Sprintf("%s runs %s, which does not exist: it falls back to loopx on PATH (%s)", path, exe, found), reinstall)
			return true
		}
		d.problem(check, fmt.Sprintf("%s runs %s, which does not exist, and no loopx is on PATH: the hook refuses every %s", path, exe, hookAction(name)), reinstall)
		return true
	}
	if found, err := d.o.LookPath("loopx"); err == nil {
		d.ok(check, fmt.Sprintf("installed (%s), runs loopx on PATH (%s)", path, found))
		return true
	}
	d.problem(check, fmt.Sprintf("%s runs loopx from PATH, and none is on PATH: the hook refuses every %s", path, hookAction(name)),
		"put loopx on PATH (where git runs the hook), or "+reinstall+" with the loopx to use")
	return true
}

// hookAction is what a hook that cannot run loopx refuses.
func hookAction(name string) string {
	switch name {
	case "pre-push":
		return "push"
	case "pre-receive":
		return "push to this server"
	}
	return "commit"
}

// hookLoopx is the loopx a hook's block runs: the value of its loopx_bin
// line ("loopx": the one on PATH; "" when there is none).
func hookLoopx(text, marker string) string {
	_, block, _ := strings.Cut(text, marker)
	for _, line := range strings.Split(block, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "loopx_bin="); ok {
			return shellUnquote(v)
		}
	}
	return ""
}

// shellUnquote reads a word as shellQuote writes it (in single quotes, a
// quote inside closed, escaped and reopened) or a bare word.
func shellUnquote(v string) string {
	if !strings.HasPrefix(v, "'") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		switch {
		case strings.HasPrefix(v[i:], `'\''`):
			b.WriteByte('\'')
			i += 4
		case v[i] == '\'':
			i++
		default:
			b.WriteByte(v[i])
			i++
		}
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// checkIdentity: the agent this clone acts as, and the goals it is
// registered in.
func (d *doc) checkIdentity() {
	agent, from := d.o.AgentID, "LOOPX_AGENT_ID"
	if agent == "" {
		v, err := d.s.Git().ConfigValue(audit.GuardAgentConfigKey)
		if err != nil {
			d.problem(CheckIdentity, fmt.Sprintf("git config %s cannot be read: %v", audit.GuardAgentConfigKey, err), "check git's configuration (`git config --list --show-origin`)")
			return
		}
		agent, from = strings.TrimSpace(v), "git config "+audit.GuardAgentConfigKey
	}
	if agent == "" {
		d.problem(CheckIdentity, "no agent identity: the hooks check commits as nobody's, and commands need --agent-id",
			"git config "+audit.GuardAgentConfigKey+" AGENT_ID (this clone), or export LOOPX_AGENT_ID=AGENT_ID")
		return
	}
	if err := lease.CheckAgentID("agent id", agent); err != nil {
		d.problem(CheckIdentity, fmt.Sprintf("%s is %q: %v", from, agent, err), "set it to a valid agent id ("+from+")")
		return
	}
	d.agent = agent
	if d.view == nil {
		d.ok(CheckIdentity, fmt.Sprintf("%s (%s); not registered anywhere yet: there is no store", agent, from))
		return
	}
	goals, err := d.view.Goals()
	if err != nil {
		d.problem(CheckIdentity, fmt.Sprintf("%s (%s): the goals cannot be read: %v", agent, from, err), "run `loopx verify` for what is wrong with the store")
		return
	}
	d.agents = map[string]*lease.Agent{}
	var in, active []string
	for _, g := range goals {
		a, err := d.view.Agent(g.ID, agent)
		if err != nil || a == nil {
			continue
		}
		d.agents[g.ID] = a
		if a.Registered() {
			in = append(in, g.ID)
		}
		if g.Status == lease.GoalActive {
			active = append(active, g.ID)
		}
	}
	if len(in) == 0 {
		fix := "loopx agent register --goal-id GOAL --agent-id " + agent
		if len(active) == 0 {
			for _, g := range goals {
				if g.Status == lease.GoalActive {
					active = append(active, g.ID)
				}
			}
		}
		if len(active) == 1 {
			fix = "loopx agent register --goal-id " + active[0] + " --agent-id " + agent
		}
		d.problem(CheckIdentity, fmt.Sprintf("%s (%s) is registered in no goal: its claims, leases and commits are refused", agent, from), fix)
		return
	}
	d.ok(CheckIdentity, fmt.Sprintf("%s (%s), registered in %s", agent, from, strings.Join(in, ", ")))
}

// checkSigning: the key a mutation of the agent would sign with, and
// whether it is the one registered for the agent (see the file comment).
func (d *doc) checkSigning() {
	required := d.meta != nil && d.meta.RequireSignatures
	registered := false
	for _, a := range d.agents {
		registered = registered || a.Registered()
	}
	if !registered {
		if required {
			d.problem(CheckSigning, "this store requires signed commits, and no registered agent is set up here to sign them", "set up the agent identity first (see agent_identity)")
		} else {
			d.ok(CheckSigning, "not checked: no registered agent identity (the store does not require signed commits)")
		}
		return
	}
	var keys []string
	for _, a := range d.agents {
		if a.Registered() && strings.TrimSpace(a.SigningKey) != "" && !containsKey(keys, a.SigningKey) {
			keys = append(keys, a.SigningKey)
		}
	}
	rotate := "loopx agent rotate-key --agent-id " + d.agent + " --signing-key " + shellQuote(d.publicKeyFile())
	if len(keys) > 0 {
		var last error
		for _, want := range keys {
			k, err := d.s.SigningKey(want)
			if err == nil {
				d.ok(CheckSigning, fmt.Sprintf("%s from %s, registered for %s", describe(k.PublicKey()), k.Source, d.agent))
				return
			}
			last = err
		}
		detail := fmt.Sprintf("%s's registered key (%s) is not at hand: %s", d.agent, fingerprints(keys), strings.TrimPrefix(last.Error(), "signing: "))
		if required {
			detail += "; this store requires signed commits, so its mutations are refused"
		} else {
			detail += "; its commits are not signed"
		}
		d.problem(CheckSigning, detail,
			"export LOOPX_SIGNING_KEY=PATH (the registered key's private file), or load it into the ssh-agent (ssh-add); a new key is registered with `"+rotate+"`")
		return
	}
	k, err := d.s.SigningKey("")
	switch {
	case errors.Is(err, signing.ErrNoKey):
		if required {
			d.problem(CheckSigning, fmt.Sprintf("%s has no registered key and none is configured; this store requires signed commits", d.agent),
				"make a key (ssh-keygen -t ed25519 -f ~/.ssh/loopx), register it with `loopx agent rotate-key --agent-id "+d.agent+" --signing-key ~/.ssh/loopx.pub` and export LOOPX_SIGNING_KEY=~/.ssh/loopx")
			return
		}
		d.ok(CheckSigning, "none: the store does not require signed commits, and "+d.agent+" has no registered key")
	case err != nil:
		detail := "the configured key cannot be used: " + strings.TrimPrefix(err.Error(), "signing: ")
		if required {
			d.problem(CheckSigning, detail+"; this store requires signed commits", "fix LOOPX_SIGNING_KEY (or git config user.signingKey), then register the key with `"+rotate+"`")
		} else if strings.TrimSpace(d.o.Store.SigningKey) != "" {
			d.problem(CheckSigning, detail, "fix LOOPX_SIGNING_KEY, or unset it")
		} else {
			d.ok(CheckSigning, "not used: "+d.agent+" has no registered key and the store does not require signed commits")
		}
	default:
		desc := fmt.Sprintf("%s from %s", describe(k.PublicKey()), k.Source)
		switch {
		case required:
			d.problem(CheckSigning, fmt.Sprintf("%s is not registered for %s: this store requires signed commits, so its mutations are refused", desc, d.agent), rotate)
		case strings.HasPrefix(k.Source, "LOOPX_SIGNING_KEY"):
			d.problem(CheckSigning, fmt.Sprintf("%s is not registered for %s: loopx signs with it, and nobody can check such a signature", desc, d.agent), rotate+" (or unset LOOPX_SIGNING_KEY)")
		default:
			d.ok(CheckSigning, fmt.Sprintf("%s is not registered for %s, and not used: the store does not require signed commits", desc, d.agent))
		}
	}
}

// publicKeyFile is the public key file of $LOOPX_SIGNING_KEY when there
// is one beside it (KEY.pub), else "KEY.pub", for the fixes to name.
func (d *doc) publicKeyFile() string {
	if k := strings.TrimSpace(d.o.Store.SigningKey); k != "" {
		if strings.HasSuffix(k, ".pub") {
			return k
		}
		if _, err := os.Stat(k + ".pub"); err == nil {
			return k + ".pub"
		}
	}
	return "KEY.pub"
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if strings.TrimSpace(x) == strings.TrimSpace(k) {
			return true
		}
	}
	return false
}

// describe is a public key for people: its type and SHA256 fingerprint.
func describe(k ssh.PublicKey) string {
	return k.Type() + " " + ssh.FingerprintSHA256(k)
}

func fingerprints(keys []string) string {
	return strings.Join(signing.Fingerprints(keys), ", ")
}

// checkRemote looks at the remote's head without keeping anything: that
// it is reachable with this clone's credentials, that it holds the store
// ref, and that it serves this clone's store. It returns the head and its
// date, for the clock (zero when unknown).
func (d *doc) checkRemote(ctx context.Context) (gitstore.Hash, time.Time) {
	name := d.s.Remote()
	if name == "" {
		d.ok(CheckRemote, "none: the store is local to this repository")
		return gitstore.ZeroHash, time.Time{}
	}
	if d.o.NoRemote {
		d.ok(CheckRemote, name+": not checked (--offline)")
		return gitstore.ZeroHash, time.Time{}
	}
	g := d.s.Git()
	if v, ok := d.gitVersion(); ok && !gitstore.VersionAtLeast(v, gitstore.MinWireGitVersion) {
		d.problem(CheckRemote, fmt.Sprintf("%s: git %s is older than %d.%d, which remote mode needs", name, v, gitstore.MinWireGitVersion[0], gitstore.MinWireGitVersion[1]),
			fmt.Sprintf("install git %d.%d or later", gitstore.MinWireGitVersion[0], gitstore.MinWireGitVersion[1]))
		return gitstore.ZeroHash, time.Time{}
	}
	url, _ := g.RemoteURL(name)
	where := name
	if url != "" && url != name {
		where = fmt.Sprintf("%s (%s)", name, url)
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	p, err := g.PeekRemote(ctx, name, lease.MetaPath)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "gitstore: ")
		if ctx.Err() != nil {
			d.problem(CheckRemote, fmt.Sprintf("%s did not answer within %s", where, d.o.Timeout),
				"check the network and the remote's URL (`git remote get-url "+name+"`), then run `loopx doctor` again (--timeout gives it longer)")
			return gitstore.ZeroHash, time.Time{}
		}
		// The sentinels' words end the message; the code says which.
		for _, sentinel := range []error{gitstore.ErrRemoteRejected, gitstore.ErrRemoteUnavailable, gitstore.ErrNoRemote} {
			msg = strings.TrimSuffix(msg, ": "+sentinel.Error())
		}
		msg = strings.TrimSuffix(msg, ": retry with the same arguments")
		fix := "check the remote's URL (`git remote get-url " + name + "`) and the credentials git uses for it: `git ls-remote " + name + "` must work"
		if le, ok := lease.AsError(storeerr.Map(err)); ok && le.Code == lease.CodeRemoteRejected {
			d.problem(CheckRemote, fmt.Sprintf("%s refused to list its refs: %s", where, msg), fix)
			return gitstore.ZeroHash, time.Time{}
		}
		d.problem(CheckRemote, fmt.Sprintf("%s cannot be reached: %s", where, msg), "check the network, and "+fix)
		return gitstore.ZeroHash, time.Time{}
	}
	if p.Head.IsZero() {
		d.problem(CheckRemote, fmt.Sprintf("%s is reachable but holds no %s", where, g.Ref()),
			"publish this clone's store there with `loopx init --remote "+name+"`")
		return gitstore.ZeroHash, time.Time{}
	}
	served := ""
	if p.File != nil {
		var m lease.StoreMeta
		if err := lease.Decode(p.File, &m); err == nil {
			served = m.StoreID
		}
	}
	local := ""
	if d.meta != nil {
		local = d.meta.StoreID
	}
	if served != "" && local != "" && served != local {
		d.problem(CheckRemote, fmt.Sprintf("%s serves another store (%s) than this clone's (%s)", where, served, local),
			"check the remote's URL and the registry; to work with the remote's store instead, run `loopx init --remote "+name+" --adopt` (this clone's history is kept under refs/loopx/backup/)")
		return p.Head, p.Time
	}
	store := "this clone's store, " + served
	if served == "" || local == "" {
		store = "a store without an id yet (older than format 3)"
	}
	d.ok(CheckRemote, fmt.Sprintf("%s answers: head %s, %s", where, p.Head.String()[:12], store))
	return p.Head, p.Time
}

// gitVersion is the version checkGit found.
func (d *doc) gitVersion() (string, bool) {
	for _, c := range d.r.Checks {
		if c.Name == CheckGit && c.OK {
			return c.Detail, true
		}
	}
	return "", false
}

// checkClock: neither the remote's head nor the local one is dated more
// than the store's skew bound ahead of this machine's clock.
func (d *doc) checkClock(remoteHead gitstore.Hash, remoteTime time.Time) {
	if d.view == nil {
		return
	}
	now := d.s.Now().UTC().Truncate(time.Second)
	bound := lease.MaxClockSkew(d.meta)
	type head struct {
		which string
		at    time.Time
	}
	heads := []head{{"the local head", d.view.HeadTime}}
	if !remoteHead.IsZero() && !remoteTime.IsZero() {
		heads = append([]head{{d.s.Remote() + "'s head", remoteTime}}, heads...)
	}
	var said []string
	for _, h := range heads {
		ahead := h.at.Sub(now)
		if ahead > bound {
			d.problem(CheckClock, fmt.Sprintf("%s is dated %s, %s ahead of this machine's clock (%s; at most %s allowed): mutations are refused",
				h.which, h.at.UTC().Format(time.RFC3339), ahead.Round(time.Second), now.Format(time.RFC3339), bound),
				"set this machine's clock right (NTP); if the head is the one in the future, see `loopx clock-reset --help`")
			return
		}
		said = append(said, fmt.Sprintf("%s dated %s", h.which, h.at.UTC().Format(time.RFC3339)))
	}
	d.ok(CheckClock, fmt.Sprintf("no head is dated more than %s ahead of this machine's clock (%s): %s", bound, now.Format(time.RFC3339), strings.Join(said, ", ")))
}
