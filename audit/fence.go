package audit

// The code fence (contract section 9): the lease's epoch guards the code
// where it lands. One judgement, lease.CodeFence, decides in four places,
// all through fence below, so client, CI and server always agree:
//
//   - the server hook (serverhook.go), for every commit a push to a
//     guarded code ref brings that no guarded ref of the server had (a
//     commit pushed first to a tag or another unguarded ref was never
//     judged, and is judged when it reaches a guarded one), on the server's
//     state ref as it stands while the hook runs, at the server's clock;
//   - the pre-push hook and `loopx guard check --range A..B` (guard.go), and
//     the hookless CI check (tools/loopx-guard-range.sh, the
//     .github/actions/loopx-guard action), which run the latter: on the
//     store's current state (in remote mode the server's, fetched).
//
// Decisions (where the contract is silent):
//   - A commit is never judged by its own dates or its author line: only
//     by its Loopx-Agent and Loopx-Lease trailers, its changed paths (a
//     merge: what it wrote itself, see gitstore.ChangedFiles), its symlink
//     targets and its signature, against the current state.
//   - The state is read once per check: every commit of a push is judged
//     on the same state.
//   - A signature is read out of the commit (gitstore.CommitSignature) and
//     verified against the key it names; lease.CodeFence then holds that
//     key to the agent's registered keys.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// FenceCommit is how one commit was judged.
type FenceCommit struct {
	Commit string `json:"commit" yaml:"commit"`
	// AgentID is the commit's Loopx-Agent ("" none); Leases its
	// Loopx-Lease trailers.
	AgentID string   `json:"agent_id" yaml:"agent_id"`
	Leases  []string `json:"leases" yaml:"leases"`
	Paths   int      `json:"paths" yaml:"paths"`
	Signed  bool     `json:"signed" yaml:"signed"`
	Allowed bool     `json:"allowed" yaml:"allowed"`
}

// fenceResult is what fence decided.
type fenceResult struct {
	commits []FenceCommit
	refused []lease.CodeRefusal
}

// fence judges commits (in the order given) on the state of snapshot sn
// at now. A repository without a store judges nothing (every commit
// passes: nothing is leased).
func (a *Auditor) fence(sn *gitstore.Snapshot, commits []gitstore.Hash, now time.Time) (*fenceResult, error) {
	out := &fenceResult{commits: []FenceCommit{}, refused: []lease.CodeRefusal{}}
	f, err := lease.NewCodeFence(a.derived.View(sn), now)
	if err != nil {
		return nil, err
	}
	for _, h := range commits {
		c, err := a.codeCommit(h)
		if err != nil {
			return nil, err
		}
		fc := FenceCommit{Commit: h.String(), Paths: len(c.Paths), Signed: c.Signed, Leases: []string{}}
		if agent, refs, err := lease.CodeTrailers(c.Message); err == nil {
			fc.AgentID = agent
			for _, r := range refs {
				fc.Leases = append(fc.Leases, r.String())
			}
		}
		rs, err := f.Judge(c)
		if err != nil {
			return nil, err
		}
		fc.Allowed = len(rs) == 0
		out.commits = append(out.commits, fc)
		out.refused = append(out.refused, rs...)
	}
	return out, nil
}

// codeCommit reads what the fence judges of commit h.
func (a *Auditor) codeCommit(h gitstore.Hash) (lease.CodeCommit, error) {
	facts, err := a.git.ReadCommitFacts(h)
	if err != nil {
		return lease.CodeCommit{}, err
	}
	files, err := a.git.ChangedFiles(h)
	if err != nil {
		return lease.CodeCommit{}, err
	}
	c := lease.CodeCommit{Hash: h.String(), Message: facts.Message, Paths: make([]lease.CodePath, len(files))}
	for i, f := range files {
		c.Paths[i] = lease.CodePath{Path: f.Path}
		if f.Symlink {
			c.Paths[i].LinkTarget = lease.LinkTarget(f.Path, f.Link)
		}
	}
	payload, sig, err := a.git.CommitSignature(h)
	if err != nil {
		return lease.CodeCommit{}, err
	}
	if sig == nil {
		return c, nil
	}
	c.Signed = true
	key, err := gitstore.SSHSignatureKey(sig)
	if err != nil {
		c.SignatureProblem = "its signature is not an SSH signature"
		return c, nil
	}
	if err := gitstore.VerifySSH(payload, sig, key); err != nil {
		c.SignatureProblem = "its signature does not verify (" + strings.TrimPrefix(err.Error(), "gitstore: ") + ")"
		if !errors.Is(err, gitstore.ErrBadSignature) {
			return lease.CodeCommit{}, err
		}
		return c, nil
	}
	c.SignerKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	return c, nil
}

// fenceError is the refusal of commits that do not pass: the first
// refusal's code; a message of one line per refusal (as the server hook
// prints them); every refusal in details.
func fenceError(refused []lease.CodeRefusal, where string) *lease.Error {
	lines := make([]string, len(refused))
	for i, r := range refused {
		lines[i] = FenceLine(r)
	}
	msg := strings.Join(lines, "\n")
	if where != "" {
		msg = fmt.Sprintf("%s: %d commit(s) refused:\n%s", where, refusedCommits(refused), msg)
	}
	return lease.Errorf(refused[0].Code, "%s", msg).With("refused", refused)
}

// FenceLine is one refusal as a hook prints it.
func FenceLine(r lease.CodeRefusal) string {
	return fmt.Sprintf("commit %s: %s: %s", shortHash(r.Revision), r.Code, r.Message)
}

func refusedCommits(rs []lease.CodeRefusal) int {
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Revision] = true
	}
	return len(seen)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// StaleState says that a check decided on the last state fetched from a
// server it could not reach (contract: a guard never blocks on the network
// alone).
type StaleState struct {
	Remote string `json:"remote" yaml:"remote"`
	// FetchedAt is when that state was fetched (null: unknown); AgeSeconds
	// how long ago.
	FetchedAt  *time.Time `json:"fetched_at" yaml:"fetched_at"`
	AgeSeconds *int64     `json:"age_seconds" yaml:"age_seconds"`
	// Reason is why the server could not be reached.
	Reason string `json:"reason" yaml:"reason"`
}

// stateHead is the head a guard decides on: the authority's (in remote
// mode the server's, fetched), or, when the server cannot be reached, the
// last state fetched from it, with what makes it stale.
func (a *Auditor) stateHead() (gitstore.Hash, *StaleState, error) {
	head, err := a.repo.Head(context.Background())
	if err == nil {
		return head, nil, nil
	}
	if !errors.Is(err, gitstore.ErrRemoteUnavailable) {
		return gitstore.ZeroHash, nil, storeerr.Map(err)
	}
	known, at, ok, kerr := a.s.LastKnownHead()
	if !ok || kerr != nil || known.IsZero() {
		return gitstore.ZeroHash, nil, storeerr.Map(err)
	}
	why := strings.TrimPrefix(storeerr.Map(err).Error(), string(lease.CodeRemoteUnavailable)+": ")
	st := &StaleState{Remote: a.s.Remote(), Reason: strings.TrimSuffix(why, ": retry with the same arguments")}
	if !at.IsZero() {
		at = at.UTC()
		age := int64(a.s.Now().Sub(at) / time.Second)
		st.FetchedAt, st.AgeSeconds = &at, &age
	}
	return known, st, nil
}
