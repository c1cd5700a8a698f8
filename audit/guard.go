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
	"context"
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
}

// GuardInstallData is the result of guard install.
type GuardInstallData struct {
	Hook    string `json:"hook"`
	Kind    string `json:"kind"` // pre-commit or pre-push
	Changed bool   `json:"changed"`
	Loopx   string `json:"loopx"`
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
	return loopx.Read(a.s, "guard.check", func(v *lease.View, now time.Time) (GuardData, error) {
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
	})
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
)

// GuardInstall installs the pre-commit hook that runs `loopx guard check
// --staged`, chained after any existing hook (never overwriting it). exe is
// the absolute path of the loopx executable the hook should prefer ("":
// `loopx` on PATH only).
func (a *Auditor) GuardInstall(exe string) (*loopx.Result[GuardInstallData], error) {
	return a.GuardInstallHook(GuardHookPreCommit, exe)
}

// GuardInstallHook installs one of loopx's hooks: the pre-commit hook
// (`loopx guard check --staged`) or the pre-push hook (`loopx guard check
// --pre-push`, which checks every pushed commit), chained after any
// existing hook of that name (never overwriting it).
func (a *Auditor) GuardInstallHook(hook, exe string) (*loopx.Result[GuardInstallData], error) {
	if hook != GuardHookPreCommit && hook != GuardHookPrePush {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "hook %q: want %s or %s", hook, GuardHookPreCommit, GuardHookPrePush)
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
	if hook == GuardHookPrePush {
		about = "# Installed by `loopx guard install --pre-push`: refuses the push when a pushed\n" +
			"# commit changed a path inside the write scope of another agent's task lease\n" +
			"# that was effective when the commit was made. The agent is the commit's\n" +
			"# Loopx-Agent trailer, else $LOOPX_AGENT_ID or `git config loopx.agent`, else\n" +
			"# the author e-mail's local part when it is a registered agent. The refs being\n" +
			"# pushed come on stdin. Delete this block to uninstall.\n"
		skip = "git push --no-verify"
		check = "guard check --pre-push"
	}
	return GuardHookMarker + "\n" + about + find +
		"if ! command -v \"$loopx_bin\" >/dev/null 2>&1; then\n" +
		"\techo 'loopx guard: loopx is not on PATH: install it, or skip the check with " + skip + "' >&2\n" +
		"\texit 1\n" +
		"fi\n" +
		"\"$loopx_bin\" " + check + " --format text --repo \"$(git rev-parse --show-toplevel)\" >/dev/null || exit $?\n" +
		"# <<< loopx guard <<<\n"
}

// ---- The push-time guard: guard check --range and the pre-push hook ----
//
// Decisions (where the contract is silent; see also lease/guard.go for who
// the committing agent is):
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
//   - Each commit is judged at its committer time (an amend and a rebase
//     set it anew, so what was rewritten is judged when it was rewritten),
//     against the state that was current then: the newest commit of the
//     state ref's first-parent history whose committer time is not after
//     it. Leases effective at that time in that state count (so a commit
//     made before a lease was acquired, or after it ended, passes). The
//     history is walked once, newest first, for the whole range, and no
//     further back than the range's oldest commit. A commit older than the
//     store passes. In remote mode the state is the server's (fetched).
//   - The paths a commit changed are those gitstore.ChangedPaths reports
//     (a merge: only what it changed relative to every parent).
//   - A repository without a store passes with a note, as guard check does.

// GuardRangeRequest is one push-time check: either Range ("A..B") or the
// pre-push hook's Updates.
type GuardRangeRequest struct {
	// Agent is the configured agent (--agent-id, $LOOPX_AGENT_ID); "" reads
	// `git config loopx.agent`. A commit's Loopx-Agent trailer comes first.
	Agent   string
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
	AgentID    string                 `json:"agent_id"`
	Range      string                 `json:"range,omitempty"`
	Updates    []PushUpdate           `json:"updates,omitempty"`
	Commits    []GuardCommit          `json:"commits"`
	Violations []GuardCommitViolation `json:"violations"`
	Allowed    bool                   `json:"allowed"`
	Note       string                 `json:"note,omitempty"`
}

// GuardCommit is how one commit was judged.
type GuardCommit struct {
	Commit string    `json:"commit" yaml:"commit"`
	Time   time.Time `json:"time" yaml:"time"`
	// AgentID is who the commit was attributed to ("" nobody); AgentFrom
	// says how: trailer, agent_id, git_config, author_email, none.
	AgentID   string `json:"agent_id" yaml:"agent_id"`
	AgentFrom string `json:"agent_from" yaml:"agent_from"`
	// StateRevision is the state commit the commit was judged against (""
	// when it is older than the store).
	StateRevision string `json:"state_revision" yaml:"state_revision"`
	Paths         int    `json:"paths" yaml:"paths"`
	Allowed       bool   `json:"allowed" yaml:"allowed"`
}

// GuardCommitViolation is one refused path of one commit.
type GuardCommitViolation struct {
	Commit               string `json:"commit" yaml:"commit"`
	AgentID              string `json:"agent_id" yaml:"agent_id"`
	lease.GuardViolation `yaml:",inline"`
}

// Sources of the configured agent (GuardCommit.AgentFrom).
const (
	agentFromFlag      = "agent_id"
	agentFromGitConfig = "git_config"
)

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

// GuardRange checks every commit of a range (or of a push) against the
// leases in force when it was made, as the agent that made it, and refuses
// (write_scope_conflict, naming each commit, path, owner and scope) when a
// commit changed a path inside a write scope of another agent's lease that
// was effective then.
func (a *Auditor) GuardRange(req GuardRangeRequest) (*loopx.Result[GuardRangeData], error) {
	if (req.Range != "") == req.PrePush {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "give either a range (A..B) or the pre-push lines, not both or neither")
	}
	agent, agentFrom := req.Agent, agentFromFlag
	if agent == "" {
		v, err := a.git.ConfigValue(GuardAgentConfigKey)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		if v != "" && !lease.ValidAgentID(v) {
			return nil, lease.Errorf(lease.CodeInvalidAgentID, "git config %s %q is not a valid agent id", GuardAgentConfigKey, v)
		}
		agent, agentFrom = v, agentFromGitConfig
	} else if err := lease.CheckAgentID("agent id", agent); err != nil {
		return nil, err
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
	head, err := a.repo.Head(context.Background())
	if err != nil {
		return nil, storeerr.Map(err)
	}
	data := &GuardRangeData{AgentID: agent, Range: req.Range, Updates: req.Updates,
		Commits: []GuardCommit{}, Violations: []GuardCommitViolation{}, Allowed: true}
	env := loopx.Envelope{Operation: "guard.check", CurrentRevision: records.Rev(head)}
	if len(commits) == 0 {
		data.Note = "no commits to check"
		return loopx.NewResult(a.s, env, time.Time{}, *data), nil
	}
	headSn, err := a.git.Snapshot(head)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if _, err := lease.RequireStore(a.derived.View(headSn)); err != nil {
		if e, ok := lease.AsError(err); ok && e.Code == lease.CodeStoreNotInitialized {
			data.Note = "no loopx store in this repository: nothing to check"
			return loopx.NewResult(a.s, env, time.Time{}, *data), nil
		}
		return nil, storeerr.Map(err)
	}
	facts := make([]*gitstore.CommitFacts, len(commits))
	times := make([]time.Time, len(commits))
	for i, h := range commits {
		if facts[i], err = a.git.ReadCommitFacts(h); err != nil {
			return nil, storeerr.Map(err)
		}
		times[i] = facts[i].CommitterTime
	}
	states, err := statesAt(a.git, head, times)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	views := map[gitstore.Hash]*guardState{}
	leaseDirs := map[gitstore.Hash][]*lease.Lease{} // by the lease folder's tree
	for i, f := range facts {
		gc := GuardCommit{Commit: f.Hash.String(), Time: f.CommitterTime.UTC(), Allowed: true}
		var st *guardState
		if !states[i].IsZero() {
			if st = views[states[i]]; st == nil {
				if st, err = a.guardStateAt(states[i], leaseDirs); err != nil {
					return nil, err
				}
				views[states[i]] = st
			}
			gc.StateRevision = states[i].String()
		}
		var v *lease.View
		if st != nil {
			v = st.view
		}
		var aerr error
		gc.AgentID, gc.AgentFrom, aerr = lease.CommitAgent(v, f.Message, f.AuthorEmail, agent, agentFrom)
		if aerr != nil {
			if e, ok := lease.AsError(aerr); ok && e.Code == lease.CodeInvalidAgentID {
				return nil, lease.Errorf(e.Code, "commit %s: %s", shortRev(f.Hash), e.Message).With("commit", f.Hash.String())
			}
			return nil, storeerr.Map(aerr)
		}
		paths, err := a.git.ChangedPaths(f.Hash)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		gc.Paths = len(paths)
		if st != nil && len(st.goals) > 0 {
			vs, err := lease.GuardCheckLeases(st.view, st.goals, st.leases, gc.AgentID, paths, f.CommitterTime)
			if err != nil {
				return nil, storeerr.Map(err)
			}
			for _, x := range vs {
				data.Violations = append(data.Violations, GuardCommitViolation{Commit: gc.Commit, AgentID: gc.AgentID, GuardViolation: x})
			}
			gc.Allowed = len(vs) == 0
		}
		data.Commits = append(data.Commits, gc)
	}
	if len(data.Violations) > 0 {
		return nil, guardRangeError(data)
	}
	return loopx.NewResult(a.s, env, time.Time{}, *data), nil
}

// guardState is the state one or more commits are judged against.
type guardState struct {
	view   *lease.View // nil: not a store at that commit
	goals  []string    // the goals holding any lease record
	leases func(goal string) ([]*lease.Lease, error)
}

// guardStateAt opens the state at rev. The lease records of a goal are
// decoded once per distinct lease folder (leaseDirs, by its tree's name):
// state commits that did not touch a goal's leases share them.
func (a *Auditor) guardStateAt(rev gitstore.Hash, leaseDirs map[gitstore.Hash][]*lease.Lease) (*guardState, error) {
	sn, err := a.git.Snapshot(rev)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	v := a.derived.View(sn)
	leases := func(goal string) ([]*lease.Lease, error) {
		h, err := sn.DirHash(lease.LeasesDir(goal))
		if err != nil || h.IsZero() {
			return v.Leases(goal)
		}
		if ls, ok := leaseDirs[h]; ok {
			return ls, nil
		}
		ls, err := v.Leases(goal)
		if err == nil {
			leaseDirs[h] = ls
		}
		return ls, err
	}
	if _, err := lease.RequireStore(v); err != nil {
		if e, ok := lease.AsError(err); ok && e.Code == lease.CodeStoreNotInitialized {
			return &guardState{}, nil
		}
		return nil, storeerr.Map(err)
	}
	goals, err := lease.GuardGoals(v)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	return &guardState{view: v, goals: goals, leases: leases}, nil
}

// historyWalker is the part of gitstore.Store that statesAt needs.
type historyWalker interface {
	FirstParentTimes(from gitstore.Hash, fn func(h gitstore.Hash, committed time.Time) (bool, error)) error
}

// statesAt returns, for each time, the first commit of head's first-parent
// history (walked newest first) whose committer time is not after it:
// the state in force at that time (ZeroHash: none, older than the store).
// The history is walked once, and only as far back as the oldest time.
func statesAt(w historyWalker, head gitstore.Hash, times []time.Time) ([]gitstore.Hash, error) {
	out := make([]gitstore.Hash, len(times))
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	// Newest time first: each state commit of the walk takes the pending
	// times at or after its own, a prefix of the pending ones.
	slices.SortStableFunc(order, func(a, b int) int { return times[b].Compare(times[a]) })
	next := 0
	if len(order) == 0 || head.IsZero() {
		return out, nil
	}
	err := w.FirstParentTimes(head, func(h gitstore.Hash, committed time.Time) (bool, error) {
		for next < len(order) && !times[order[next]].Before(committed) {
			out[order[next]] = h
			next++
		}
		return next < len(order), nil
	})
	return out, err
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

// guardRangeError is the refusal of a range: the message names the first
// refused commit, its path, the lease's owner and scope; the details list
// every violation, the refused commits (refused_commits: their names;
// refused: how each was judged) and each lease once.
func guardRangeError(d *GuardRangeData) *lease.Error {
	f := d.Violations[0]
	who := f.AgentID
	if who == "" {
		who = "an unidentified agent (no Loopx-Agent trailer, --agent-id, LOOPX_AGENT_ID, git config loopx.agent, or registered author e-mail)"
	}
	msg := fmt.Sprintf("commit %s by %s: %s is inside %s held by %s on %s (goal %s) when it was made",
		f.Commit[:12], who, f.Path, f.Scope, f.Owner, f.TodoID, f.Goal)
	var refused []string
	vs := make([]lease.GuardViolation, len(d.Violations))
	for i, v := range d.Violations {
		if !slices.Contains(refused, v.Commit) {
			refused = append(refused, v.Commit)
		}
		vs[i] = v.GuardViolation
	}
	if n := len(d.Violations) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more in %d refused commit(s), see violations)", n, len(refused))
	}
	var refusedCommits []GuardCommit
	for _, c := range d.Commits {
		if !c.Allowed {
			refusedCommits = append(refusedCommits, c)
		}
	}
	return lease.Errorf(lease.CodeWriteScopeConflict, "%s", msg).
		With("violations", d.Violations).With("refused_commits", refused).With("conflicts", conflictsOf(vs)).
		With("commits_checked", len(d.Commits)).With("refused", refusedCommits)
}
