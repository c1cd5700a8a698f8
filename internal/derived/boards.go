package derived

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
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
// rendered text of what it shows) is kept per goal beside the store: its
// root in <common dir>/loopx-cache/board-<hex goal id>, tagged with the
// state commit it reflects, and its pages, named by their content, in
// <common dir>/loopx-cache/board-<hex goal id>.pages/. A render loads the
// root, brings the model up to date from the tree diff between that
// commit and the one rendered (equal subtrees are never read) plus the
// decision's own writes, reads only the pages it needs (a changed
// record's, and those holding what the board shows), and fetches full
// records only for the todos it shows whose records changed; saving
// writes the changed pages and a new root. When the root is missing,
// damaged, more than modelCatchUp records behind, or the model meets a
// record it does not know or a page that is missing or damaged, the board
// is rendered from every record and the model rebuilt, so the bytes never
// depend on it (markdown.TestModelMatchesRender,
// TestBoardModelMatchesFullRender). The model holds the todos that depend
// on each todo, which answers todo show's unblocks from the root alone.
//
// A page a new root no longer names is removed by the save after next, so
// that a process that loaded the previous root still finds its pages;
// pages left by saves that raced are swept now and then (sweepEvery).

// modelCatchUp is how many changed records a model is brought up to date
// with before a full rebuild is cheaper.
const modelCatchUp = 256

// boardVersion is the version of the root's side file: 2, a model in
// pages (1: one file holding every todo).
const boardVersion = 2

// boardIndex is the board model of every goal.
type boardIndex struct {
	repo gitstore.Repo
}

var _ Index[*markdown.Model] = (*boardIndex)(nil)

func newBoardIndex(repo gitstore.Repo) *boardIndex { return &boardIndex{repo: repo} }

// boardFile is the root's side file of goal; its pages are in
// boardFile(goal) + ".pages/".
func boardFile(goal string) string { return "loopx-cache/board-" + hex.EncodeToString([]byte(goal)) }

// pageSource reads a goal's saved pages.
type pageSource struct {
	repo gitstore.Repo
	dir  string
}

func (p pageSource) Page(name string) ([]byte, error) { return p.repo.ReadSideFile(p.dir + "/" + name) }

// Load reads goal's saved model (its root: pages are read as needed) and
// the revision it reflects.
func (b *boardIndex) Load(goal string) (*markdown.Model, gitstore.Hash, bool) {
	data, err := b.repo.ReadSideFile(boardFile(goal))
	if err != nil || data == nil {
		return nil, gitstore.ZeroHash, false
	}
	rev, body, ok := decode("board", boardVersion, data)
	if !ok || rev.IsZero() {
		return nil, gitstore.ZeroHash, false
	}
	_, root, ok := splitRetired(body)
	if !ok {
		return nil, gitstore.ZeroHash, false
	}
	m, err := markdown.LoadModel(root, pageSource{b.repo, boardFile(goal) + ".pages"})
	if err != nil {
		return nil, gitstore.ZeroHash, false
	}
	return m, rev, true
}

// The root's side file body: the pages the previous save retired (a
// count, then each name, each a uvarint length and the bytes), then the
// model's root.
func splitRetired(body []byte) (retired []string, root []byte, ok bool) {
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)) {
		return nil, nil, false
	}
	body = body[k:]
	for range n {
		l, k := binary.Uvarint(body)
		if k <= 0 || l > uint64(len(body)-k) {
			return nil, nil, false
		}
		retired = append(retired, string(body[k:k+int(l)]))
		body = body[k+int(l):]
	}
	return retired, body, true
}

// isPageName reports whether n can name a page (markdown's names: 32
// lowercase hex digits), so that a name read back is never a path.
func isPageName(n string) bool {
	if len(n) != 32 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// sideRemover is a repository whose side files can be removed and listed
// (gitstore.Store; an in-memory repository keeps them).
type sideRemover interface {
	RemoveSideFile(name string) error
	SideFiles(dir string, olderThan time.Duration) ([]string, error)
}

// sweepEvery: about one save in sweepEvery lists the goal's pages and
// removes those no root names (left by saves that raced), when they are
// older than sweepAge (a save in progress writes its pages first).
const (
	sweepEvery = 64
	sweepAge   = time.Minute
)

// Save keeps m as goal's model at rev (best effort: a cache): its changed
// pages, then its root; the pages the previous save retired and this root
// does not name are removed.
func (b *boardIndex) Save(goal string, rev gitstore.Hash, m *markdown.Model) {
	if rev.IsZero() {
		return
	}
	dir := boardFile(goal) + ".pages"
	root, unused, err := m.Save(func(name string, data []byte) error {
		return b.repo.WriteSideFile(dir+"/"+name, data, false)
	})
	if err != nil {
		return
	}
	var prev []string
	if data, err := b.repo.ReadSideFile(boardFile(goal)); err == nil && data != nil {
		if _, body, ok := decode("board", boardVersion, data); ok {
			prev, _, _ = splitRetired(body)
		}
	}
	body := binary.AppendUvarint(nil, uint64(len(unused)))
	for _, n := range unused {
		body = binary.AppendUvarint(body, uint64(len(n)))
		body = append(body, n...)
	}
	body = append(body, root...)
	if b.repo.WriteSideFile(boardFile(goal), encode("board", boardVersion, rev, body), false) != nil {
		return
	}
	rm, ok := b.repo.(sideRemover)
	if !ok {
		return
	}
	live := m.Pages()
	for _, n := range prev {
		if _, found := slices.BinarySearch(live, n); !found && !slices.Contains(unused, n) && isPageName(n) {
			_ = rm.RemoveSideFile(dir + "/" + n)
		}
	}
	if crc32.ChecksumIEEE(root)%sweepEvery == 0 {
		old, err := rm.SideFiles(dir, sweepAge)
		if err != nil {
			return
		}
		for _, n := range old {
			if !isPageName(n) {
				continue
			}
			if _, found := slices.BinarySearch(live, n); !found && !slices.Contains(unused, n) {
				_ = rm.RemoveSideFile(dir + "/" + n)
			}
		}
	}
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
	// Todos before leases: a lease's todo is then found where its own
	// change put it (the model looks a todo up by id in each priority
	// otherwise).
	todos := lease.TodosDir(goal) + "/"
	slices.SortFunc(paths, func(a, b string) int {
		if ta, tb := strings.HasPrefix(a, todos), strings.HasPrefix(b, todos); ta != tb {
			if ta {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
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
			return m.DeleteTodo(id)
		}
		return m.PutTodo(t)
	case strings.HasPrefix(p, lease.LeasesDir(goal)+"/"):
		if p != lease.LeasePath(goal, id) {
			return errNotARecord
		}
		l, err := v.Lease(goal, id)
		if err != nil {
			return err
		}
		if l == nil {
			return m.DeleteLease(id)
		}
		return m.PutLease(l)
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
