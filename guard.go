package loopx

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
//   - The check is an ordinary read (Store.read): in remote mode it decides
//     on the server's head, fetched first, so a lease taken on another
//     machine blocks; an unreachable server is remote_unavailable (exit 3)
//     and the hook refuses the commit (retry, or git commit --no-verify).
//   - The installed pre-commit hook calls the loopx that installed it by
//     absolute path when the command line recorded one and it still exists,
//     else `loopx` on PATH; when neither is found the commit is refused with
//     a message (the guard fails closed; `git commit --no-verify` skips it).

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
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
	Changed bool   `json:"changed"`
	Loopx   string `json:"loopx"`
}

// GuardCheck refuses (write_scope_conflict) when one of the paths, or with
// staged the paths staged for the next commit, falls inside a write scope of
// another agent's effective task lease. agent may be "" (see the file
// comment for the fallback).
func (s *Store) GuardCheck(agent string, staged bool, paths []string) (*Result, error) {
	if staged == (len(paths) > 0) {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "give either --staged or the paths to check, not both or neither")
	}
	var clean []string
	if !staged {
		var err error
		if clean, err = s.cleanRepoPaths(paths); err != nil {
			return nil, err
		}
	}
	if agent == "" {
		v, err := s.git.ConfigValue(GuardAgentConfigKey)
		if err != nil {
			return nil, mapErr(err)
		}
		if v != "" && !lease.ValidAgentID(v) {
			return nil, lease.Errorf(lease.CodeInvalidAgentID, "git config %s %q is not a valid agent id", GuardAgentConfigKey, v)
		}
		agent = v
	} else if err := lease.CheckAgentID("agent id", agent); err != nil {
		return nil, err
	}
	return s.read(func(v *lease.View, now time.Time) (*lease.Outcome, error) {
		data := &GuardData{AgentID: agent, Violations: []lease.GuardViolation{}, Allowed: true}
		out := &lease.Outcome{Operation: "guard.check", Data: data}
		if _, err := lease.RequireStore(v); err != nil {
			if e, ok := lease.AsError(err); ok && e.Code == lease.CodeStoreNotInitialized {
				data.Note = "no loopx store in this repository: nothing to check"
				return out, nil
			}
			return nil, err
		}
		goals, err := lease.GuardGoals(v)
		if err != nil {
			return nil, err
		}
		if len(goals) == 0 {
			data.Paths = len(clean)
			data.Note = "no task leases: nothing to check"
			return out, nil
		}
		if staged {
			if clean, err = s.git.StagedPaths(); err != nil {
				if errors.Is(err, gitstore.ErrNoWorkTree) {
					return nil, lease.Errorf(lease.CodeInvalidRequest, "--staged needs a working tree; this repository is bare")
				}
				return nil, err
			}
		}
		data.Paths = len(clean)
		vs, err := lease.GuardCheck(v, goals, agent, clean, now)
		if err != nil {
			return nil, err
		}
		if len(vs) > 0 {
			return nil, guardError(agent, vs)
		}
		return out, nil
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
	return lease.Errorf(lease.CodeWriteScopeConflict, "%s", msg).
		With("conflicts", conflicts).With("violations", vs).With("agent_id", agent)
}

// cleanRepoPaths turns command-line paths into sorted, unique repository
// paths relative to the top of the working tree.
func (s *Store) cleanRepoPaths(paths []string) ([]string, error) {
	top := s.git.WorkDir()
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

// GuardInstall installs the pre-commit hook that runs `loopx guard check
// --staged`, chained after any existing hook (never overwriting it). exe is
// the absolute path of the loopx executable the hook should prefer ("":
// `loopx` on PATH only).
func (s *Store) GuardInstall(exe string) (*Result, error) {
	changed, path, err := s.git.InstallHook("pre-commit", GuardHookMarker, guardSnippet(exe))
	if err != nil {
		if errors.Is(err, gitstore.ErrNoWorkTree) {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "a bare repository has no commits to guard: run this in a working tree")
		}
		return nil, mapErr(err)
	}
	head, err := s.git.Head()
	if err != nil {
		return nil, mapErr(err)
	}
	if exe == "" {
		exe = "loopx"
	}
	return &Result{Operation: "guard.install", CurrentRevision: revString(head),
		Data: GuardInstallData{Hook: path, Changed: changed, Loopx: exe}}, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// guardSnippet is loopx's block in the pre-commit hook.
func guardSnippet(exe string) string {
	find := "loopx_bin=loopx\n"
	if exe != "" {
		find = "loopx_bin=" + shellQuote(exe) + "\n" +
			"[ -x \"$loopx_bin\" ] || loopx_bin=loopx\n"
	}
	return GuardHookMarker + "\n" +
		"# Installed by `loopx guard install`: refuses the commit when a staged path is\n" +
		"# inside the write scope of another agent's effective task lease. The agent is\n" +
		"# $LOOPX_AGENT_ID or `git config loopx.agent`. Delete this block to uninstall.\n" +
		find +
		"if ! command -v \"$loopx_bin\" >/dev/null 2>&1; then\n" +
		"\techo 'loopx guard: loopx is not on PATH: install it, or skip the check with git commit --no-verify' >&2\n" +
		"\texit 1\n" +
		"fi\n" +
		"\"$loopx_bin\" guard check --staged --format text --repo \"$(git rev-parse --show-toplevel)\" >/dev/null || exit $?\n" +
		"# <<< loopx guard <<<\n"
}
