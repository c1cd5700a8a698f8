package gitstore

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// Tree entry modes, as git writes them.
const (
	modeTree    = 0o40000
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// emptyTree is the name of the tree with no entries.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

type treeEntry struct {
	name string
	mode uint32
	hash Hash
}

func (e *treeEntry) isDir() bool { return e.mode == modeTree }

// isBlob reports whether the entry names file content the store can read.
func (e *treeEntry) isBlob() bool {
	return e.mode == modeFile || e.mode == modeExec || e.mode == modeSymlink
}

// tree is a decoded tree object; entries are in git order.
type tree struct {
	entries []treeEntry
}

// gitLess orders tree entries the way git does: by name, a directory's name
// compared as if it ended with '/'.
func gitLess(a string, aDir bool, b string, bDir bool) bool {
	n := min(len(a), len(b))
	if a[:n] != b[:n] {
		return a[:n] < b[:n]
	}
	var ca, cb byte
	if len(a) > n {
		ca = a[n]
	} else if aDir {
		ca = '/'
	}
	if len(b) > n {
		cb = b[n]
	} else if bDir {
		cb = '/'
	}
	return ca < cb
}

// find returns the index of the entry called name, or -1.
func (t *tree) find(name string) int {
	for _, dir := range [2]bool{false, true} {
		i := sort.Search(len(t.entries), func(i int) bool {
			e := &t.entries[i]
			return !gitLess(e.name, e.isDir(), name, dir)
		})
		if i < len(t.entries) && t.entries[i].name == name {
			return i
		}
	}
	return -1
}

// insertPos returns where an entry (name, dir) belongs.
func (t *tree) insertPos(name string, dir bool) int {
	return sort.Search(len(t.entries), func(i int) bool {
		e := &t.entries[i]
		return !gitLess(e.name, e.isDir(), name, dir)
	})
}

// parseTree decodes the content of a tree object.
func parseTree(data []byte) (*tree, error) {
	t := &tree{}
	// Estimate the number of entries to size the slice once.
	t.entries = make([]treeEntry, 0, len(data)/40+1)
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("gitstore: corrupt tree: no mode")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("gitstore: corrupt tree: mode %q", data[:sp])
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return nil, fmt.Errorf("gitstore: corrupt tree: truncated entry")
		}
		e := treeEntry{name: string(data[:nul]), mode: uint32(mode)}
		copy(e.hash[:], data[nul+1:nul+21])
		t.entries = append(t.entries, e)
		data = data[nul+21:]
	}
	return t, nil
}

// encode returns the content of the tree object for t.
func (t *tree) encode() []byte {
	n := 0
	for i := range t.entries {
		n += 7 + len(t.entries[i].name) + 1 + 20
	}
	buf := make([]byte, 0, n)
	for i := range t.entries {
		e := &t.entries[i]
		buf = strconv.AppendUint(buf, uint64(e.mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.name...)
		buf = append(buf, 0)
		buf = append(buf, e.hash[:]...)
	}
	return buf
}

// treeCache holds decoded trees by name. Trees are immutable, so entries are
// shared by every snapshot; the cache is bounded by the total number of
// entries and simply emptied when full.
type treeCache struct {
	m       map[Hash]*tree
	entries int
}

const treeCacheMaxEntries = 1 << 20

func (c *treeCache) get(h Hash) *tree { return c.m[h] }

func (c *treeCache) put(h Hash, t *tree) {
	if c.m == nil {
		c.m = make(map[Hash]*tree)
	}
	if _, ok := c.m[h]; ok {
		return
	}
	if c.entries+len(t.entries) > treeCacheMaxEntries {
		c.reset()
		c.m = make(map[Hash]*tree)
	}
	c.m[h] = t
	c.entries += len(t.entries)
}

func (c *treeCache) reset() {
	c.m = nil
	c.entries = 0
}

// loadTree returns the decoded tree h. Callers hold s.mu.
func (s *Store) loadTree(h Hash) (*tree, error) {
	if h == emptyTree {
		return &tree{}, nil
	}
	if t := s.trees.get(h); t != nil {
		return t, nil
	}
	typ, data, err := s.odb.read(h)
	if err != nil {
		return nil, err
	}
	if typ != plumbing.TreeObject {
		return nil, fmt.Errorf("gitstore: object %s is a %s, not a tree", h, typ)
	}
	t, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, h)
	}
	s.trees.put(h, t)
	return t, nil
}

// lookup walks comps from root and returns the entry they name. ok is false
// if some component is missing or a non-final component is not a directory.
// Callers hold s.mu.
func (s *Store) lookup(root Hash, comps []string) (e treeEntry, ok bool, err error) {
	e = treeEntry{mode: modeTree, hash: root}
	for _, c := range comps {
		if !e.isDir() {
			return treeEntry{}, false, nil
		}
		t, err := s.loadTree(e.hash)
		if err != nil {
			return treeEntry{}, false, err
		}
		i := t.find(c)
		if i < 0 {
			return treeEntry{}, false, nil
		}
		e = t.entries[i]
	}
	return e, true, nil
}

// pendingObjects are objects built in memory and not yet written, so that
// a chained commit can be built on a commit that is not stored yet (see
// Proposal.Next): its trees and commits are looked up here before the
// object database.
type pendingObjects struct {
	objs    []newObject    // in build order; each commit follows its trees and blobs
	trees   map[Hash]*tree // the decoded trees among objs
	commits map[Hash]Hash  // the commits among objs → their tree
}

func newPendingObjects() *pendingObjects {
	return &pendingObjects{trees: make(map[Hash]*tree), commits: make(map[Hash]Hash)}
}

func (p *pendingObjects) add(o newObject) { p.objs = append(p.objs, o) }

// treeBuilder applies changes to a tree, loading only the trees on changed
// paths; unchanged subtrees keep their names. The objects it makes are
// added to pend, and the trees it opens are looked up in pend first.
type treeBuilder struct {
	s    *Store
	pend *pendingObjects
}

// loadTree returns the decoded tree h, pending or stored. Callers hold s.mu.
func (b *treeBuilder) loadTree(h Hash) (*tree, error) {
	if t := b.pend.trees[h]; t != nil {
		return t, nil
	}
	return b.s.loadTree(h)
}

// mtree is a tree being modified.
type mtree struct {
	entries []treeEntry       // git order; modified directories have a zero hash until written
	subs    map[string]*mtree // modified subdirectories
}

func (b *treeBuilder) open(h Hash) (*mtree, error) {
	m := &mtree{}
	if h.IsZero() {
		return m, nil
	}
	t, err := b.loadTree(h)
	if err != nil {
		return nil, err
	}
	m.entries = append(make([]treeEntry, 0, len(t.entries)+1), t.entries...)
	return m, nil
}

func (m *mtree) find(name string) int {
	t := tree{entries: m.entries}
	return t.find(name)
}

// sub returns the modified subdirectory at entry i, opening it if needed.
func (b *treeBuilder) sub(m *mtree, i int) (*mtree, error) {
	name := m.entries[i].name
	if s := m.subs[name]; s != nil {
		return s, nil
	}
	s, err := b.open(m.entries[i].hash)
	if err != nil {
		return nil, err
	}
	if m.subs == nil {
		m.subs = make(map[string]*mtree)
	}
	m.subs[name] = s
	return s, nil
}

// put sets the file at path (split into comps) to blob h.
func (b *treeBuilder) put(m *mtree, path string, comps []string, h Hash) error {
	for len(comps) > 1 {
		name := comps[0]
		i := m.find(name)
		if i < 0 {
			t := tree{entries: m.entries}
			i = t.insertPos(name, true)
			m.entries = append(m.entries, treeEntry{})
			copy(m.entries[i+1:], m.entries[i:])
			m.entries[i] = treeEntry{name: name, mode: modeTree}
			if m.subs == nil {
				m.subs = make(map[string]*mtree)
			}
			m.subs[name] = &mtree{}
		} else if !m.entries[i].isDir() {
			return pathError(path, fmt.Errorf("%q is a file", name))
		}
		sub, err := b.sub(m, i)
		if err != nil {
			return err
		}
		m, comps = sub, comps[1:]
	}
	name := comps[0]
	i := m.find(name)
	switch {
	case i < 0:
		t := tree{entries: m.entries}
		i = t.insertPos(name, false)
		m.entries = append(m.entries, treeEntry{})
		copy(m.entries[i+1:], m.entries[i:])
		m.entries[i] = treeEntry{name: name, mode: modeFile, hash: h}
	case m.entries[i].isDir():
		return pathError(path, fmt.Errorf("is a directory"))
	default:
		m.entries[i].mode = modeFile
		m.entries[i].hash = h
	}
	return nil
}

// remove deletes the file or directory at path, if present.
func (b *treeBuilder) remove(m *mtree, comps []string) error {
	for len(comps) > 1 {
		i := m.find(comps[0])
		if i < 0 || !m.entries[i].isDir() {
			return nil
		}
		sub, err := b.sub(m, i)
		if err != nil {
			return err
		}
		m, comps = sub, comps[1:]
	}
	i := m.find(comps[0])
	if i < 0 {
		return nil
	}
	delete(m.subs, comps[0])
	m.entries = append(m.entries[:i], m.entries[i+1:]...)
	return nil
}

// finish encodes m and its modified subtrees (adding them to b.pend) and
// returns its name; empty is true if the tree ended up with no entries, in
// which case nothing is added.
func (b *treeBuilder) finish(m *mtree) (h Hash, empty bool, err error) {
	if len(m.subs) > 0 {
		kept := m.entries[:0]
		for _, e := range m.entries {
			if sub := m.subs[e.name]; sub != nil && e.isDir() {
				sh, subEmpty, err := b.finish(sub)
				if err != nil {
					return Hash{}, false, err
				}
				if subEmpty {
					continue // empty directories vanish, as in git
				}
				e.hash = sh
			}
			kept = append(kept, e)
		}
		m.entries = kept
	}
	if len(m.entries) == 0 {
		return emptyTree, true, nil
	}
	t := &tree{entries: m.entries}
	data := t.encode()
	h = hashObject(plumbing.TreeObject, data)
	b.pend.add(newObject{hash: h, typ: plumbing.TreeObject, data: data})
	b.pend.trees[h] = t
	// Remember the decoded tree: the next snapshot reads it.
	b.s.trees.put(h, t)
	return h, false, nil
}
