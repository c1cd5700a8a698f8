package loopx

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// files adapts a gitstore snapshot to lease.Files.
type files struct{ sn *gitstore.Snapshot }

func (f files) Read(p string) ([]byte, bool, error) { return f.sn.Read(p) }
func (f files) Walk(dir string, fn func(string, []byte) error) error {
	return f.sn.Walk(dir, fn)
}
func (f files) WalkHashes(dir string, fn func(path, hash string) error) error {
	return f.sn.WalkHashes(dir, func(p string, h gitstore.Hash) error { return fn(p, h.String()) })
}
func (f files) ReadHash(hash string) ([]byte, error) {
	return f.sn.ReadBlob(gitstore.ParseHash(hash))
}
func (f files) List(dir string) ([]string, error) {
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

func revString(h gitstore.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// viewOf returns the records view of a snapshot, sharing the store's
// decoded-record cache.
func (s *Store) viewOf(sn *gitstore.Snapshot) *lease.View {
	v := lease.NewView(files{sn}, revString(sn.Revision()), sn.Time())
	v.UseCache(s.cache)
	// Which todos depend on one (todo show's unblocks) comes from the
	// goal's board model, which holds every todo's dependencies, instead
	// of a scan of every todo.
	v.UseDependents(func(goal, id string) ([]string, bool) {
		m := s.loadBoardModel(sn, v, goal)
		if m == nil {
			return nil, false
		}
		return m.Dependents(id), true
	})
	return v
}

// decideFunc is one pure decision on a view at a decision time.
type decideFunc func(v *lease.View, now time.Time) (*lease.Outcome, error)

// read runs a read-only decision on the current head.
func (s *Store) read(decide decideFunc) (*Result, error) {
	head, err := s.readHead(context.Background())
	if err != nil {
		return nil, mapErr(err)
	}
	sn, err := s.git.Snapshot(head)
	if err != nil {
		return nil, mapErr(err)
	}
	v := s.viewOf(sn)
	now := lease.Now(s.opts.now(), sn.Time())
	o, err := decide(v, now)
	if err != nil {
		return nil, mapErr(err)
	}
	return s.annotate(&Result{Operation: o.Operation, CurrentRevision: revString(head), Data: o.Data}, now), nil
}

func authorEmail(actor string) string { return actor + "@loopx.invalid" }

// mutate runs decide in a transaction on the state ref and delivers the
// board when the decision may have changed it.
//
// The board is rendered in the same transaction, from the decision's view,
// and its commit is chained on the state commit (gitstore.Proposal.Next):
// two commits, the board's naming the state commit it renders, installed by
// one ref update (with a remote: one push). A board that cannot be rendered
// there, and an injected projection fault, take the separate delivery of
// deliverBoard, which may end "pending".
func (s *Store) mutate(decide decideFunc) (*Result, error) {
	ctx := context.Background()
	var (
		out        *lease.Outcome
		stateRev   gitstore.Hash // the state commit, when a board commit was chained on it
		boardDone  bool          // the board was delivered (or found current) in the transaction
		model      *markdown.Model
		modelGoal  string
		chainBoard = !s.opts.FailProjection
	)
	head, err := s.transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		stateRev, boardDone, model = gitstore.ZeroHash, false, nil
		v := s.viewOf(sn)
		now := lease.Now(s.opts.now(), sn.Time())
		o, err := decide(v, now)
		if err != nil {
			return nil, err
		}
		out = o
		if !o.Write {
			return nil, nil
		}
		changes := v.Changes()
		if err := lease.CheckRecordSizes(changes); err != nil {
			return nil, err
		}
		p := &gitstore.Proposal{Info: commitInfo(o.Actor, o.Message(), now)}
		for _, c := range changes {
			p.Changes = append(p.Changes, gitstore.Change{Path: c.Path, Data: c.Data, Delete: c.Data == nil})
		}
		if !chainBoard || o.Goal == "" || !o.BoardChanged {
			return p, nil
		}
		board, m, err := s.renderBoardModel(sn, v, o.Goal)
		if err != nil || board == nil {
			return p, nil // delivered (or reported pending) separately
		}
		old, _, err := v.ReadFile(lease.BoardPath(o.Goal))
		if err != nil {
			return p, nil
		}
		boardDone, model, modelGoal = true, m, o.Goal
		if bytes.Equal(old, board) {
			return p, nil
		}
		goal := o.Goal
		p.Next = func(first gitstore.Hash) (*gitstore.Proposal, error) {
			stateRev = first
			info := commitInfo("", lease.ProjectionMessage(goal, first.String()), now)
			return &gitstore.Proposal{Changes: []gitstore.Change{{Path: lease.BoardPath(goal), Data: board}}, Info: info}, nil
		}
		return p, nil
	})
	if err != nil {
		return nil, mapErr(err)
	}
	if boardDone {
		rev := head
		if !stateRev.IsZero() {
			rev = stateRev
		}
		s.saveBoardModel(modelGoal, rev, model)
	}
	if out.Write && s.opts.AfterCommit != nil {
		s.opts.AfterCommit()
	}
	res := &Result{Operation: out.Operation, Mutation: true, Status: out.Status,
		CurrentRevision: revString(head), Projection: ProjectionNotRequired, Data: out.Data}
	switch {
	case out.Write && !stateRev.IsZero():
		res.Revision = revString(stateRev)
		res.Projection = ProjectionDelivered
	case out.Write:
		res.Revision = revString(head)
	case out.Status == lease.StatusReplayed && out.ReplayOf != "":
		res.Revision = s.appliedAt(head, out.ReplayOf)
	case out.Status == lease.StatusReplayed:
		res.Revision = s.lastApplied(head, out)
	default:
		res.Revision = revString(head)
	}
	// A replay may answer a retry whose first attempt committed but never
	// delivered the board (lost response, failed projection): deliver it now
	// if it is pending, so "not_required" is never said of a stale board.
	if out.Goal != "" && !boardDone && (out.Write && out.BoardChanged || out.Status == lease.StatusReplayed) {
		res.Projection, res.ProjectionError = s.deliverBoard(out.Goal, false)
		if res.Projection == ProjectionDelivered || res.Projection == ProjectionNotRequired {
			if h, err := s.git.Head(); err == nil {
				res.CurrentRevision = revString(h)
			}
		}
	}
	return s.annotate(res, time.Time{}), nil
}

func commitInfo(actor, msg string, now time.Time) gitstore.CommitInfo {
	name := actor
	if name == "" {
		name = "loopx"
	}
	return gitstore.CommitInfo{Message: msg, AuthorName: name, AuthorEmail: authorEmail(name),
		CommitterName: "loopx", CommitterEmail: "loopx@loopx.invalid", When: now}
}

// appliedAt finds the commit that first applied a receipt decided on
// revision decidedOn: that revision's child on the state ref's history.
func (s *Store) appliedAt(head gitstore.Hash, decidedOn string) string {
	found := ""
	_ = s.git.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if revString(c.Parent) == decidedOn {
			found = c.Hash.String()
			return false, nil
		}
		return true, nil
	})
	return found
}

// lastApplied finds the newest commit that applied the outcome's operation
// on its todo (replays without a receipt, e.g. a repeated completion).
func (s *Store) lastApplied(head gitstore.Hash, o *lease.Outcome) string {
	found := ""
	_ = s.git.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		e, ok := lease.ParseMessage(c.Message)
		if ok && e.Operation == o.Operation && e.Goal == o.Goal && e.Todo == o.Todo && e.Status == lease.StatusApplied {
			found = c.Hash.String()
			return false, nil
		}
		return true, nil
	})
	return found
}

// errProjectionInjected is the fault the FailProjection option injects.
var errProjectionInjected = errors.New("projection delivery failed (injected fault)")

// deliverBoard renders the goal's board from the current head and commits it
// in a separate commit when its bytes changed. A failure leaves the state
// commit standing and reports "pending". full renders from every record
// (and rebuilds the goal's model) instead of from the model.
func (s *Store) deliverBoard(goal string, full bool) (status, reason string) {
	if s.opts.FailProjection {
		return ProjectionPending, errProjectionInjected.Error()
	}
	delivered := false
	var (
		model *markdown.Model
		rev   gitstore.Hash
	)
	_, err := s.transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		delivered, model, rev = false, nil, sn.Revision()
		v := s.viewOf(sn)
		var board []byte
		var err error
		if full {
			board, model, err = renderBoardFull(v, goal)
		} else {
			board, model, err = s.renderBoardModel(sn, v, goal)
		}
		if err != nil || board == nil {
			return nil, err
		}
		old, _, err := v.ReadFile(lease.BoardPath(goal))
		if err != nil || bytes.Equal(old, board) {
			return nil, err
		}
		delivered = true
		now := lease.Now(s.opts.now(), sn.Time())
		info := commitInfo("", lease.ProjectionMessage(goal, revString(sn.Revision())), now)
		return &gitstore.Proposal{Changes: []gitstore.Change{{Path: lease.BoardPath(goal), Data: board}}, Info: info}, nil
	})
	if err != nil {
		return ProjectionPending, mapErr(err).Error()
	}
	s.saveBoardModel(goal, rev, model)
	if delivered {
		return ProjectionDelivered, ""
	}
	return ProjectionNotRequired, ""
}

// renderBoardFull renders a goal's board from every record of a view, and
// the model it was drawn from; nil when the goal is absent.
func renderBoardFull(v *lease.View, goal string) ([]byte, *markdown.Model, error) {
	g, err := v.Goal(goal)
	if err != nil || g == nil {
		return nil, nil, err
	}
	todos, err := v.Todos(goal)
	if err != nil {
		return nil, nil, err
	}
	leases, err := v.Leases(goal)
	if err != nil {
		return nil, nil, err
	}
	board, m := markdown.RenderModel(markdown.Board{Goal: g, Todos: todos, Leases: leases})
	return board, m, nil
}

// boardPending reports whether the goal's committed board differs from what
// the head renders.
func boardPending(v *lease.View, goal string) (bool, error) {
	board, _, err := renderBoardFull(v, goal)
	if err != nil || board == nil {
		return false, err
	}
	old, _, err := v.ReadFile(lease.BoardPath(goal))
	if err != nil {
		return false, err
	}
	return !bytes.Equal(old, board), nil
}
