package loopx

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
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
	// separate: deliver in a transaction of its own (not rendered here).
	separate bool
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
		plan.separate = true
		return plan, nil
	}
	board, m, err := s.renderBoardModel(sn, v, o.Goal, now)
	if err != nil || board == nil {
		plan.separate = true
		return plan, nil
	}
	old, _, err := v.ReadFile(lease.BoardPath(o.Goal))
	if err != nil {
		plan.separate = true
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
		plan = &boardPlan{goal: o.Goal, separate: true}
	}
	if plan == nil {
		return ProjectionNotRequired, "", head
	}
	if plan.model != nil {
		s.saveBoardModel(plan.goal, tx.State, plan.model)
	}
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
			board, model, renderErr = renderBoardFull(v, goal, now)
		} else {
			board, model, renderErr = s.renderBoardModel(sn, v, goal, now)
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
	s.saveBoardModel(goal, tx.Base, model)
	if delivered {
		return ProjectionDelivered, "", nil
	}
	return ProjectionNotRequired, "", nil
}

// renderBoardFull renders a goal's board from every record of a view at the
// render time now, and the model it was drawn from; nil when the goal is
// absent.
func renderBoardFull(v *lease.View, goal string, now time.Time) ([]byte, *markdown.Model, error) {
	return renderBoardWith(v, goal, now, markdown.RendererTimed)
}

// renderBoardWith is renderBoardFull with renderer r (history verification
// checks a board commit against the renderer that drew it).
func renderBoardWith(v *lease.View, goal string, now time.Time, r int) ([]byte, *markdown.Model, error) {
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
	board, m := markdown.RenderModel(markdown.Board{Goal: g, Todos: todos, Leases: leases, Now: now, Renderer: r})
	return board, m, nil
}

// boardPending reports whether the goal's committed board is not what the
// head's records render at the time it was rendered. A board is rendered at
// the decision time of the commit that delivers it, and a commit that cannot
// change the board (a renewal) delivers none, so a claim that expired after
// the board was rendered still shows until the next board-changing commit:
// the board is up to date when it is the rendering of the head's records at
// the head's time, or at the time of the last commit that wrote it.
func (s *Store) boardPending(v *lease.View, goal string) (bool, error) {
	board, m, err := renderBoardFull(v, goal, v.HeadTime)
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
	if board, err = m.Render(viewRecords{v, goal}, at); err != nil {
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

// modelCatchUp is how many changed records a model is brought up to date
// with before a full rebuild is cheaper.
const modelCatchUp = 256

// boardModelName is the side file of a goal's board model.
func boardModelName(goal string) string {
	return "loopx-cache/board-" + hex.EncodeToString([]byte(goal))
}

// viewRecords fetches a goal's records from a view for a model.
type viewRecords struct {
	v    *lease.View
	goal string
}

func (r viewRecords) Todo(id string) (*lease.Todo, error)   { return r.v.Todo(r.goal, id) }
func (r viewRecords) Lease(id string) (*lease.Lease, error) { return r.v.Lease(r.goal, id) }

// renderBoardModel renders goal's board as of the view v of snapshot sn
// (v's writes included) at the render time now from the goal's model, and
// returns the model for saving once that state is committed. It returns nil
// bytes when the goal does not exist.
func (s *Store) renderBoardModel(sn *gitstore.Snapshot, v *lease.View, goal string, now time.Time) ([]byte, *markdown.Model, error) {
	g, err := v.Goal(goal)
	if err != nil || g == nil {
		return nil, nil, err
	}
	if m := s.loadBoardModel(sn, v, goal); m != nil {
		m.SetGoal(g)
		board, err := m.Render(viewRecords{v, goal}, now)
		if err == nil {
			return board, m, nil
		}
		if _, stale := errors.AsType[*markdown.StaleError](err); !stale {
			return nil, nil, err
		}
	}
	return renderBoardFull(v, goal, now)
}

// loadBoardModel returns the goal's saved model brought up to date with
// the view, or nil when there is none or it cannot be (the caller then
// rebuilds it; a record that fails to decode is reported by that rebuild).
func (s *Store) loadBoardModel(sn *gitstore.Snapshot, v *lease.View, goal string) *markdown.Model {
	data, err := s.repo.ReadSideFile(boardModelName(goal))
	if err != nil || len(data) < 41 || data[40] != '\n' {
		return nil
	}
	base := gitstore.ParseHash(string(data[:40]))
	if base.IsZero() {
		return nil
	}
	m, err := markdown.DecodeModel(data[41:])
	if err != nil {
		return nil
	}
	dir := lease.GoalDir(goal) + "/"
	changed := map[string]bool{}
	errTooFar := errors.New("too far behind")
	err = s.repo.DiffHashes(base, sn.Revision(), lease.GoalDir(goal), func(p string, _, _ gitstore.Hash) error {
		changed[p] = true
		if len(changed) > modelCatchUp {
			return errTooFar
		}
		return nil
	})
	if err != nil {
		return nil
	}
	for _, c := range v.Changes() {
		if strings.HasPrefix(c.Path, dir) {
			changed[c.Path] = true
		}
	}
	paths := make([]string, 0, len(changed))
	for p := range changed {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := applyToModel(m, v, goal, p); err != nil {
			return nil
		}
	}
	return m
}

var errNotARecord = errors.New("not a record path")

// applyToModel sets the model's copy of the record at p to what the view
// holds there. Paths outside the goal's todos and leases do not concern it.
func applyToModel(m *markdown.Model, v *lease.View, goal, p string) error {
	id := lease.RecordID(p)
	switch {
	case strings.HasPrefix(p, lease.TodosDir(goal)+"/"):
		if p != lease.TodoPath(goal, id) {
			return errNotARecord
		}
		t, err := v.Todo(goal, id)
		if err != nil {
			return err
		}
		if t == nil {
			m.DeleteTodo(id)
		} else {
			m.PutTodo(t)
		}
	case strings.HasPrefix(p, lease.LeasesDir(goal)+"/"):
		if p != lease.LeasePath(goal, id) {
			return errNotARecord
		}
		l, err := v.Lease(goal, id)
		if err != nil {
			return err
		}
		if l == nil {
			m.DeleteLease(id)
		} else {
			m.PutLease(l)
		}
	}
	return nil
}

// saveBoardModel keeps m as the model of goal at the state revision rev
// (best effort: it is a cache).
func (s *Store) saveBoardModel(goal string, rev gitstore.Hash, m *markdown.Model) {
	if m == nil || rev.IsZero() {
		return
	}
	var b bytes.Buffer
	b.WriteString(rev.String())
	b.WriteByte('\n')
	b.Write(m.Encode())
	_ = s.repo.WriteSideFile(boardModelName(goal), b.Bytes(), false)
}
