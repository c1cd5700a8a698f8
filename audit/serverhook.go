package audit

// The server-side check (contract section 7): `loopx server-hook
// pre-receive`, run by a Git server's pre-receive hook, refuses a push to
// a state ref unless every new commit holds:
//
//   - it is a fast-forward: the ref's current commit is on the new
//     commit's first-parent history (a new ref: the whole history is
//     checked), and no commit is a merge;
//   - it verifies as `verify --history` verifies it (verifyCommit,
//     the same code): a state commit's recorded request re-decided on its
//     parent at its time gives its tree, message and identity, and in a
//     store that requires signatures it is signed by a key the parent
//     registers for its acting agent (signature.go); a board commit is exactly
//     the rendering of its parent;
//   - its time is not more than the store's max_clock_skew_seconds (as
//     its parent's loopx.yaml says) ahead of the server's clock, and not
//     before its parent's (store.clock-reset excepted, as in verify).
//
// Each refused commit is one line on stderr, which git relays to the
// pushing client ("remote: ..."), and the hook exits non-zero, so git
// refuses the whole push and the ref does not move. Pushes to other refs
// are not looked at. The pushed objects are still in git's quarantine
// folder while the hook runs; gitstore reads them there (read-only).
//
// The hook writes nothing to the repository but one cache: the board
// models it brought up to date (loopx-cache/board-*, as a client keeps
// them), so the next push does not render a board from every record. A
// model is tagged with the state commit it shows; one left by a push that
// was then refused names a commit the server does not have, cannot be
// brought up to date, and is rebuilt: it never changes a verdict.

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/remote"
)

// ServerHookMarker identifies loopx's block in a server's pre-receive hook.
const ServerHookMarker = "# >>> loopx server-hook >>>"

// ReceiveUpdate is one line git hands a pre-receive hook:
// "<old sha> <new sha> <ref>".
type ReceiveUpdate struct {
	Old, New gitstore.Hash
	Ref      string
}

// ParseReceiveUpdates reads a pre-receive hook's stdin. Blank lines are
// skipped; anything else malformed is invalid_request.
func ParseReceiveUpdates(r io.Reader) ([]ReceiveUpdate, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var out []ReceiveUpdate
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || !isSHA(f[0]) || !isSHA(f[1]) || !strings.HasPrefix(f[2], "refs/") {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "pre-receive line %d %q: want \"<old sha> <new sha> <ref>\"", n, truncateText(line, 120))
		}
		out = append(out, ReceiveUpdate{Old: gitstore.ParseHash(f[0]), New: gitstore.ParseHash(f[1]), Ref: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "reading the pre-receive lines: %v", err)
	}
	return out, nil
}

// ServerHookRequest is one run of the pre-receive check.
type ServerHookRequest struct {
	// Refs are the state refs to check (default: the store's ref).
	Refs []string
	// CodeRefs are the patterns of the code refs the code fence guards
	// (fence.go; default DefaultCodeRefs, none when CodeRefsOff).
	CodeRefs    []string
	CodeRefsOff bool
	Updates     []ReceiveUpdate
	// Now is the server's clock (default: the store's clock).
	Now time.Time
	// Decide: requests pushed to request refs are decided here
	// (decider.go), and accepted pushes to a state ref say so.
	Decide bool
}

// DefaultCodeRefs are the code refs the server hook guards unless told
// otherwise: every branch.
var DefaultCodeRefs = []string{"refs/heads/*"}

// ServerHookData is the result of server-hook pre-receive.
type ServerHookData struct {
	Refs     []string `json:"refs"`
	CodeRefs []string `json:"code_refs"`
	// Checked counts the new commits of the state refs checked (state and
	// board); CodeChecked the new commits of code refs the fence judged.
	Checked     int             `json:"checked_commits"`
	CodeChecked int             `json:"checked_code_commits"`
	Refused     []ServerRefusal `json:"refused"`
	// Decided holds the reply line of each request decided (--decide).
	Decided []string `json:"decided,omitempty"`
	// Announce: the push was accepted by a hook that decides requests,
	// which tells the pusher so (gitstore.DeciderAnnouncement).
	Announce bool `json:"-"`
}

// RefMatches reports whether ref matches a code-ref pattern: the pattern
// itself, or with one '*' any text (slashes included, as in a refspec) in
// its place.
func RefMatches(pattern, ref string) bool {
	before, after, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == ref
	}
	return len(ref) >= len(before)+len(after) && strings.HasPrefix(ref, before) && strings.HasSuffix(ref, after)
}

// checkCodeRefs judges, with the code fence, the commits the updates of
// guarded code refs bring that no guarded ref of the server had, on the
// state ref as it stands (the server's head, before this push), at the
// server's clock. A commit the server holds only under refs it does not
// guard (a tag pushed first, a ref outside --code-refs) was never judged,
// so it is judged when it reaches a guarded ref. A deleted ref brings
// nothing. A commit several updates bring is judged once, under the first
// ref that brings it.
func (a *Auditor) checkCodeRefs(ups []ReceiveUpdate, patterns []string, now time.Time, d *ServerHookData) error {
	var guarded []ReceiveUpdate
	for _, u := range ups {
		if u.New.IsZero() || strings.HasPrefix(u.Ref, "refs/loopx/") {
			continue
		}
		for _, p := range patterns {
			if RefMatches(p, u.Ref) {
				guarded = append(guarded, u)
				break
			}
		}
	}
	if len(guarded) == 0 {
		return nil
	}
	head, err := a.git.Head()
	if err != nil || head.IsZero() {
		return err // no store on this server: nothing is leased
	}
	guardedRef := func(ref string) bool {
		if strings.HasPrefix(ref, "refs/loopx/") {
			return false
		}
		for _, p := range patterns {
			if RefMatches(p, ref) {
				return true
			}
		}
		return false
	}
	sn, err := a.git.Snapshot(head)
	if err != nil {
		return err
	}
	seen := map[gitstore.Hash]bool{}
	for _, u := range guarded {
		news, err := a.git.RevListNew([]gitstore.Hash{u.New}, guardedRef)
		if err != nil {
			return err
		}
		var fresh []gitstore.Hash
		for _, h := range news {
			if !seen[h] {
				seen[h] = true
				fresh = append(fresh, h)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		res, err := a.fence(sn, fresh, now)
		if err != nil {
			return err
		}
		d.CodeChecked += len(fresh)
		for _, r := range res.refused {
			d.Refused = append(d.Refused, ServerRefusal{Revision: r.Revision, Ref: u.Ref, Code: string(r.Code), Message: r.Message})
		}
	}
	return nil
}

// ServerRefusal is one refused commit (its line is what the hook prints,
// and what a client reads back out of remote_rejected: storeerr).
type ServerRefusal = storeerr.Refusal

// ServerHookPreReceive checks the updates of one push (see the file
// comment). A refused push is an error whose code is the first refusal's,
// whose message has one line per refused commit, and whose details list
// them (refused).
func (a *Auditor) ServerHookPreReceive(req ServerHookRequest) (*loopx.Result[ServerHookData], error) {
	refs := req.Refs
	if len(refs) == 0 {
		refs = []string{a.git.Ref()}
	}
	now := req.Now
	if now.IsZero() {
		now = a.s.Now()
	}
	codeRefs := req.CodeRefs
	if len(codeRefs) == 0 && !req.CodeRefsOff {
		codeRefs = DefaultCodeRefs
	}
	if req.CodeRefsOff {
		codeRefs = []string{}
	}
	d := &ServerHookData{Refs: refs, CodeRefs: codeRefs, Refused: []ServerRefusal{}}
	if req.Decide && len(requestUpdates(req.Updates)) > 0 {
		err := a.decideRequests(req.Updates, d)
		return &loopx.Result[ServerHookData]{Envelope: loopx.Envelope{Operation: "server-hook.pre-receive"}, Data: *d}, err
	}
	boards := &historyBoards{a: a, models: map[string]*historyModel{}, saved: true}
	for _, u := range req.Updates {
		if !slices.Contains(refs, u.Ref) {
			continue
		}
		if err := a.checkReceive(u, now, boards, d); err != nil {
			return nil, storeerr.Map(err)
		}
	}
	boards.save()
	if err := a.checkCodeRefs(req.Updates, codeRefs, now, d); err != nil {
		return nil, storeerr.Map(err)
	}
	res := &loopx.Result[ServerHookData]{Envelope: loopx.Envelope{Operation: "server-hook.pre-receive"}, Data: *d}
	if len(d.Refused) == 0 {
		for _, u := range req.Updates {
			if req.Decide && u.Ref == a.git.Ref() && a.decidable(u.New) {
				res.Data.Announce = true
			}
		}
		return res, nil
	}
	lines := make([]string, len(d.Refused))
	for i, r := range d.Refused {
		lines[i] = r.Line()
	}
	return res, lease.Errorf(lease.Code(d.Refused[0].Code), "%s", strings.Join(lines, "\n")).With("refused", d.Refused)
}

// checkReceive checks one update of a state ref, adding its refusals to d.
func (a *Auditor) checkReceive(u ReceiveUpdate, now time.Time, boards *historyBoards, d *ServerHookData) error {
	refuse := func(rev gitstore.Hash, code, reason, format string, args ...any) {
		d.Refused = append(d.Refused, ServerRefusal{Revision: rev.String(), Ref: u.Ref, Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)})
	}
	if u.New.IsZero() {
		refuse(u.Old, string(lease.CodeCorruptRecord), lease.ProblemNotLinear, "the state ref cannot be deleted through this server")
		return nil
	}
	// The new commits, oldest first: new's first-parent chain down to old.
	var chain []gitstore.Hash
	found := u.Old.IsZero()
	err := a.repo.Log(u.New, func(c gitstore.CommitMeta) (bool, error) {
		if c.Hash == u.Old {
			found = true
			return false, nil
		}
		chain = append(chain, c.Hash)
		return true, nil
	})
	if err != nil {
		return err
	}
	if !found {
		refuse(u.New, string(lease.CodeCorruptRecord), lease.ProblemNotLinear, "not a fast-forward of %s: the state ref only grows (its first-parent history must contain the current commit)", u.Old)
		return nil
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c, err := records.CommitMeta(a.repo, chain[i])
		if err != nil {
			return err
		}
		d.Checked++
		if why, err := a.checkServerClock(c, now); err != nil {
			return err
		} else if why != "" {
			refuse(c.Hash, string(lease.CodeClockSkew), lease.ProblemFutureDated, "%s", why)
			continue
		}
		if _, err := a.verifyCommit(c, boards); err != nil {
			he, ok := err.(*lease.HistoryError)
			if !ok {
				return err
			}
			code := string(lease.CodeCorruptRecord)
			if he.Kind == ProblemSignatureRequired || he.Kind == ProblemSignatureInvalid {
				code = he.Kind
			}
			refuse(c.Hash, code, he.Kind, "%s", he.Message)
			continue
		}
		if remote.IsOffline(c.Message) {
			refuse(c.Hash, string(lease.CodeCorruptRecord), lease.ProblemOfflineCommit,
				"an offline commit pushed as it is: offline work is published by `loopx sync`, which decides it again on this server's head")
		}
	}
	return nil
}

// checkServerClock refuses a commit dated more than the store's skew bound
// (its parent's) ahead of the server's clock. A clock-reset, the one
// commit dated before its parent, must also be dated within the bound of
// the server's clock (not in its past: a reset dated yesterday would
// expire leases that are live today), on a parent dated more than the
// bound ahead of it (contract section 8).
func (a *Auditor) checkServerClock(c gitstore.CommitMeta, now time.Time) (string, error) {
	return a.checkClockBound(c, now, "the server's clock", true)
}

// checkClockBound is checkServerClock against any real clock (which):
// the server's, or the clock of verify --history, the hookless check.
// resets says whether a clock-reset is also held to the bound behind
// the clock (only a check made when the commit arrives can). It returns
// why the commit is refused ("" when it holds), or the store's error.
func (a *Auditor) checkClockBound(c gitstore.CommitMeta, now time.Time, which string, resets bool) (string, error) {
	parent, err := a.repo.Snapshot(c.Parent)
	if err != nil {
		return "", err
	}
	meta, _ := a.derived.View(parent).Meta() // a corrupt meta fails the verification
	skew := lease.MaxClockSkew(meta)
	now = now.UTC().Truncate(time.Second)
	latest := c.When
	if c.CommitTime.After(latest) {
		latest = c.CommitTime
	}
	if latest.Sub(now) > skew {
		return fmt.Sprintf("dated %s, %s ahead of %s (%s; at most %s allowed)",
			latest.UTC().Format(time.RFC3339), latest.Sub(now).Round(time.Second), which, now.Format(time.RFC3339), skew), nil
	}
	if !resets || c.Parent.IsZero() || !c.When.Before(parent.Time()) {
		return "", nil
	}
	if rc, err := lease.ParseCommit(c.Message); err == nil && rc.Call.Op != nil && rc.Call.Op.Rewinds {
		if now.Sub(c.When) > skew {
			return fmt.Sprintf("a clock-reset dated %s, %s behind %s (%s; at most %s allowed): a reset is decided at the real time",
				c.When.UTC().Format(time.RFC3339), now.Sub(c.When).Round(time.Second), which, now.Format(time.RFC3339), skew), nil
		}
		if parent.Time().Sub(now) <= skew {
			return fmt.Sprintf("a clock-reset of a head dated %s, not more than %s ahead of %s (%s): nothing to reset",
				parent.Time().UTC().Format(time.RFC3339), skew, which, now.Format(time.RFC3339)), nil
		}
	}
	return "", nil
}

// ServerHookInstallData is the result of server-hook install.
type ServerHookInstallData struct {
	Hook     string   `json:"hook"`
	Refs     []string `json:"refs"`
	CodeRefs []string `json:"code_refs"`
	Changed  bool     `json:"changed"`
	Loopx    string   `json:"loopx"`
}

// ServerHookInstall writes loopx's block into the repository's pre-receive
// hook (chained after an existing hook, which runs first with the same
// stdin; idempotent: a hook holding the block is left as it is). The
// block runs `exe server-hook pre-receive --ref R...` (exe: this loopx by
// its absolute path, else `loopx` on PATH). A push to a state ref while
// loopx cannot be found is refused: the check fails closed.
func (a *Auditor) ServerHookInstall(refs, codeRefs []string, exe string, decide bool) (*loopx.Result[ServerHookInstallData], error) {
	if len(refs) == 0 {
		refs = []string{a.git.Ref()}
	}
	for _, r := range refs {
		if !strings.HasPrefix(r, "refs/") || strings.ContainsAny(r, " \t\n'\"\\$`*") {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "--ref %q: want a full ref name (refs/...)", r).With("field", "ref")
		}
	}
	if codeRefs == nil {
		codeRefs = DefaultCodeRefs
	}
	for _, r := range codeRefs {
		if !strings.HasPrefix(r, "refs/") || strings.Count(r, "*") > 1 || strings.ContainsAny(r, " \t\n'\"\\$`") {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "--code-refs %q: want a ref pattern (refs/..., at most one *)", r).With("field", "code_refs")
		}
	}
	changed, path, err := a.git.InstallRepoHook("pre-receive", ServerHookMarker, serverHookSnippet(refs, codeRefs, exe, decide))
	if err != nil {
		return nil, storeerr.Map(err)
	}
	// The decider ref tells clients listing the server's refs that it
	// decides (gitstore/request.go); without --decide it is removed.
	if err := a.git.SetDecider(decide); err != nil {
		return nil, storeerr.Map(err)
	}
	if exe == "" {
		exe = "loopx"
	}
	return &loopx.Result[ServerHookInstallData]{Envelope: loopx.Envelope{Operation: "server-hook.install"},
		Data: ServerHookInstallData{Hook: path, Refs: refs, CodeRefs: codeRefs, Changed: changed, Loopx: exe}}, nil
}

// serverHookSnippet is loopx's block in a server's pre-receive hook.
func serverHookSnippet(refs, codeRefs []string, exe string, decide bool) string {
	find := "loopx_bin=loopx\n"
	if exe != "" {
		find = "loopx_bin=" + shellQuote(exe) + "\n" +
			"[ -x \"$loopx_bin\" ] || loopx_bin=loopx\n"
	}
	args := ""
	for _, r := range refs {
		args += " --ref " + shellQuote(r)
	}
	if len(codeRefs) == 0 {
		args += " --code-refs ''"
	}
	for _, r := range codeRefs {
		args += " --code-refs " + shellQuote(r)
	}
	if decide {
		args += " --decide"
	}
	return ServerHookMarker + "\n" +
		"# Installed by `loopx server-hook install`: refuses a push to the loopx state ref\n" +
		"# unless every new commit is a fast-forward, re-verifies (verify --history), is\n" +
		"# dated within the store's clock-skew bound of this server's clock and, in a\n" +
		"# store that requires signatures, is signed by its agent's registered key; and a\n" +
		"# push to a guarded code ref (--code-refs) unless every commit it brings passes\n" +
		"# the code fence: no path inside another agent's effective write scope, no\n" +
		"# Loopx-Lease of an epoch since held by another agent, and in a signing store a\n" +
		"# signature by its agent's key on a commit into a leased scope.\n" +
		"# Delete this block to uninstall.\n" +
		find +
		"if ! command -v \"$loopx_bin\" >/dev/null 2>&1; then\n" +
		"\techo 'loopx server-hook: loopx is not installed on this server: refusing the push (the check fails closed)' >&2\n" +
		"\texit 1\n" +
		"fi\n" +
		"\"$loopx_bin\" server-hook pre-receive" + args + " --format text --repo \"${GIT_DIR:-.}\" || exit $?\n" +
		"# <<< loopx server-hook <<<\n"
}
