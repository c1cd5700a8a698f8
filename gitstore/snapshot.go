package gitstore

import (
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Snapshot is the content of the store at one commit. It is immutable and
// may be used from several goroutines (reads go through the Store, or the
// in-memory Repo that made it).
type Snapshot struct {
	s    *Store
	rev  Hash
	tree Hash // ZeroHash for the empty snapshot
	when time.Time
	mem  *memCommit // set for snapshots of a MemRepo
}

// Entry is a child of a directory (see Snapshot.List).
type Entry struct {
	Name string
	Dir  bool
}

// Snapshot returns the snapshot at commit rev; rev == ZeroHash gives the
// empty snapshot.
func (s *Store) Snapshot(rev Hash) (*Snapshot, error) {
	sn := &Snapshot{s: s, rev: rev}
	if rev.IsZero() {
		return sn, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	c, err := s.readCommit(rev)
	if err != nil {
		return nil, err
	}
	sn.tree = c.tree
	sn.when = c.committer.When
	return sn, nil
}

// Revision returns the commit the snapshot shows (ZeroHash if empty).
func (sn *Snapshot) Revision() Hash { return sn.rev }

// Time returns the committer time of the commit (zero if empty).
func (sn *Snapshot) Time() time.Time { return sn.when }

// Read returns the content of the file at path ("a/b/c.yaml"). ok is false
// if there is no file there (missing, or a directory).
func (sn *Snapshot) Read(path string) (data []byte, ok bool, err error) {
	return sn.ReadMax(path, -1)
}

// ReadMax is Read refusing a file over max bytes (max < 0: no limit) with
// a *TooLargeError naming the path, before its content is inflated (see
// ReadBlobMax).
func (sn *Snapshot) ReadMax(path string, max int64) (data []byte, ok bool, err error) {
	if err := validatePath(path); err != nil {
		return nil, false, err
	}
	if sn.mem != nil {
		data, ok := sn.mem.files[path]
		if ok && max >= 0 && int64(len(data)) > max {
			return nil, false, &TooLargeError{Path: path, Hash: hashObject(plumbing.BlobObject, data), Size: int64(len(data)), Max: max}
		}
		return data, ok, nil
	}
	if sn.tree.IsZero() {
		return nil, false, nil
	}
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, errClosed
	}
	e, found, err := s.lookup(sn.tree, splitPath(path))
	if err != nil || !found || !e.isBlob() {
		return nil, false, err
	}
	data, err = s.readBlobMax(e.hash, max)
	if tl, ok := err.(*TooLargeError); ok {
		tl.Path = path
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// readBlob returns the content of blob h. Callers hold s.mu.
func (s *Store) readBlob(h Hash) ([]byte, error) {
	return s.readBlobMax(h, -1)
}

// readBlobMax returns the content of blob h, refusing one over max bytes
// (max >= 0) by its header. Callers hold s.mu.
func (s *Store) readBlobMax(h Hash, max int64) ([]byte, error) {
	_, data, err := s.odb.readMax(h, max)
	return data, err
}

// List returns the direct children of dir ("" is the root), sorted by name.
// A missing dir (or a file) gives nil, nil.
func (sn *Snapshot) List(dir string) ([]Entry, error) {
	if err := validateDir(dir); err != nil {
		return nil, err
	}
	if sn.mem != nil {
		return sn.mem.list(dir), nil
	}
	if sn.tree.IsZero() {
		return nil, nil
	}
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	e, found, err := s.lookup(sn.tree, splitPath(dir))
	if err != nil || !found || !e.isDir() {
		return nil, err
	}
	t, err := s.loadTree(e.hash)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(t.entries))
	for i := range t.entries {
		te := &t.entries[i]
		if te.isDir() || te.isBlob() {
			out = append(out, Entry{Name: te.name, Dir: te.isDir()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Walk calls fn for every file under dir ("" is the root), recursively, in
// sorted path order, with the file's full path. It stops at the first error
// fn returns and returns it. A missing dir walks nothing.
//
// fn runs without the Store's lock held, so it may use the Store.
func (sn *Snapshot) Walk(dir string, fn func(path string, data []byte) error) error {
	return sn.WalkHashes(dir, func(p string, blob Hash) error {
		data, err := sn.ReadBlob(blob)
		if err != nil {
			return err
		}
		return fn(p, data)
	})
}
