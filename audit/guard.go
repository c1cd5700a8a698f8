package audit

// loopx guard: write scopes enforced where agents write, at commit time.
//
// Decisions (where the contract is silent):
//   - The acting agent is, in order: the agent passed in (the command line
//     passes --agent-id, else $LOOPX_AGENT_ID; this package reads no
//     environment), else `git config loopx.agent`. With none, the check
//     still runs and every effective lease counts as another agent's: a
//     commit by an unidentified agent is refused inside any leased scope.
//   - Explicit paths are repository paths relative to the top of the
//     working tree (absolute paths inside it are accepted); they are cleaned,
//     and a path leaving the repository is invalid_request. --staged takes the
//     index entries that differ from HEAD (the index a hook is handed).
//   - A repository whose store was never created (no state ref, or a ref
//     without the store record) passes with a note: a hook must not break
//     commits in such a repository. A newer store format or a corrupt record
//     fails closed, like every other read.
//   - Fast path: when no goal has a lease record, the answer is "allowed"
//     after listing folders only; the index is not read (paths: 0) and no
//     record is decoded.
//   - Every goal is checked (see lease/guard.go); --goal-id does not narrow
//     it, since a working tree is shared by all goals.
//   - The check is an ordinary read (loopx.Read): in remote mode it decides
//     on the server's head, fetched first, so a lease taken on another
//     machine blocks; an unreachable server is remote_unavailable (exit 3)
//     and the hook refuses the commit (retry, or git commit --no-verify).
//   - The installed pre-commit hook calls the loopx that installed it by
//     absolute path when the command line recorded one and it still exists,
//     else `loopx` on PATH; when neither is found the commit is refused with
//     a message (the guard fails closed; `git commit --no-verify` skips it).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// GuardAgentConfigKey is the git configuration key naming the acting agent.
const GuardAgentConfigKey = "loopx.agent"

// GuardHookMarker is the line that identifies loopx's block in a hook.
const GuardHookMarker = "# >>> loopx guard >>>"

// GuardData is the result of guard check.
type GuardData struct {
	AgentID    string                 `json:"agent_id"`
	Paths      int                    `json:"paths"`
	Violations []lease.GuardViolation `json:"violations"`
	Allowed    bool                   `json:"allowed"`
	Note       string                 `json:"note,omitempty"`
	// Stale says the check decided on the last state fetched from a server
	// it could not reach.
	Stale *StaleState `json:"stale,omitempty"`
}

// GuardInstallData is the result of guard install.
type GuardInstallData struct {
	Hook    string `json:"hook"`
	Kind    string `json:"kind"` // pre-commit, pre-push or commit-msg
	Changed bool   `json:"changed"`
	Loopx   string `json:"loopx"`
	// CommitMsg is the commit-msg hook installed with the pre-commit one.
	CommitMsg *GuardInstallData `json:"commit_msg,omitempty"`
}

// GuardCheck refuses (write_scope_conflict) when one of the paths, or with
// staged the paths staged for the next commit, falls inside a write scope of
// another agent's effective task lease. agent may be "" (see the file
// comment for the fallback).
func (a *Auditor) GuardCheck(agent string, staged bool, paths []string) (*loopx.Result[GuardData], error) {
	if staged == (len(paths) > 0) {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "give either --staged or the paths to check, not both or neither")
	}
	var clean []string
	if !staged {
		var err error
		if clean, err = a.cleanRepoPaths(paths); err != nil {
			return nil, err
		}
	}
	if agent == "" {
		v, err := a.git.ConfigValue(GuardAgentConfigKey)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		if v != "" && !lease.ValidAgentID(v) {
			return nil, lease.Errorf(lease.CodeInvalidAgentID, "git config %s %q is not a valid agent id", GuardAgentConfigKey, v)
		}
		agent = v
	} else if err := lease.CheckAgentID("agent id", agent); err != nil {
		return nil, err
	}
	head, stale, err := a.stateHead()
	if err != nil {
		return nil, err
	}
	sn, err := a.repo.Snapshot(head)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	v := a.derived.View(sn)
	now := lease.Now(a.s.Now(), sn.Time())
	data, err := a.guardStaged(v, agent, staged, clean, now)
	if err != nil {
		e, ok := lease.AsError(err)
		if ok && stale != nil {
			e.With("stale", stale)
		}
		return nil, storeerr.Map(err)
	}
	data.Stale = stale
	return loopx.NewResult(a.s, loopx.Envelope{Operation: "guard.check", CurrentRevision: records.Rev(head)}, now, data), nil
}

// guardStaged decides guard check on view v at now.
func (a *Auditor) guardStaged(v *lease.View, agent string, staged bool, clean []string, now time.Time) (GuardData, error) {
	data := GuardData{AgentID: agent, Violations: []lease.GuardViolation{}, Allowed: true}
	if _, err := lease.RequireStore(v); err != nil {
		if e, ok := lease.AsError(err); ok && e.Code == lease.CodeStoreNotInitialized {
			data.Note = "no loopx store in this repository: nothing to check"
			return data, nil
		}
		return GuardData{}, err
	}
	goals, err := lease.GuardGoals(v)
	if err != nil {
		return GuardData{}, err
	}
	if len(goals) == 0 {
		data.Paths = len(clean)
		data.Note = "no task leases: nothing to check"
		return data, nil
	}
	if staged {
		if clean, err = a.git.StagedPaths(); err != nil {
			if errors.Is(err, gitstore.ErrNoWorkTree) {
				return GuardData{}, lease.Errorf(lease.CodeInvalidRequest, "--staged needs a working tree; this repository is bare")
			}
			return GuardData{}, err
		}
	}
	data.Paths = len(clean)
	vs, err := lease.GuardCheck(v, goals, agent, clean, now)
	if err != nil {
		return GuardData{}, err
	}
	if len(vs) > 0 {
		return GuardData{}, guardError(agent, vs)
	}
	return data, nil
}

// guardConflict is one entry of the conflicts detail (lease.ScopeConflict's
// JSON, with names for the text output's YAML too).
type guardConflict struct {
	TodoID string `json:"todo_id" yaml:"todo_id"`
	Owner  string `json:"owner" yaml:"owner"`
	Scope  string `json:"scope" yaml:"scope"`
}

// guardError builds the write_scope_conflict refusal: the message names the
// first path, scope, owner, todo and expiry; conflicts lists each lease once.
func guardError(agent string, vs []lease.GuardViolation) *lease.Error {
	f := vs[0]
	msg := fmt.Sprintf("%s is inside %s held by %s on %s (goal %s) until %s",
		f.Path, f.Scope, f.Owner, f.TodoID, f.Goal, f.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z07:00"))
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more, see violations)", len(vs)-1)
	}
	if agent == "" {
		msg += "; no agent id is set (--agent-id, LOOPX_AGENT_ID or git config loopx.agent), so every lease is another agent's"
	} else {
		msg += "; checked as " + agent
	}
	return lease.Errorf(lease.CodeWriteScopeConflict, "%s", msg).
		With("conflicts", conflictsOf(vs)).With("violations", vs).With("agent_id", agent)
}

// conflictsOf lists each lease the violations meet once, by todo and scope.
func conflictsOf(vs []lease.GuardViolation) []guardConflict {
	var conflicts []guardConflict
	for _, v := range vs {
		c := guardConflict{TodoID: v.TodoID, Owner: v.Owner, Scope: v.Scope}
		if !slices.Contains(conflicts, c) {
			conflicts = append(conflicts, c)
		}
	}
	slices.SortFunc(conflicts, func(a, b guardConflict) int {
		if c := strings.Compare(a.TodoID, b.TodoID); c != 0 {
			return c
		}
		return strings.Compare(a.Scope, b.Scope)
	})
	return conflicts
}

// cleanRepoPaths turns command-line paths into sorted, unique repository
// paths relative to the top of the working tree.
func (a *Auditor) cleanRepoPaths(paths []string) ([]string, error) {
	top := a.git.WorkDir()
	var out []string
	for _, p := range paths {
		if p == "" || strings.ContainsRune(p, 0) {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "path %q is not a repository path", p)
		}
		c := filepath.Clean(p)
		if filepath.IsAbs(c) {
			rel, ok := relInside(top, c)
			if !ok {
				return nil, lease.Errorf(lease.CodeInvalidRequest, "path %s is outside the repository", p)
			}
			c = rel
		}
		c = filepath.ToSlash(c)
		if c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "path %s is outside the repository (paths are relative to its top)", p)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// relInside returns abs relative to top when it lies inside it (symbolic
// links in top resolved, as a shell's pwd may differ from git's).
func relInside(top, abs string) (string, bool) {
	if top == "" {
		return "", false
	}
	tops := []string{top}
	if r, err := filepath.EvalSymlinks(top); err == nil && r != top {
		tops = append(tops, r)
	}
	for _, t := range tops {
		if rel, err := filepath.Rel(t, abs); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel, true
		}
	}
	return "", false
}

// Hooks guard install can install.
const (
	GuardHookPreCommit = "pre-commit"
	GuardHookPrePush   = "pre-push"
	GuardHookCommitMsg = "commit-msg"
)

// GuardInstall installs the pre-commit hook that runs `loopx guard check
// --staged` and the commit-msg hook that runs `loopx guard commit-msg`
// (the trailers of the code fence: commitmsg.go), each chained after any
// existing hook (never overwriting it). exe is the absolute path of the
// loopx executable the hooks should prefer ("": `loopx` on PATH only).
func (a *Auditor) GuardInstall(exe string) (*loopx.Result[GuardInstallData], error) {
	res, err := a.GuardInstallHook(GuardHookPreCommit, exe)
	if err != nil {
		return nil, err
	}
	msg, err := a.GuardInstallHook(GuardHookCommitMsg, exe)
	if err != nil {
		return nil, err
	}
	res.Data.CommitMsg = &msg.Data
	return res, nil
}

// GuardInstallHook installs one of loopx's hooks: the pre-commit hook
// (`loopx guard check --staged`) or the pre-push hook (`loopx guard check
// --pre-push`, which checks every pushed commit), chained after any
// existing hook of that name (never overwriting it).
func (a *Auditor) GuardInstallHook(hook, exe string) (*loopx.Result[GuardInstallData], error) {
	if hook != GuardHookPreCommit && hook != GuardHookPrePush && hook != GuardHookCommitMsg {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "hook %q: want %s, %s or %s", hook, GuardHookPreCommit, GuardHookPrePush, GuardHookCommitMsg)
	}
	changed, path, err := a.git.InstallHook(hook, GuardHookMarker, guardSnippet(hook, exe))
	if err != nil {
		if errors.Is(err, gitstore.ErrNoWorkTree) {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "a bare repository has no commits to guard: run this in a working tree")
		}
		return nil, storeerr.Map(err)
	}
	head, err := a.git.Head()
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if exe == "" {
		exe = "loopx"
	}
	return loopx.NewResult(a.s, loopx.Envelope{Operation: "guard.install", CurrentRevision: records.Rev(head)}, time.Time{},
		GuardInstallData{Hook: path, Kind: hook, Changed: changed, Loopx: exe}), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// guardSnippet is loopx's block in the pre-commit or pre-push hook.
func guardSnippet(hook, exe string) string {
	find := "loopx_bin=loopx\n"
	if exe != "" {
		find = "loopx_bin=" + shellQuote(exe) + "\n" +
			"[ -x \"$loopx_bin\" ] || loopx_bin=loopx\n"
	}
	about := "# Installed by `loopx guard install`: refuses the commit when a staged path is\n" +
		"# inside the write scope of another agent's effective task lease. The agent is\n" +
		"# $LOOPX_AGENT_ID or `git config loopx.agent`. Delete this block to uninstall.\n"
	skip := "git commit --no-verify"
	check := "guard check --staged"
	switch hook {
	case GuardHookPrePush:
		about = "# Installed by `loopx guard install --pre-push`: refuses the push when a pushed\n" +
			"# commit does not pass the code fence the server hook applies: a path inside\n" +
			"# another agent's effective write scope, a Loopx-Lease whose todo has since\n" +
			"# been held by another agent, or (a store that requires signatures) an\n" +
			"# unsigned commit into a leased scope. The agent of a commit is its\n" +
			"# Loopx-Agent trailer. The refs being pushed come on stdin. Delete this block\n" +
			"# to uninstall.\n"
		skip = "git push --no-verify"
		check = "guard check --pre-push"
	case GuardHookCommitMsg:
		about = "# Installed by `loopx guard install`: adds to the commit message the trailers\n" +
			"# the code fence judges it by: Loopx-Agent (inside `loopx run` its owner, else\n" +
			"# $LOOPX_AGENT_ID or `git config loopx.agent`) and one Loopx-Lease GOAL/TODO@EPOCH\n" +
			"# per effective lease of that agent covering a changed path. Delete this block\n" +
			"# to uninstall.\n"
		return GuardHookMarker + "\n" + about + find +
			"if ! command -v \"$loopx_bin\" >/dev/null 2>&1; then\n" +
			"\techo 'loopx guard: loopx is not on PATH: install it, or skip the hook with " + skip + "' >&2\n" +
			"\texit 1\n" +
			"fi\n" +
			"\"$loopx_bin\" guard commit-msg \"$1\" --format text --repo \"$PWD\" >/dev/null || exit $?\n" +
			"# <<< loopx guard <<<\n"
	}
	return GuardHookMarker + "\n" + about + find +
		"if ! command -v \"$loopx_bin\" >/dev/null 2>&1; then\n" +
		"\techo 'loopx guard: loopx is not on PATH: install it, or skip the check with " + skip + "' >&2\n" +
		"\texit 1\n" +
		"fi\n" +
		"\"$loopx_bin\" " + check + " --format text --repo \"$PWD\" >/dev/null || exit $?\n" +
		"# <<< loopx guard <<<\n"
}

// ---- The push-time guard: guard check --range and the pre-push hook ----
//
// Decisions (where the contract is silent; the judgement itself is the
// code fence's, fence.go and lease/codefence.go):
//   - A range is git's A..B: the commits reachable from B and not from A
//     (merges included), each revision resolved by git (branches, tags,
//     origin/main, HEAD~3, hashes). A...B and a lone revision are refused
//     (invalid_request): a lone B would mean all of history.
//   - In the pre-push hook (--pre-push, the update lines git writes on the
//     hook's stdin), each pushed ref is checked on remote-sha..local-sha.
//     A new branch (zero remote sha), and a remote sha this repository does
//     not have, are checked on the commits not on any remote-tracking ref
//     (`--not --remotes`). A deletion (zero local sha) checks nothing, and
//     neither do pushes of the state ref or other refs/loopx/ refs: their
//     commits are state, not work (`loopx verify` and the server hook judge
//     those).
//   - Every commit is judged on the store's current state (in remote mode
//     the server's head, fetched), as the server hook will judge it when it
//     lands, never at its own committer time and never as anybody but the
//     agent its Loopx-Agent trailer names: so the client, CI and the
//     server give the same verdict. (Before the code fence, each commit was
//     judged at its committer time, as the agent its author e-mail or this
//     clone's configuration named: both are written by the client.)
//   - When the server cannot be reached (remote_unavailable), the check
//     decides on the last state fetched from it, and says so (stale, with
//     its age): a push that the server would refuse is refused here too
//     when the leases known then say so; the server decides for good.
//   - A repository without a store passes with a note, as guard check does.

// GuardRangeRequest is one push-time check: either Range ("A..B") or the
// pre-push hook's Updates.
type GuardRangeRequest struct {
	Range   string
	PrePush bool
	Updates []PushUpdate
}

// PushUpdate is one line of a pre-push hook's stdin.
type PushUpdate struct {
	LocalRef  string `json:"local_ref"`
	LocalSHA  string `json:"local_sha"`
	RemoteRef string `json:"remote_ref"`
	RemoteSHA string `json:"remote_sha"`
}

// GuardRangeData is the result of guard check --range / --pre-push.
type GuardRangeData struct {
	Range   string       `json:"range,omitempty"`
	Updates []PushUpdate `json:"updates,omitempty"`
	// StateRevision is the state the commits were judged on; Stale says
	// it is the last one fetched from an unreachable server.
	StateRevision string              `json:"state_revision"`
	Stale         *StaleState         `json:"stale,omitempty"`
	Commits       []FenceCommit       `json:"commits"`
	Refused       []lease.CodeRefusal `json:"refused"`
	Allowed       bool                `json:"allowed"`
	Note          string              `json:"note,omitempty"`
}

// zeroSHA is what a pre-push line says for a missing side.
const zeroSHA = "0000000000000000000000000000000000000000"

// ParsePushUpdates reads the lines git writes on a pre-push hook's stdin:
// "<local ref> <local sha> <remote ref> <remote sha>". Blank lines are
// skipped; anything else is invalid_request.
func ParsePushUpdates(r io.Reader) ([]PushUpdate, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var out []PushUpdate
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || !isSHA(f[1]) || !isSHA(f[3]) {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "pre-push line %d %q: want \"<local ref> <local sha> <remote ref> <remote sha>\"", n, truncateText(line, 120))
		}
		out = append(out, PushUpdate{LocalRef: f[0], LocalSHA: f[1], RemoteRef: f[2], RemoteSHA: f[3]})
	}
	if err := sc.Err(); err != nil {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "reading the pre-push lines: %v", err)
	}
	return out, nil
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// GuardRange judges every commit of a range (or of a push) with the code
// fence on the store's current state, and refuses the first refusal's code
// (write_scope_conflict, stale_epoch, signature_required,
// signature_invalid) with one line per refusal.
func (a *Auditor) GuardRange(req GuardRangeRequest) (*loopx.Result[GuardRangeData], error) {
	if (req.Range != "") == req.PrePush {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "give either a range (A..B) or the pre-push lines, not both or neither")
	}
	var commits []gitstore.Hash
	var err error
	if req.PrePush {
		commits, err = a.pushedCommits(req.Updates)
	} else {
		commits, err = a.rangeCommits(req.Range)
	}
	if err != nil {
		return nil, err
	}
	head, stale, err := a.stateHead()
	if err != nil {
		return nil, err
	}
	data := &GuardRangeData{Range: req.Range, Updates: req.Updates, StateRevision: records.Rev(head), Stale: stale,
		Commits: []FenceCommit{}, Refused: []lease.CodeRefusal{}, Allowed: true}
	env := loopx.Envelope{Operation: "guard.check", CurrentRevision: records.Rev(head)}
	if len(commits) == 0 {
		data.Note = "no commits to check"
		return loopx.NewResult(a.s, env, time.Time{}, *data), nil
	}
	sn, err := a.git.Snapshot(head)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if _, err := lease.RequireStore(a.derived.View(sn)); err != nil {
		if e, ok := lease.AsError(err); ok && e.Code == lease.CodeStoreNotInitialized {
			data.Note = "no loopx store in this repository: nothing to check"
			return loopx.NewResult(a.s, env, time.Time{}, *data), nil
		}
		return nil, storeerr.Map(err)
	}
	res, err := a.fence(sn, commits, lease.Now(a.s.Now(), sn.Time()))
	if err != nil {
		return nil, storeerr.Map(err)
	}
	data.Commits, data.Refused = res.commits, res.refused
	data.Allowed = len(res.refused) == 0
	if !data.Allowed {
		where := "the push"
		if req.Range != "" {
			where = "range " + req.Range
		}
		e := fenceError(res.refused, where).With("commits_checked", len(res.commits)).With("commits", res.commits).With("state_revision", data.StateRevision)
		if stale != nil {
			e.With("stale", stale)
		}
		return nil, e
	}
	return loopx.NewResult(a.s, env, time.Time{}, *data), nil
}

func shortRev(h gitstore.Hash) string { return h.String()[:12] }

// rangeCommits resolves "A..B" into the commits of B not reachable from A.
func (a *Auditor) rangeCommits(r string) ([]gitstore.Hash, error) {
	lo, hi, ok := strings.Cut(r, "..")
	if !ok || lo == "" || hi == "" || strings.HasPrefix(hi, ".") || strings.Contains(hi, "..") {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "range %q: want A..B (the commits reachable from B and not from A)", r)
	}
	from, err := a.resolveRev(lo)
	if err != nil {
		return nil, err
	}
	to, err := a.resolveRev(hi)
	if err != nil {
		return nil, err
	}
	hs, err := a.git.RevList([]gitstore.Hash{to}, []gitstore.Hash{from}, false)
	return hs, storeerr.Map(err)
}

func (a *Auditor) resolveRev(rev string) (gitstore.Hash, error) {
	h, err := a.git.ResolveCommit(rev)
	if errors.Is(err, gitstore.ErrUnknownRevision) {
		return h, lease.Errorf(lease.CodeInvalidRequest, "%q names no commit in this repository", rev).With("revision", rev)
	}
	return h, storeerr.Map(err)
}

// pushedCommits lists the commits a push sends (see the decisions above),
// each once, in the order of the updates.
func (a *Auditor) pushedCommits(ups []PushUpdate) ([]gitstore.Hash, error) {
	seen := map[gitstore.Hash]bool{}
	var out []gitstore.Hash
	for _, u := range ups {
		if u.LocalSHA == zeroSHA || u.LocalRef == a.git.Ref() || strings.HasPrefix(u.LocalRef, "refs/loopx/") {
			continue
		}
		local, err := a.resolveRev(u.LocalSHA)
		if err != nil {
			return nil, err
		}
		var exclude []gitstore.Hash
		notRemotes := true
		if u.RemoteSHA != zeroSHA {
			if remote, err := a.git.ResolveCommit(u.RemoteSHA); err == nil {
				exclude, notRemotes = []gitstore.Hash{remote}, false
			} else if !errors.Is(err, gitstore.ErrUnknownRevision) {
				return nil, storeerr.Map(err)
			}
		}
		hs, err := a.git.RevList([]gitstore.Hash{local}, exclude, notRemotes)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out, nil
}
