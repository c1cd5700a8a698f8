package gitstore

// DiffHashes calls fn for every file under dir ("" is the root; a slash
// path such as "goals/g/todos") whose blob differs between the trees of
// commits from and to (ZeroHash stands for an empty tree), with its full
// slash path from the root and its blob hash in each: old is ZeroHash for a
// file added in to, new is ZeroHash for a file deleted. Files are reported
// in sorted path order, as Walk reports them.
//
// Subtrees with the same name on both sides are skipped without being
// read, so the cost is proportional to what changed. A dir missing (or a
// file) on one side counts as empty there: every file under it is added
// or deleted. A name that is a file on one side and a directory on the
// other reports the file and every file under the directory. Entries that
// are neither files nor directories (submodules) are ignored, as by Walk.
//
// A missing object is an error. fn runs without the Store's lock held, so
// it may use the Store; an error from fn stops the walk and is returned.
func (s *Store) DiffHashes(from, to Hash, dir string, fn func(path string, old, new Hash) error) error {
	if err := validateDir(dir); err != nil {
		return err
	}
	if from == to {
		return nil
	}
	comps := splitPath(dir)
	var roots [2]Hash
	for i, rev := range [2]Hash{from, to} {
		h, err := s.subtreeAt(rev, comps)
		if err != nil {
			return err
		}
		roots[i] = h
	}
	return s.diffTrees(dir, roots[0], roots[1], fn)
}

// subtreeAt returns the tree at comps in commit rev, or ZeroHash if rev is
// ZeroHash or there is no directory there.
func (s *Store) subtreeAt(rev Hash, comps []string) (Hash, error) {
	if rev.IsZero() {
		return ZeroHash, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	c, err := s.readCommit(rev)
	if err != nil {
		return ZeroHash, err
	}
	e, found, err := s.lookup(c.tree, comps)
	if err != nil || !found || !e.isDir() {
		return ZeroHash, err
	}
	return e.hash, nil
}

// loadTreeUnlocked is loadTree for callers that do not hold s.mu; h ==
// ZeroHash gives an empty tree.
func (s *Store) loadTreeUnlocked(h Hash) (*tree, error) {
	if h.IsZero() {
		return &tree{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	return s.loadTree(h)
}

// diffTrees reports the files that differ between trees a and b (ZeroHash:
// absent) at prefix: their blob names (ZeroHash where absent or not a
// blob) differ.
func (s *Store) diffTrees(prefix string, a, b Hash, fn func(path string, old, new Hash) error) error {
	return s.diffEntries(prefix, a, b, func(p string, x, y *treeEntry) error {
		var old, new Hash
		if x != nil && x.isBlob() {
			old = x.hash
		}
		if y != nil && y.isBlob() {
			new = y.hash
		}
		if old != new {
			return fn(p, old, new)
		}
		return nil
	})
}

// diffEntries calls fn, in sorted path order, for every non-tree entry of
// trees a and b (ZeroHash: empty) at prefix whose name, mode or hash
// differs; x or y is nil where the entry is absent on that side. Equal
// subtrees are not read.
func (s *Store) diffEntries(prefix string, a, b Hash, fn func(path string, x, y *treeEntry) error) error {
	if a == b {
		return nil
	}
	ta, err := s.loadTreeUnlocked(a)
	if err != nil {
		return err
	}
	tb, err := s.loadTreeUnlocked(b)
	if err != nil {
		return err
	}
	join := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "/" + name
	}
	// Both entry lists are in git order, in which a directory sorts as its
	// name followed by '/': merging them on (name, is a directory) visits
	// the files in sorted path order, and a file and a directory of the
	// same name as two different entries.
	ea, eb := ta.entries, tb.entries
	for len(ea) > 0 || len(eb) > 0 {
		var x, y *treeEntry // the entries of one (name, dir) in a and b
		switch {
		case len(eb) == 0:
			x = &ea[0]
		case len(ea) == 0:
			y = &eb[0]
		case gitLess(ea[0].name, ea[0].isDir(), eb[0].name, eb[0].isDir()):
			x = &ea[0]
		case gitLess(eb[0].name, eb[0].isDir(), ea[0].name, ea[0].isDir()):
			y = &eb[0]
		default:
			x, y = &ea[0], &eb[0]
		}
		var name string
		if x != nil {
			ea, name = ea[1:], x.name
		}
		if y != nil {
			eb, name = eb[1:], y.name
		}
		if (x != nil && x.isDir()) || (y != nil && y.isDir()) {
			var ha, hb Hash
			if x != nil {
				ha = x.hash
			}
			if y != nil {
				hb = y.hash
			}
			if err := s.diffEntries(join(name), ha, hb, fn); err != nil {
				return err
			}
			continue
		}
		if x == nil || y == nil || x.hash != y.hash || x.mode != y.mode {
			if err := fn(join(name), x, y); err != nil {
				return err
			}
		}
	}
	return nil
}
