package derived

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// The board models beside the store.
//
// Rendering a goal's board from every record costs O(todos); the board's
// model (markdown.Model, the board as an index in board order with the
// rendered text of what it shows) is kept per goal in
// <common dir>/loopx-cache/board-<hex goal id>, tagged with the state
// commit it reflects. A render brings it up to date from the tree diff
// between that commit and the one rendered (equal subtrees are never
// read) plus the decision's own writes, and fetches full records only for
// the todos it shows whose records changed. When it is missing, damaged,
// more than modelCatchUp records behind, or meets a record it does not
// know, the board is rendered from every record and the model rebuilt, so
// the bytes never depend on it (markdown.TestModelMatchesRender,
// TestBoardModelMatchesFullRender). The model holds every todo's
// dependencies, which answers todo show's unblocks too.

// modelCatchUp is how many changed records a model is brought up to date
// with before a full rebuild is cheaper.
const modelCatchUp = 256

// boardIndex is the board model of every goal.
type boardIndex struct {
	sideFile[*markdown.Model]
}

var _ Index[*markdown.Model] = (*boardIndex)(nil)

func newBoardIndex(repo gitstore.Repo) *boardIndex {
	return &boardIndex{sideFile[*markdown.Model]{repo: repo, kind: "board", version: 1,
		file:   func(goal string) string { return "loopx-cache/board-" + hex.EncodeToString([]byte(goal)) },
		encode: (*markdown.Model).Encode,
		decode: markdown.DecodeModel,
	}}
}

// CatchUp applies to m the goal's records that changed between rev and the
// target, and the target view's own writes.
func (b *boardIndex) CatchUp(m *markdown.Model, rev gitstore.Hash, to Target, goal string) (*markdown.Model, int, error) {
	dir := lease.GoalDir(goal)
	changed := map[string]bool{}
	if _, err := changes(b.repo, rev, to.Rev, dir, modelCatchUp, func(p string, _ gitstore.Hash) error {
		changed[p] = true
		return nil
	}); err != nil {
		return nil, 0, err
	}
	for _, c := range to.View.Changes() {
		if strings.HasPrefix(c.Path, dir+"/") {
			changed[c.Path] = true
		}
	}
	paths := make([]string, 0, len(changed))
	for p := range changed {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := applyToModel(m, to.View, goal, p); err != nil {
			return nil, 0, err
		}
	}
	return m, len(paths), nil
}

// Rebuild draws the goal's model from every record of the target (at its
// render time).
func (b *boardIndex) Rebuild(to Target, goal string) (*markdown.Model, error) {
	board, m, err := RenderFull(to.View, goal, to.Now, markdown.RendererTimed)
	if err == nil && board == nil {
		err = errNoGoal
	}
	return m, err
}

var errNoGoal = errors.New("no such goal")

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

// Boards are the goals' board models beside the store.
type Boards struct{ ix *boardIndex }

// NewBoards are the board models beside repo.
func NewBoards(repo gitstore.Repo) Boards { return Boards{newBoardIndex(repo)} }

// Model returns the goal's saved model brought up to date with the target,
// or nil when there is none or it cannot be (the caller then rebuilds it;
// a record that fails to decode is reported by that rebuild).
func (b Boards) Model(to Target, goal string) *markdown.Model {
	m, _, _, err := bringUp[*markdown.Model](b.ix, goal, to, nil, gitstore.ZeroHash, false, false)
	if err != nil {
		return nil
	}
	return m
}

// CatchUp brings m, a model at rev, up to the target; false when it
// cannot be (rebuild it).
func (b Boards) CatchUp(m *markdown.Model, rev gitstore.Hash, to Target, goal string) bool {
	_, _, err := b.ix.CatchUp(m, rev, to, goal)
	return err == nil
}

// Render renders the goal's board as of the target view (its writes
// included) at the target's render time from the goal's model, and returns
// the model for saving once that state is committed. It returns nil bytes
// when the goal does not exist.
func (b Boards) Render(to Target, goal string) ([]byte, *markdown.Model, error) {
	g, err := to.View.Goal(goal)
	if err != nil || g == nil {
		return nil, nil, err
	}
	if m := b.Model(to, goal); m != nil {
		m.SetGoal(g)
		board, err := m.Render(Records{to.View, goal}, to.Now)
		if err == nil {
			return board, m, nil
		}
		if _, stale := errors.AsType[*markdown.StaleError](err); !stale {
			return nil, nil, err
		}
	}
	return RenderFull(to.View, goal, to.Now, markdown.RendererTimed)
}

// Save keeps m as the model of goal at the state revision rev (best
// effort: it is a cache).
func (b Boards) Save(goal string, rev gitstore.Hash, m *markdown.Model) {
	if m != nil {
		b.ix.Save(goal, rev, m)
	}
}

// RenderFull renders a goal's board from every record of a view at the
// render time now with renderer r (markdown.RendererTimed; history
// verification checks a board commit against the renderer that drew it),
// and the model it was drawn from; nil when the goal is absent.
func RenderFull(v *lease.View, goal string, now time.Time, r int) ([]byte, *markdown.Model, error) {
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

// Records fetches a goal's records from a view for a model's Render.
type Records struct {
	View *lease.View
	Goal string
}

func (r Records) Todo(id string) (*lease.Todo, error)   { return r.View.Todo(r.Goal, id) }
func (r Records) Lease(id string) (*lease.Lease, error) { return r.View.Lease(r.Goal, id) }
