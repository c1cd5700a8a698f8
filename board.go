package loopx

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// Board delivery keeps, per goal, the board's model (markdown.Model) in a
// side file beside the store, tagged with the state revision it reflects.
// Delivering a board then costs what changed since that revision: the
// model is brought up to date from the tree diff between the two revisions
// (equal subtrees are never read) and the decision's own writes, and it
// fetches full records only for the todos it shows whose records changed.
// The side file is a cache: when it is missing, damaged, too far behind or
// disagrees with the records, the board is rendered from every record and
// the model rebuilt, so the bytes are the same either way
// (markdown.TestModelMatchesRender, TestBoardModelMatchesFullRender).

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
// (v's writes included) from the goal's model, and returns the model for
// saving once that state is committed. It returns nil bytes when the goal
// does not exist.
func (s *Store) renderBoardModel(sn *gitstore.Snapshot, v *lease.View, goal string) ([]byte, *markdown.Model, error) {
	g, err := v.Goal(goal)
	if err != nil || g == nil {
		return nil, nil, err
	}
	if m := s.loadBoardModel(sn, v, goal); m != nil {
		m.SetGoal(g)
		board, err := m.Render(viewRecords{v, goal})
		if err == nil {
			return board, m, nil
		}
		if _, stale := errors.AsType[*markdown.StaleError](err); !stale {
			return nil, nil, err
		}
	}
	return renderBoardFull(v, goal)
}

// loadBoardModel returns the goal's saved model brought up to date with
// the view, or nil when there is none or it cannot be (the caller then
// rebuilds it; a record that fails to decode is reported by that rebuild).
func (s *Store) loadBoardModel(sn *gitstore.Snapshot, v *lease.View, goal string) *markdown.Model {
	data, err := s.git.ReadSideFile(boardModelName(goal))
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
	err = s.git.DiffHashes(base, sn.Revision(), lease.GoalDir(goal), func(p string, _, _ gitstore.Hash) error {
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
	_ = s.git.WriteSideFile(boardModelName(goal), b.Bytes(), false)
}
