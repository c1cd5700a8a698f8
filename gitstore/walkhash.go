package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WalkHashes is Walk without reading content: fn gets each file's path and
// blob hash, in the same order. Callers that keep decoded content keyed by
// hash (a content-addressed cache) read only the blobs they have not seen.
func (sn *Snapshot) WalkHashes(dir string, fn func(path string, blob Hash) error) error {
	if err := validateDir(dir); err != nil {
		return err
	}
	if sn.tree.IsZero() {
		return nil
	}
	s := sn.s
	s.mu.Lock()
	e, found, err := s.lookup(sn.tree, splitPath(dir))
	s.mu.Unlock()
	if err != nil || !found || !e.isDir() {
		return err
	}
	return sn.walkTreeHashes(dir, e.hash, fn)
}

func (sn *Snapshot) walkTreeHashes(prefix string, h Hash, fn func(path string, blob Hash) error) error {
	s := sn.s
	s.mu.Lock()
	var t *tree
	err := errClosed
	if !s.closed {
		t, err = s.loadTree(h)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for i := range t.entries {
		e := t.entries[i]
		p := e.name
		if prefix != "" {
			p = prefix + "/" + e.name
		}
		switch {
		case e.isDir():
			if err := sn.walkTreeHashes(p, e.hash, fn); err != nil {
				return err
			}
		case e.isBlob():
			if err := fn(p, e.hash); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadBlob returns the content of blob h.
func (sn *Snapshot) ReadBlob(h Hash) ([]byte, error) {
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	return s.readBlob(h)
}

// cacheDir holds derived data kept beside the store: never authoritative,
// safe to delete at any time.
func (s *Store) cacheDir() string { return filepath.Join(s.commonDir, "loopx-cache") }

func checkCacheName(name string) error {
	if name == "" || filepath.Base(name) != name || name[0] == '.' {
		return fmt.Errorf("%w: cache name %q", ErrInvalidPath, name)
	}
	return nil
}

// ReadCache returns the cache file name, or nil when there is none.
func (s *Store) ReadCache(name string) ([]byte, error) {
	if err := checkCacheName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(s.cacheDir(), name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// WriteCache replaces the cache file name atomically (no fsync: a cache lost
// in a crash is rebuilt).
func (s *Store) WriteCache(name string, data []byte) error {
	if err := checkCacheName(name); err != nil {
		return err
	}
	if err := os.MkdirAll(s.cacheDir(), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.cacheDir(), "."+name+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.cacheDir(), name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
