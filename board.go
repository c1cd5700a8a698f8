package loopx

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// The board's one home. A mutation asks planBoard, after deciding, for the
// board of the goal it changed; the plan chains the board commit on the
// state commit (one ref update, one push) and, once the transaction is
// over, finishBoard saves the goal's model and reports the delivery. A board
// that could not be rendered in the transaction (a corrupt record elsewhere
// in the goal, an injected fault) is delivered by a transaction of its own,
// which may end "pending"; a replay delivers a board its first attempt left
// pending.
//
// Rendering uses, per goal, the board's model (markdown.Model) kept in a
// side file beside the store, tagged with the state revision it reflects.
// Delivering a board then costs what changed since that revision: the
// model is brought up to date from the tree diff between the two revisions
// (equal subtrees are never read) and the decision's own writes, and it
// fetches full records only for the todos it shows whose records changed.
// The side file is a cache: when it is missing, damaged, too far behind or
// disagrees with the records, the board is rendered from every record and
// the model rebuilt, so the bytes are the same either way
// (markdown.TestModelMatchesRender, TestBoardModelMatchesFullRender).
//
// A board is rendered at a render time (markdown.Board.Now), the decision
// time of the commit that delivers it: the state commit's time when the
// board commit is chained on it, the board commit's own time when it is
// delivered separately. The board commit is dated that time either way, so
// verify --history re-renders it at its own author time.

// boardPlan is what a decision's board needs once its transaction is over.
type boardPlan struct {
	goal    string
	model   *markdown.Model // to save at the state commit
	chained bool            // a board commit rides on the state commit
	current bool            // the committed board already shows the new state
	// Neither: the board is delivered in a transaction of its own.
}

// planBoard renders the board of o's goal as of the view (the decision's
// writes included) at the decision time now and, when its bytes change,
// returns the chained board commit to make on the state commit (dated now
// too). It never fails: what it cannot render is delivered separately.
func (s *Store) planBoard(sn *gitstore.Snapshot, v *lease.View, o *lease.Outcome, now time.Time) (*boardPlan, func(gitstore.Hash) (*gitstore.Proposal, error)) {
	if o.Goal == "" || !o.BoardChanged {
		return nil, nil
	}
	plan := &boardPlan{goal: o.Goal}
	if s.opts.FailProjection {
		return plan, nil
	}
	board, m, err := s.derived.Boards().Render(derived.TargetOf(sn, v, now), o.Goal)
	if err != nil || board == nil {
		return plan, nil
	}
	old, _, err := v.ReadFile(lease.BoardPath(o.Goal))
	if err != nil {
		return plan, nil
	}
	plan.model = m
	if bytes.Equal(old, board) {
		plan.current = true
		return plan, nil
	}
	plan.chained = true
	goal := o.Goal
	return plan, func(first gitstore.Hash) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: []gitstore.Change{{Path: lease.BoardPath(goal), Data: board}},
			Info: s.commitInfo("", lease.ProjectionMessage(goal, first.String()), now)}, nil
	}
}

// finishBoard saves the plan's model at the state commit and reports the
// board's delivery: the projection status, why it is pending, and the head
// afterwards. A replay (o not written) checks the goal's board and
// delivers it if its first attempt left it pending.
func (s *Store) finishBoard(plan *boardPlan, o *lease.Outcome, tx gitstore.TxResult) (status, reason string, head gitstore.Hash) {
	head = tx.Head
	if plan == nil && o.Status == lease.StatusReplayed && o.Goal != "" {
		plan = &boardPlan{goal: o.Goal}
	}
	if plan == nil {
		return ProjectionNotRequired, "", head
	}
	s.derived.Boards().Save(plan.goal, tx.State, plan.model)
	switch {
	case plan.chained:
		return ProjectionDelivered, "", head
	case plan.current:
		return ProjectionNotRequired, "", head
	}
	status, reason, err := s.deliverBoard(plan.goal, false)
	if err != nil {
		return ProjectionPending, storeerr.Map(err).Error(), head
	}
	if h, err := s.repo.Head(context.Background()); err == nil {
		head = h
	}
	return status, reason, head
}

// errProjectionInjected is the fault the FailProjection option injects.
var errProjectionInjected = errors.New("projection delivery failed (injected fault)")

// deliverBoard renders the goal's board from the current head at its own
// decision time and commits it, dated that time, in a commit of its own when
// its bytes changed (Loopx-Projection-Of names the head it rendered, its
// parent). full renders from every record (and
// rebuilds the goal's model) instead of from the model. A failure to commit
// leaves the state standing: status "pending" and why; err is set when the
// board cannot be rendered at all (a corrupt record).
func (s *Store) deliverBoard(goal string, full bool) (status, reason string, err error) {
	if s.opts.FailProjection {
		return ProjectionPending, errProjectionInjected.Error(), nil
	}
	var (
		delivered bool
		model     *markdown.Model
		renderErr error
	)
	tx, txErr := s.repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		delivered, model, renderErr = false, nil, nil
		v := s.viewOf(sn)
		clock := s.opts.now()
		now := lease.Now(clock, sn.Time())
		var board []byte
		if full {
			board, model, renderErr = derived.RenderFull(v, goal, now, markdown.RendererTimed)
		} else {
			board, model, renderErr = s.derived.Boards().Render(derived.TargetOf(sn, v, now), goal)
		}
		if renderErr != nil || board == nil {
			return nil, renderErr
		}
		old, _, err := v.ReadFile(lease.BoardPath(goal))
		if err != nil || bytes.Equal(old, board) {
			return nil, err
		}
		delivered = true
		meta, _ := v.Meta()
		if err := lease.CheckClock(clock, sn.Time(), lease.MaxClockSkew(meta)); err != nil {
			return nil, err
		}
		return &gitstore.Proposal{Changes: []gitstore.Change{{Path: lease.BoardPath(goal), Data: board}},
			Info: s.commitInfo("", lease.ProjectionMessage(goal, records.Rev(sn.Revision())), now)}, nil
	})
	if renderErr != nil {
		return ProjectionPending, storeerr.Map(renderErr).Error(), renderErr
	}
	if txErr != nil {
		return ProjectionPending, storeerr.Map(txErr).Error(), nil
	}
	s.derived.Boards().Save(goal, tx.Base, model)
	if delivered {
		return ProjectionDelivered, "", nil
	}
	return ProjectionNotRequired, "", nil
}

// boardPending reports whether the goal's committed board is not what the
// head's records render at the time it was rendered. A board is rendered at
// the decision time of the commit that delivers it, and a commit that cannot
// change the board (a renewal) delivers none, so a claim that expired after
// the board was rendered still shows until the next board-changing commit:
// the board is up to date when it is the rendering of the head's records at
// the head's time, or at the time of the last commit that wrote it.
func (s *Store) boardPending(v *lease.View, goal string) (bool, error) {
	board, m, err := derived.RenderFull(v, goal, v.HeadTime, markdown.RendererTimed)
	if err != nil || board == nil {
		return false, err
	}
	old, _, err := v.ReadFile(lease.BoardPath(goal))
	if err != nil {
		return false, err
	}
	if bytes.Equal(old, board) {
		return false, nil
	}
	at, ok := s.boardWrittenAt(v, goal)
	if !ok || at.Equal(v.HeadTime) {
		return true, nil
	}
	if board, err = m.Render(derived.Records{View: v, Goal: goal}, at); err != nil {
		return false, err
	}
	return !bytes.Equal(old, board), nil
}

// boardWalkLimit bounds how far back boardWrittenAt looks.
const boardWalkLimit = 1000

// boardWrittenAt is the author time of the newest commit on the view's
// first-parent history that changed the goal's board, looking back at most
// boardWalkLimit commits.
func (s *Store) boardWrittenAt(v *lease.View, goal string) (time.Time, bool) {
	head := gitstore.ParseHash(v.Revision)
	if head.IsZero() {
		return time.Time{}, false
	}
	path, dir := lease.BoardPath(goal), lease.GoalDir(goal)
	errFound := errors.New("found")
	var at time.Time
	n := 0
	err := s.repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if n++; n > boardWalkLimit {
			return false, nil
		}
		err := s.repo.DiffHashes(c.Parent, c.Hash, dir, func(p string, _, _ gitstore.Hash) error {
			if p == path {
				return errFound
			}
			return nil
		})
		if err == errFound {
			at = c.When.UTC()
			return false, nil
		}
		return err == nil, err
	})
	return at, err == nil && !at.IsZero()
}
