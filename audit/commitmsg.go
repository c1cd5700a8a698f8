package audit

// `loopx guard commit-msg FILE`, what the commit-msg hook runs (contract
// section 9): a code commit made under a lease says so. It adds to the
// message the trailers the code fence judges it by:
//
//   - Loopx-Agent: the committing agent: inside `loopx run` the lease's
//     owner (LOOPX_OWNER), else the agent passed in (--agent-id,
//     $LOOPX_AGENT_ID), else `git config loopx.agent`;
//   - one Loopx-Lease: GOAL/TODO@EPOCH per effective lease of that agent
//     whose write scope covers a staged path (case folded, symlink targets
//     are not looked at here: the fence judges them), and inside `loopx run`
//     the lease run holds (LOOPX_GOAL, LOOPX_TODO, LOOPX_EPOCH) in any case.
//
// Decisions (where the contract is silent):
//   - It never blocks a commit for lack of information: with no agent
//     configured it adds nothing; with no store, nothing; it decides on
//     the local view of the store (the server's head as last fetched in
//     remote mode), never on the network, so a commit stays fast and works
//     offline. The server judges the pushed commit on its own state.
//   - An existing Loopx-Agent trailer is replaced (one agent per commit); a
//     Loopx-Lease already there is kept, and the same one is not added
//     twice (git interpret-trailers, addIfDifferent).
//   - The staged paths are the index against HEAD (an amend adds only what
//     the amend changes: the lease of an earlier commit's paths is named
//     by that commit's message, which an amend keeps).

import (
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// CommitMsgRequest is one run of the commit-msg hook.
type CommitMsgRequest struct {
	// File is the commit message file git hands the hook.
	File string
	// Agent is the configured agent ("" reads `git config loopx.agent`).
	Agent string
	// Run is the lease a `loopx run` command holds (its LOOPX_* variables),
	// nil outside run.
	Run *RunLease
}

// RunLease is the lease of `loopx run`, as its command sees it.
type RunLease struct {
	Owner string
	Ref   lease.LeaseRef
}

// CommitMsgData is the result of guard commit-msg.
type CommitMsgData struct {
	AgentID  string   `json:"agent_id"`
	Trailers []string `json:"trailers"`
	Note     string   `json:"note,omitempty"`
}

// CommitMsg adds the code fence's trailers to a commit message (see the
// file comment).
func (a *Auditor) CommitMsg(req CommitMsgRequest) (*loopx.Result[CommitMsgData], error) {
	agent := req.Agent
	if req.Run != nil {
		agent = req.Run.Owner
	}
	if agent == "" {
		v, err := a.git.ConfigValue(GuardAgentConfigKey)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		agent = v
	}
	data := CommitMsgData{AgentID: agent, Trailers: []string{}}
	env := loopx.Envelope{Operation: "guard.commit-msg"}
	if agent == "" {
		data.Note = "no agent configured (LOOPX_AGENT_ID, git config loopx.agent): nothing added"
		return loopx.NewResult(a.s, env, time.Time{}, data), nil
	}
	if err := lease.CheckAgentID("agent id", agent); err != nil {
		return nil, err
	}
	refs := []lease.LeaseRef{}
	if req.Run != nil {
		refs = append(refs, req.Run.Ref)
	}
	head, err := a.localHead()
	if err != nil {
		return nil, err
	}
	env.CurrentRevision = records.Rev(head)
	if !head.IsZero() {
		sn, err := a.git.Snapshot(head)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		v := a.derived.View(sn)
		if m, err := v.Meta(); err == nil && m != nil {
			paths, err := a.git.StagedPaths()
			if err != nil {
				return nil, storeerr.Map(err)
			}
			own, err := lease.LeasesCovering(v, agent, paths, lease.Now(a.s.Now(), sn.Time()))
			if err != nil {
				return nil, storeerr.Map(err)
			}
			for _, r := range own {
				if !slices.Contains(refs, r) {
					refs = append(refs, r)
				}
			}
		}
	}
	data.Trailers = append(data.Trailers, lease.TrailerAgent+": "+agent)
	for _, r := range refs {
		data.Trailers = append(data.Trailers, lease.TrailerLease+": "+r.String())
	}
	if err := a.git.AddTrailers(req.File, map[string]bool{lease.TrailerAgent: true}, data.Trailers); err != nil {
		return nil, storeerr.Map(err)
	}
	return loopx.NewResult(a.s, env, time.Time{}, data), nil
}

// localHead is the state a commit-time hook reads without the network:
// the server's head as last fetched in remote mode, else the local ref.
func (a *Auditor) localHead() (gitstore.Hash, error) {
	if h, _, ok, err := a.s.LastKnownHead(); ok {
		return h, storeerr.Map(err)
	}
	h, err := a.git.Head()
	return h, storeerr.Map(err)
}

// ParseRunLease reads the lease `loopx run` gives its command (the LOOPX_*
// variables, as getenv returns them): nil when they are not all there.
func ParseRunLease(getenv func(string) string) (*RunLease, error) {
	owner, goal, todo, epoch := getenv("LOOPX_OWNER"), getenv("LOOPX_GOAL"), getenv("LOOPX_TODO"), getenv("LOOPX_EPOCH")
	if owner == "" || goal == "" || todo == "" || epoch == "" {
		return nil, nil
	}
	ref, err := lease.ParseLeaseRef(goal + "/" + todo + "@" + strings.TrimSpace(epoch))
	if err != nil {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "the LOOPX_* variables of loopx run do not name a lease: %v", err)
	}
	if err := lease.CheckAgentID("LOOPX_OWNER", owner); err != nil {
		return nil, err
	}
	return &RunLease{Owner: owner, Ref: ref}, nil
}
