// Package records is how loopx reads the state a commit holds and writes
// the commits that hold it: the records of a snapshot as the pure domain
// reads them (lease.Files, every record read with its size limit), a
// commit's metadata by its hash, and the identity loopx writes commits
// with. It sits under every room that reads the store (the root, derived
// data, remote mode, the audit), and knows nothing of them.
package records

import (
	"errors"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Files adapts a gitstore snapshot to lease.Files. Records (.yaml) are
// read with their size limit checked from the object's header, before
// anything is inflated (lease.MaxRecordSize; a refusal is corrupt_record
// naming the path); other files (boards) are not records.
type Files struct{ Snap *gitstore.Snapshot }

var _ lease.Files = Files{}

// recordLimit is the most bytes read of the file at p (-1: no limit).
func recordLimit(p string) int64 {
	if strings.HasSuffix(p, ".yaml") {
		return lease.MaxRecordSize
	}
	return -1
}

// recordErr turns a gitstore size refusal into the record's.
func recordErr(path string, err error) error {
	var tl *gitstore.TooLargeError
	if errors.As(err, &tl) {
		return lease.Oversize(path, tl.Size)
	}
	return err
}

func (f Files) Read(p string) ([]byte, bool, error) {
	data, ok, err := f.Snap.ReadMax(p, recordLimit(p))
	return data, ok, recordErr(p, err)
}

func (f Files) Walk(dir string, fn func(string, []byte) error) error {
	return f.Snap.WalkHashes(dir, func(p string, h gitstore.Hash) error {
		data, err := f.Snap.ReadBlobMax(h, recordLimit(p))
		if err != nil {
			return recordErr(p, err)
		}
		return fn(p, data)
	})
}

func (f Files) WalkHashes(dir string, fn func(path, hash string) error) error {
	return f.Snap.WalkHashes(dir, func(p string, h gitstore.Hash) error { return fn(p, h.String()) })
}

func (f Files) HashOf(p string) (string, bool, error) {
	h, ok, err := f.Snap.HashOf(p)
	if !ok || err != nil {
		return "", ok, err
	}
	return h.String(), true, nil
}

// ReadHash reads a record by its hash (lease reads only records so), with
// the record size limit; a refusal names no path (lease names it).
func (f Files) ReadHash(hash string) ([]byte, error) {
	data, err := f.Snap.ReadBlobMax(gitstore.ParseHash(hash), lease.MaxRecordSize)
	return data, recordErr("", err)
}

func (f Files) List(dir string) ([]string, error) {
	entries, err := f.Snap.List(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names, nil
}

// View is the plain records view of a snapshot: no cache, no derived
// index (the room that keeps those equips its views itself).
func View(sn *gitstore.Snapshot) *lease.View {
	return lease.NewView(Files{sn}, Rev(sn.Revision()), sn.Time())
}

// Rev is a revision as results name it: "" for none.
func Rev(h gitstore.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// CommitMeta reads one commit's metadata.
func CommitMeta(repo gitstore.Repo, h gitstore.Hash) (gitstore.CommitMeta, error) {
	var out gitstore.CommitMeta
	err := repo.Log(h, func(c gitstore.CommitMeta) (bool, error) { out = c; return false, nil })
	return out, err
}

// Commit is the identity and message loopx writes a commit with, decided
// at now: the acting agent as the author ("loopx" for a board), loopx as
// the committer, both dated now.
func Commit(actor, msg string, now time.Time) gitstore.CommitInfo {
	name := actor
	if name == "" {
		name = "loopx"
	}
	return gitstore.CommitInfo{Message: msg, AuthorName: name, AuthorEmail: name + "@loopx.invalid",
		CommitterName: "loopx", CommitterEmail: "loopx@loopx.invalid", When: now}
}

// StoreID reads the store id of the store at snapshot sn ("" for a store
// older than format 3, or none).
func StoreID(sn *gitstore.Snapshot) (string, error) {
	m, err := View(sn).Meta()
	if err != nil || m == nil {
		return "", err
	}
	return m.StoreID, nil
}
