package gitstore

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/loopx-dev/loopx/internal/clock"
)

// MemRepo is an in-memory Repo: commits are whole file maps, the ref a
// variable, the fence a mutex. It is the second implementation the
// conformance suite (storetest) runs against, and a fast store for tests of
// the layers above. Object names are stable hashes of content, not Git's
// (blobs excepted: a blob's name is its Git name, so record caches keyed by
// blob name behave alike).
type MemRepo struct {
	mu      sync.Mutex // guards everything below
	fence   sync.Mutex // the writer fence
	commits map[Hash]*memCommit
	head    Hash
	side    map[string][]byte
	policy  RetryPolicy
	clock   clock.Clock // what retries wait on
}

type memCommit struct {
	meta  CommitMeta
	tree  Hash
	files map[string][]byte
	blobs map[Hash][]byte
}

// NewMemRepo returns an empty MemRepo retried by policy.
func NewMemRepo(policy RetryPolicy) *MemRepo {
	return &MemRepo{commits: map[Hash]*memCommit{}, side: map[string][]byte{}, policy: policy, clock: clock.Real}
}

// WithClock makes m's retries wait on c (a fake clock in tests); it
// returns m.
func (m *MemRepo) WithClock(c clock.Clock) *MemRepo {
	m.clock = clock.Or(c)
	return m
}

// Head returns the ref's value.
func (m *MemRepo) Head(ctx context.Context) (Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.head, nil
}

// Snapshot returns the snapshot at rev.
func (m *MemRepo) Snapshot(rev Hash) (*Snapshot, error) {
	if rev.IsZero() {
		return &Snapshot{rev: rev, mem: &memCommit{files: map[string][]byte{}}}, nil
	}
	c, err := m.commit(rev)
	if err != nil {
		return nil, err
	}
	return &Snapshot{rev: rev, when: c.meta.When, mem: c}, nil
}

func (m *MemRepo) commit(h Hash) (*memCommit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.commits[h]
	if !ok {
		return nil, fmt.Errorf("gitstore: mem: no commit %s", h)
	}
	return c, nil
}

// Reset moves the ref to h without the fence (tests: a rewound ref).
func (m *MemRepo) Reset(h Hash) {
	m.mu.Lock()
	m.head = h
	m.mu.Unlock()
}

// ForeignCommit commits changes on the current head without the fence, as
// a writer that bypasses it would (tests of lost compare-and-swaps).
func (m *MemRepo) ForeignCommit(changes []Change, info CommitInfo) (Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.build(m.head, changes, info)
	if err != nil {
		return ZeroHash, err
	}
	m.commits[c.meta.Hash] = c
	m.head = c.meta.Hash
	return m.head, nil
}

// Transact is the compare-and-swap cycle of authority.go on the variable.
func (m *MemRepo) Transact(ctx context.Context, decide Decide) (TxResult, error) {
	var res TxResult
	ctx, cancel := m.policy.Bound(ctx)
	defer cancel()
	m.fence.Lock()
	defer m.fence.Unlock()
	for attempt := 1; ; attempt++ {
		head, _ := m.Head(ctx)
		res.Base, res.Head, res.Attempts = head, head, attempt
		sn, err := m.Snapshot(head)
		if err != nil {
			return res, err
		}
		p, err := decide(sn)
		if err != nil || p == nil {
			return res, err
		}
		first, last, err := m.prepare(head, p)
		if err != nil {
			return res, err
		}
		m.mu.Lock()
		if m.head == head {
			m.commits[first.meta.Hash] = first
			if last != nil {
				m.commits[last.meta.Hash] = last
				m.head = last.meta.Hash
			} else {
				m.head = first.meta.Hash
			}
			res.Head, res.State = m.head, first.meta.Hash
			m.mu.Unlock()
			return res, nil
		}
		m.mu.Unlock()
		res.Conflicts++
		if m.policy.Exhausted(attempt) {
			return res, fmt.Errorf("gitstore: mem: gave up after %d attempts: %w", attempt, ErrConflict)
		}
		if err := m.policy.Wait(ctx, m.clock, res.Conflicts); err != nil {
			return res, fmt.Errorf("gitstore: mem: %w (after %w)", err, ErrConflict)
		}
	}
}

// prepare builds p's commit on head and, when p.Next asks, a second one.
func (m *MemRepo) prepare(head Hash, p *Proposal) (first, last *memCommit, err error) {
	m.mu.Lock()
	first, err = m.build(head, p.Changes, p.Info)
	m.mu.Unlock()
	if err != nil || p.Next == nil {
		return first, nil, err
	}
	p2, err := p.Next(first.meta.Hash)
	if err != nil || p2 == nil {
		return first, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits[first.meta.Hash] = first // visible to build as a parent only
	last, err = m.build(first.meta.Hash, p2.Changes, p2.Info)
	return first, last, err
}

// build makes a commit of changes on parent. Callers hold m.mu.
func (m *MemRepo) build(parent Hash, changes []Change, info CommitInfo) (*memCommit, error) {
	files := map[string][]byte{}
	if !parent.IsZero() {
		pc, ok := m.commits[parent]
		if !ok {
			return nil, fmt.Errorf("gitstore: mem: no commit %s", parent)
		}
		for k, v := range pc.files {
			files[k] = v
		}
	}
	if err := applyMemChanges(files, changes); err != nil {
		return nil, err
	}
	when := info.When
	if when.IsZero() {
		when = time.Now()
	}
	when = when.Truncate(time.Second)
	c := &memCommit{files: files, tree: memTreeName(files), blobs: map[Hash][]byte{}}
	for _, d := range files {
		c.blobs[hashObject(plumbing.BlobObject, d)] = d
	}
	author, _ := idents(info)
	h := sha1.New()
	fmt.Fprintf(h, "tree %s\nparent %s\nauthor %s\n\n%s", c.tree, parent, author, info.Message)
	var name Hash
	copy(name[:], h.Sum(nil))
	c.meta = CommitMeta{Hash: name, Parent: parent, Tree: c.tree, Message: info.Message, AuthorName: defaulted(info.AuthorName, "loopx"),
		AuthorEmail: defaulted(info.AuthorEmail, "loopx@localhost"), When: when,
		CommitterName:  defaulted(info.CommitterName, defaulted(info.AuthorName, "loopx")),
		CommitterEmail: defaulted(info.CommitterEmail, defaulted(info.AuthorEmail, "loopx@localhost")), CommitTime: when}
	if !parent.IsZero() {
		c.meta.Parents = 1
	}
	return c, nil
}

func defaulted(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// applyMemChanges applies changes to a file map with Commit's rules.
func applyMemChanges(files map[string][]byte, changes []Change) error {
	for _, ch := range changes {
		if err := validatePath(ch.Path); err != nil {
			return err
		}
		if ch.Delete {
			delete(files, ch.Path)
			for k := range files {
				if strings.HasPrefix(k, ch.Path+"/") {
					delete(files, k)
				}
			}
			continue
		}
		for k := range files {
			if strings.HasPrefix(k, ch.Path+"/") {
				return fmt.Errorf("gitstore: %s is a directory: %w", ch.Path, ErrInvalidPath)
			}
		}
		comps := strings.Split(ch.Path, "/")
		for i := 1; i < len(comps); i++ {
			if _, ok := files[strings.Join(comps[:i], "/")]; ok {
				return fmt.Errorf("gitstore: %s is under a file: %w", ch.Path, ErrInvalidPath)
			}
		}
		files[ch.Path] = append([]byte(nil), ch.Data...)
	}
	return nil
}

// memTreeName names a file map: equal maps, equal names.
func memTreeName(files map[string][]byte) Hash {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha1.New()
	for _, p := range paths {
		b := hashObject(plumbing.BlobObject, files[p])
		io.WriteString(h, p+"\x00"+b.String()+"\n")
	}
	var name Hash
	copy(name[:], h.Sum(nil))
	return name
}

// Log walks first-parent history from from, newest first.
func (m *MemRepo) Log(from Hash, fn func(c CommitMeta) (bool, error)) error {
	for h := from; !h.IsZero(); {
		c, err := m.commit(h)
		if err != nil {
			return err
		}
		more, err := fn(c.meta)
		if err != nil || !more {
			return err
		}
		h = c.meta.Parent
	}
	return nil
}

// ChildOf finds the commit whose parent is parent on head's history.
func (m *MemRepo) ChildOf(head, parent Hash) (Hash, error) {
	found := ZeroHash
	err := m.Log(head, func(c CommitMeta) (bool, error) {
		if c.Parent == parent {
			found = c.Hash
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// DiffHashes calls fn for each file under dir that differs between from
// and to, in path order.
func (m *MemRepo) DiffHashes(from, to Hash, dir string, fn func(path string, old, new Hash) error) error {
	a, err := m.Snapshot(from)
	if err != nil {
		return err
	}
	b, err := m.Snapshot(to)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var paths []string
	for _, files := range []map[string][]byte{a.mem.files, b.mem.files} {
		for p := range files {
			if (dir == "" || strings.HasPrefix(p, dir+"/")) && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		var oh, nh Hash
		if d, ok := a.mem.files[p]; ok {
			oh = hashObject(plumbing.BlobObject, d)
		}
		if d, ok := b.mem.files[p]; ok {
			nh = hashObject(plumbing.BlobObject, d)
		}
		if oh != nh {
			if err := fn(p, oh, nh); err != nil {
				return err
			}
		}
	}
	return nil
}

// TreeOf names the tree of changes applied on parent.
func (m *MemRepo) TreeOf(parent Hash, changes []Change) (Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.build(parent, changes, CommitInfo{When: time.Unix(0, 0)})
	if err != nil {
		return ZeroHash, err
	}
	return c.tree, nil
}

// ReadSideFile returns a copy of a side file (nil when absent), as the
// Store's read of the file is: the caller owns it (a listing decodes its
// strings in place, and a test damages what it read).
func (m *MemRepo) ReadSideFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.side[name]), nil
}

// WriteSideFile sets a side file.
func (m *MemRepo) WriteSideFile(name string, data []byte, durable bool) error {
	if !strings.HasPrefix(name, "loopx-") {
		return errors.New("gitstore: mem: side file names start with loopx-")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.side[name] = append([]byte(nil), data...)
	return nil
}

// list returns the children of dir.
func (c *memCommit) list(dir string) []Entry {
	seen := map[string]bool{}
	var out []Entry
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	for p := range c.files {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, Entry{Name: name, Dir: isDir})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// walkHashes calls fn for each file under dir in path order.
func (c *memCommit) walkHashes(dir string, fn func(path string, blob Hash) error) error {
	var paths []string
	for p := range c.files {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := fn(p, hashObject(plumbing.BlobObject, c.files[p])); err != nil {
			return err
		}
	}
	return nil
}

// blob returns the content of a blob of this commit.
func (c *memCommit) blob(h Hash) ([]byte, error) {
	if d, ok := c.blobs[h]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("gitstore: mem: no blob %s", h)
}

// Depth counts the commits on h's first-parent chain.
func (m *MemRepo) Depth(h Hash) (int64, error) {
	n := int64(0)
	err := m.Log(h, func(CommitMeta) (bool, error) { n++; return true, nil })
	return n, err
}
