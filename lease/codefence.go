package lease

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fenced code writes (contract section 9). A lease's epoch is a fencing
// token, and the Git server is the storage it fences: every commit new to
// a guarded code ref is judged on the store's current state (the server's
// at push time), never by its own dates. JudgeCode is that judgement, the
// one function the server hook, the pre-push hook, `loopx guard check
// --range` and the hookless CI check all call, so they always agree.
//
// Decisions (where the contract is silent):
//   - The committing agent is the commit's Loopx-Agent trailer, and nothing
//     else (no author e-mail, no local configuration: a server could not
//     see the latter, and the former is as free to write as the trailer).
//     A commit without one is nobody's: every effective lease is another
//     agent's. Without signatures the trailer is a claim; in a store that
//     requires signatures a commit into a leased scope must be signed by
//     the named agent's registered key, which proves it.
//   - Paths: every path the commit changes (added, modified, deleted; a
//     rename is its old and its new path), as the commit's tree differs
//     from its parent's; a merge is judged only for what it wrote itself
//     (gitstore.ChangedFiles): the paths that differ from every parent,
//     and those where it throws away a change one side made since the
//     merge base (`-s ours`, a conflict resolved by taking one side), so
//     merging main into a branch does not judge main's commits again, and
//     a merge cannot undo another agent's work unjudged. A symlink (mode
//     120000) also counts as a write into the path it points at, resolved
//     from the link's folder; a target outside the repository is ignored.
//   - Case: scopes match paths without regard to letter case, always, so a
//     clone on a case-insensitive file system (core.ignorecase) cannot write
//     into src/ by naming Src/, and every place judges alike.
//   - write_scope_conflict: a path inside the write scope of an effective
//     lease of another agent, unless an effective lease of the committing
//     agent covers it too (GuardCheck's rule).
//   - stale_epoch: a Loopx-Lease GOAL/TODO@EPOCH whose todo has since had an
//     execution of a later epoch held by another agent (active or not), or
//     which the agent never held with that epoch (as the lease record's
//     holders list says; a lease older than the holders the record keeps
//     cannot be vouched for and is stale too), or a lease that does not
//     exist.
//   - Signatures (a store that requires them): a commit that changes a path
//     inside the scope of any active lease record (effective or not) must
//     be signed with the key its Loopx-Agent registered (in any goal):
//     signature_required when it names no agent or carries no signature,
//     signature_invalid when a signature is not that key's or does not
//     verify.
//   - A commit that touches no active lease's scope and names no lease
//     passes untouched: people who never use loopx are not in its way.

// TrailerLease names a lease a code commit was made under:
// "Loopx-Lease: GOAL/TODO@EPOCH".
const TrailerLease = "Loopx-Lease"

// LeaseRef is one Loopx-Lease trailer.
type LeaseRef struct {
	Goal  string `json:"goal_id" yaml:"goal_id"`
	Todo  string `json:"todo_id" yaml:"todo_id"`
	Epoch int64  `json:"epoch" yaml:"epoch"`
}

func (r LeaseRef) String() string {
	return r.Goal + "/" + r.Todo + "@" + strconv.FormatInt(r.Epoch, 10)
}

// ParseLeaseRef reads "GOAL/TODO@EPOCH".
func ParseLeaseRef(s string) (LeaseRef, error) {
	s = strings.TrimSpace(s)
	gt, ep, ok := strings.Cut(s, "@")
	goal, todo, ok2 := strings.Cut(gt, "/")
	epoch, err := strconv.ParseInt(ep, 10, 64)
	if !ok || !ok2 || err != nil || epoch < 1 || epoch > MaxGeneration || !ValidGoalID(goal) || !ValidTodoID(todo) {
		return LeaseRef{}, Errorf(CodeInvalidRequest, "the %s trailer %q is not GOAL/TODO@EPOCH", TrailerLease, s)
	}
	return LeaseRef{Goal: goal, Todo: todo, Epoch: epoch}, nil
}

// CodeTrailers reads a commit message's Loopx-Agent and Loopx-Lease
// trailers (its last paragraph, keys case-insensitive as git reads them).
func CodeTrailers(msg string) (agent string, leases []LeaseRef, err error) {
	agent, _, err = CommitAgentTrailer(msg)
	if err != nil {
		return "", nil, err
	}
	for _, val := range trailerValues(msg, TrailerLease) {
		ref, err := ParseLeaseRef(val)
		if err != nil {
			return "", nil, err
		}
		if !slices.Contains(leases, ref) {
			leases = append(leases, ref)
		}
	}
	return agent, leases, nil
}

// trailerValues returns the values of key in a message's last paragraph.
func trailerValues(msg, key string) []string {
	lines := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	start := len(lines)
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	if start == 0 {
		return nil
	}
	var out []string
	for _, line := range lines[start:] {
		k, val, ok := strings.Cut(line, ":")
		if !ok || k == "" || k[0] == ' ' || k[0] == '\t' || !strings.EqualFold(strings.TrimRight(k, " \t"), key) {
			continue
		}
		out = append(out, strings.TrimSpace(val))
	}
	return out
}

// CodePath is one path a code commit changes.
type CodePath struct {
	Path string `json:"path" yaml:"path"`
	// LinkTarget is, for a symlink the commit writes, the repository path
	// it points at ("" otherwise; see LinkTarget).
	LinkTarget string `json:"link_target,omitempty" yaml:"link_target,omitempty"`
}

// LinkTarget resolves a symlink at repository path link whose content is
// target: the repository path it names, or "" when it leaves the
// repository (absolute, or above the top).
func LinkTarget(link, target string) string {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return ""
	}
	p := path.Clean(path.Join(path.Dir(link), target))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return ""
	}
	return p
}

// CodeCommit is what the fence judges of one commit.
type CodeCommit struct {
	Hash    string
	Message string // for its trailers
	Paths   []CodePath
	// Signed reports a signature on the commit; SignerKey is the key
	// ("type base64") that validly signed it, "" when the signature does
	// not verify; SignatureProblem says why.
	Signed           bool
	SignerKey        string
	SignatureProblem string
}

// CodeRefusal is one refused commit.
type CodeRefusal struct {
	Revision string `json:"revision" yaml:"revision"`
	Code     Code   `json:"code" yaml:"code"`
	Path     string `json:"path,omitempty" yaml:"path,omitempty"`
	Agent    string `json:"agent,omitempty" yaml:"agent,omitempty"`
	Goal     string `json:"goal_id,omitempty" yaml:"goal_id,omitempty"`
	Todo     string `json:"todo_id,omitempty" yaml:"todo_id,omitempty"`
	Owner    string `json:"owner,omitempty" yaml:"owner,omitempty"`
	Scope    string `json:"scope,omitempty" yaml:"scope,omitempty"`
	Epoch    int64  `json:"epoch,omitempty" yaml:"epoch,omitempty"`
	Message  string `json:"message" yaml:"message"`
}

// CodeFence is the state code commits are judged on: the store's records
// (v), read as a push's commits need them. The scopes of the active lease
// records come from the view's index of active leases (ActiveLeases, kept
// beside the store, so a hook does not decode every lease record); a
// record itself is read only when one of its scopes covers a path a commit
// wrote, or when a commit names its lease, once per check.
type CodeFence struct {
	v        *View
	now      time.Time
	required bool
	goals    []string
	active   map[string][]foldedLease // the active lease records with scopes, by goal
	records  map[string]*Lease        // by lease path: read (nil: none)
}

// foldedLease is an active lease record as the index lists it, its scopes
// in lower case.
type foldedLease struct {
	todo   string
	scopes []string
}

// NewCodeFence reads the lease records of the store v judged at now.
func NewCodeFence(v *View, now time.Time) (*CodeFence, error) {
	m, err := v.Meta()
	if err != nil {
		return nil, err
	}
	f := &CodeFence{v: v, now: now, required: m != nil && m.RequireSignatures,
		active: map[string][]foldedLease{}, records: map[string]*Lease{}}
	if m == nil {
		return f, nil // no store: no lease guards anything
	}
	if f.goals, err = GuardGoals(v); err != nil {
		return nil, err
	}
	for _, g := range f.goals {
		act, err := v.activeLeases(g)
		if err != nil {
			return nil, err
		}
		for _, a := range act {
			if len(a.Scopes) == 0 {
				continue
			}
			fl := foldedLease{todo: a.TodoID, scopes: make([]string, len(a.Scopes))}
			for i, sc := range a.Scopes {
				fl.scopes[i] = strings.ToLower(sc)
			}
			f.active[g] = append(f.active[g], fl)
		}
	}
	return f, nil
}

// record reads the lease record of goal's todo once per fence (nil: none).
func (f *CodeFence) record(goal, todo string) (*Lease, error) {
	p := LeasePath(goal, todo)
	if l, ok := f.records[p]; ok {
		return l, nil
	}
	l, err := f.v.leaseRecord(goal, todo)
	if err != nil {
		return nil, err
	}
	f.records[p] = l
	return l, nil
}

// covering returns, with their scopes in lower case, the active lease
// records of goal whose scopes cover one of the folded paths: the only
// ones a commit of those paths can meet.
func (f *CodeFence) covering(goal string, folded []string) ([]*Lease, error) {
	var out []*Lease
	for _, a := range f.active[goal] {
		if !coversAny(a.scopes, folded) {
			continue
		}
		l, err := f.record(goal, a.todo)
		if err != nil {
			return nil, err
		}
		if l == nil || l.Status != LeaseActive {
			continue
		}
		c := *l
		c.WriteScopes = a.scopes
		out = append(out, &c)
	}
	return out, nil
}

// Judge judges one commit; no refusal means it passes.
func (f *CodeFence) Judge(c CodeCommit) ([]CodeRefusal, error) {
	refuse := func(r CodeRefusal) CodeRefusal { r.Revision = c.Hash; return r }
	agent, refs, err := CodeTrailers(c.Message)
	if err != nil {
		e, _ := AsError(err)
		return []CodeRefusal{refuse(CodeRefusal{Code: e.Code, Message: e.Message})}, nil
	}
	var out []CodeRefusal
	for _, ref := range refs {
		if why, err := f.stale(agent, ref); err != nil {
			return nil, err
		} else if why != "" {
			out = append(out, refuse(CodeRefusal{Code: CodeStaleEpoch, Agent: agent, Goal: ref.Goal, Todo: ref.Todo, Epoch: ref.Epoch,
				Message: fmt.Sprintf("%s %s: %s", TrailerLease, ref, why)}))
		}
	}
	// The paths written, folded; each maps back to the path the commit names.
	var folded []string
	orig := map[string]string{}
	add := func(p, as string) {
		lp := strings.ToLower(p)
		if _, ok := orig[lp]; !ok {
			folded = append(folded, lp)
			orig[lp] = as
		}
	}
	for _, p := range c.Paths {
		add(p.Path, p.Path)
		if p.LinkTarget != "" {
			add(p.LinkTarget, p.Path+" -> "+p.LinkTarget)
		}
	}
	if len(folded) == 0 || len(f.active) == 0 {
		return out, nil
	}
	vs, err := GuardCheckLeases(f.v, f.goals, func(g string) ([]*Lease, error) { return f.covering(g, folded) }, agent, folded, f.now)
	if err != nil {
		e, _ := AsError(err)
		if e != nil {
			return append(out, refuse(CodeRefusal{Code: e.Code, Message: e.Message})), nil
		}
		return nil, err
	}
	for _, viol := range vs {
		out = append(out, refuse(CodeRefusal{Code: CodeWriteScopeConflict, Path: orig[viol.Path], Agent: agent, Goal: viol.Goal, Todo: viol.TodoID,
			Owner: viol.Owner, Scope: viol.Scope, Message: fmt.Sprintf("%s is inside %s's write scope %s (lease of %s/%s, effective until %s)",
				orig[viol.Path], viol.Owner, viol.Scope, viol.Goal, viol.TodoID, viol.ExpiresAt.UTC().Format(time.RFC3339))}))
	}
	if f.required {
		if r, ok, err := f.signature(c, agent, folded, orig); err != nil {
			return nil, err
		} else if ok {
			out = append(out, refuse(r))
		}
	}
	return out, nil
}

// stale says why a commit of agent may not name ref ("" when it may).
func (f *CodeFence) stale(agent string, ref LeaseRef) (string, error) {
	if agent == "" {
		return "the commit names no agent (" + TrailerAgent + ") to have held it", nil
	}
	l, err := f.record(ref.Goal, ref.Todo)
	if err != nil {
		return "", err
	}
	if l == nil || ref.Epoch > l.Epoch {
		return "no such lease was ever held", nil
	}
	held := false
	oldest := l.Epoch
	for _, h := range l.Holders {
		oldest = min(oldest, h.Epoch)
		switch {
		case h.Epoch == ref.Epoch && h.Owner == agent:
			held = true
		case h.Epoch == ref.Epoch:
			return fmt.Sprintf("epoch %d was held by %s, not %s", ref.Epoch, h.Owner, agent), nil
		case h.Epoch > ref.Epoch && h.Owner != agent:
			return fmt.Sprintf("the todo has since been held by %s (epoch %d)", h.Owner, h.Epoch), nil
		}
	}
	if !held {
		if ref.Epoch < oldest {
			return fmt.Sprintf("epoch %d is older than the holders the lease record keeps (from epoch %d): it cannot be vouched for", ref.Epoch, oldest), nil
		}
		return fmt.Sprintf("%s never held epoch %d", agent, ref.Epoch), nil
	}
	return "", nil
}

// signature checks, in a store that requires signatures, a commit that
// writes inside an active lease's scope.
func (f *CodeFence) signature(c CodeCommit, agent string, folded []string, orig map[string]string) (CodeRefusal, bool, error) {
	inside := ""
	for _, g := range f.goals {
		for _, a := range f.active[g] {
			for _, p := range folded {
				for _, s := range a.scopes {
					if inside == "" && ScopeCovers(s, p) {
						inside = orig[p]
					}
				}
			}
		}
	}
	if inside == "" {
		return CodeRefusal{}, false, nil
	}
	switch {
	case agent == "":
		return CodeRefusal{Code: CodeSignatureRequired, Path: inside,
			Message: fmt.Sprintf("%s is inside a leased scope: the commit must name its agent (%s) and be signed with its registered key", inside, TrailerAgent)}, true, nil
	case !c.Signed:
		return CodeRefusal{Code: CodeSignatureRequired, Path: inside, Agent: agent,
			Message: fmt.Sprintf("%s is inside a leased scope: the commit must be signed with %s's registered key (git commit -S, gpg.format=ssh)", inside, agent)}, true, nil
	}
	keys, err := agentKeys(f.v, agent)
	if err != nil {
		return CodeRefusal{}, false, err
	}
	if c.SignerKey == "" || !slices.Contains(keys, c.SignerKey) {
		why := c.SignatureProblem
		if why == "" {
			why = "signed by another key"
		}
		return CodeRefusal{Code: CodeSignatureInvalid, Path: inside, Agent: agent,
			Message: fmt.Sprintf("%s is inside a leased scope: %s, not by %s's registered key", inside, why, agent)}, true, nil
	}
	return CodeRefusal{}, false, nil
}

// LeasesCovering lists the effective leases of agent (every goal) whose
// write scopes cover one of paths (case folded, as the fence matches), as
// the Loopx-Lease trailers of a commit of those paths name them, sorted.
func LeasesCovering(v *View, agent string, paths []string, now time.Time) ([]LeaseRef, error) {
	if agent == "" || len(paths) == 0 {
		return nil, nil
	}
	goals, err := GuardGoals(v)
	if err != nil {
		return nil, err
	}
	folded := make([]string, len(paths))
	for i, p := range paths {
		folded[i] = strings.ToLower(p)
	}
	var out []LeaseRef
	for _, g := range goals {
		act, err := v.activeLeases(g)
		if err != nil {
			return nil, err
		}
		for _, a := range act {
			if !now.Before(a.ExpiresAt) || !coversAny(a.Scopes, folded) {
				continue
			}
			l, err := v.leaseRecord(g, a.TodoID)
			if err != nil {
				return nil, err
			}
			if l == nil || l.Owner != agent || l.Status != LeaseActive || !now.Before(l.ExpiresAt) {
				continue
			}
			eff, err := leaseIsEffective(v, g, l, now)
			if err != nil {
				return nil, err
			}
			if eff {
				out = append(out, LeaseRef{Goal: g, Todo: l.TodoID, Epoch: l.Epoch})
			}
		}
	}
	slices.SortFunc(out, func(a, b LeaseRef) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// coversAny reports whether a scope (folded) covers a folded path.
func coversAny(scopes, folded []string) bool {
	for _, s := range scopes {
		ls := strings.ToLower(s)
		for _, p := range folded {
			if ScopeCovers(ls, p) {
				return true
			}
		}
	}
	return false
}
