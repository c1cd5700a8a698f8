package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// WalkHashes is Walk without reading content: fn gets each file's path and
// blob hash, in the same order. Callers that keep decoded content keyed by
// hash (a content-addressed cache) read only the blobs they have not seen.
func (sn *Snapshot) WalkHashes(dir string, fn func(path string, blob Hash) error) error {
	if err := validateDir(dir); err != nil {
		return err
	}
	if sn.mem != nil {
		return sn.mem.walkHashes(dir, fn)
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
	return sn.ReadBlobMax(h, -1)
}

// ReadBlobMax returns the content of blob h, or a *TooLargeError when it
// is over max bytes (max < 0: no limit), found from the object's header
// before its content is inflated (the object reader, objects.go): a huge
// blob, in the repository or in a push's quarantine, costs neither its
// size in memory nor the time to inflate it.
func (sn *Snapshot) ReadBlobMax(h Hash, max int64) ([]byte, error) {
	if sn.mem != nil {
		data, err := sn.mem.blob(h)
		if err == nil && max >= 0 && int64(len(data)) > max {
			return nil, &TooLargeError{Hash: h, Size: int64(len(data)), Max: max}
		}
		return data, err
	}
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	return s.readBlobMax(h, max)
}

// Side files are small files loopx keeps beside the store in the common git
// dir (shared by linked worktrees), never on the ref: derived caches and
// remote bookkeeping. name is a relative slash path whose first component
// starts with "loopx-", e.g. "loopx-cache/records.gob".
func (s *Store) sideFile(name string) (string, error) {
	if err := validatePath(name); err != nil || !strings.HasPrefix(name, "loopx-") {
		return "", fmt.Errorf("%w: side file %q", ErrInvalidPath, name)
	}
	return filepath.Join(s.commonDir, filepath.FromSlash(name)), nil
}

// ReadSideFile returns the side file name, or nil when there is none.
func (s *Store) ReadSideFile(name string) ([]byte, error) {
	p, err := s.sideFile(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// WriteSideFile replaces the side file name atomically (a reader sees the
// old or the new bytes). durable also fsyncs the file and its folder before
// the rename returns; without it a crash may lose the write (fine for a
// cache, which is rebuilt).
func (s *Store) WriteSideFile(name string, data []byte, durable bool) error {
	p, err := s.sideFile(name)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The temporary file is named after this process, in the common dir,
	// where the next writer finds it if this process is killed (see
	// removeDeadTmpFiles).
	s.markTemp()
	tmp, err := os.OpenFile(filepath.Join(s.commonDir, fmt.Sprintf("%s%d.%d", sideTmpStart, os.Getpid(), tmpCounter.Add(1))),
		os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return ioError(err)
	}
	s.markTemp()
	_, err = tmp.Write(data)
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return ioError(err)
	}
	if durable {
		return ioError(syncDir(dir))
	}
	return nil
}

// RemoveSideFile removes the side file name (absent is fine).
func (s *Store) RemoveSideFile(name string) error {
	p, err := s.sideFile(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SideFiles lists the side files in folder dir (names, not paths) last
// modified more than olderThan ago; a missing folder has none.
func (s *Store) SideFiles(dir string, olderThan time.Duration) ([]string, error) {
	p, err := s.sideFile(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioError(err)
	}
	cutoff := time.Now().Add(-olderThan)
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ParseHash parses a full hex object name; ZeroHash if it is not one.
func ParseHash(str string) Hash {
	if !plumbing.IsHash(str) {
		return ZeroHash
	}
	return plumbing.NewHash(str)
}

// HashOf returns the blob hash of the file at path without reading it (ok
// is false when there is no file there): a content-addressed cache decides
// from it whether the file needs reading at all.
func (sn *Snapshot) HashOf(path string) (Hash, bool, error) {
	if err := validatePath(path); err != nil {
		return ZeroHash, false, err
	}
	if sn.mem != nil {
		data, ok := sn.mem.files[path]
		if !ok {
			return ZeroHash, false, nil
		}
		return hashObject(plumbing.BlobObject, data), true, nil
	}
	if sn.tree.IsZero() {
		return ZeroHash, false, nil
	}
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, false, errClosed
	}
	e, found, err := s.lookup(sn.tree, splitPath(path))
	if err != nil || !found || !e.isBlob() {
		return ZeroHash, false, err
	}
	return e.hash, true, nil
}
