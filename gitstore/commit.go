package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Change is one modification in a Commit: write Data at Path, or, if Delete
// is set, remove the file or directory at Path (a no-op if absent).
//
// Changes apply in order. Writing a file where a directory is, or under a
// path whose parent is a file, fails with ErrInvalidPath; delete the old
// entry first in the same commit to replace it.
type Change struct {
	Path   string
	Data   []byte
	Delete bool
}

// CommitInfo describes a commit. Empty names and e-mails default to
// "loopx" and "loopx@localhost", the committer defaults to the author, and
// a zero When to the current time. '<', '>' and newlines are dropped from
// names and e-mails, as git does.
type CommitInfo struct {
	Message                       string
	AuthorName, AuthorEmail       string
	CommitterName, CommitterEmail string
	When                          time.Time // used for both author and committer time
	// Sign, when set, signs the commit: it is given the commit object as
	// it is without a signature and returns the armored signature, which
	// becomes the commit's gpgsig header, as git makes signed commits
	// (SSHSign signs like `git commit -S` with gpg.format=ssh). An error
	// fails the commit; nothing is written.
	Sign func(payload []byte) (armoredSignature []byte, err error)
}

// CommitMeta describes one commit of the history (see Log).
type CommitMeta struct {
	Hash, Parent            Hash // Parent is the first parent, ZeroHash for a root commit
	Tree                    Hash
	Message                 string
	AuthorName, AuthorEmail string
	When                    time.Time // author time
	// The committer, and the commit time (a snapshot's Time).
	CommitterName, CommitterEmail string
	CommitTime                    time.Time
	// Parents counts the commit's parents (more than one: a merge).
	Parents int
}

// Proposal is what a Transact decision function asks to commit.
type Proposal struct {
	Changes []Change
	Info    CommitInfo
	// When Next is set, Transact makes a second commit on top of the first
	// one (first is the hash of the commit made from Changes/Info) and
	// installs both with one ref update: the ref moves from the expected
	// head straight to the second commit, so history shows both commits
	// in order, and no reader ever sees the ref at the first one. Next
	// returning (nil, nil) means no second commit. An error from Next
	// aborts the transaction (nothing is written).
	//
	// The first commit is not stored when Next runs: Next cannot read it
	// through the Store, it only learns its name. Like decide, Next may be
	// called again, with a different first hash, when Transact retries
	// after a compare-and-swap conflict, and is only called with the
	// Store's lock released (it may read the Store). The second proposal's
	// own Next is ignored.
	Next func(first Hash) (*Proposal, error)
}

// Commit writes a commit whose parent is expected (none if ZeroHash) and
// whose tree is expected's tree with changes applied, then moves the ref
// from expected to it. It returns the new commit's name.
//
// Only the blobs and trees on changed paths are written; every other
// subtree keeps its name. New objects are fsynced, with their directories,
// before the ref moves; the ref moves with git's lock protocol (see
// refs.go), and Commit fails with ErrConflict if it does not hold expected
// (ZeroHash: it must be absent). An empty change set still makes a commit.
//
// The caller must hold the exclusive fence (Lock); Transact does this.
func (s *Store) Commit(expected Hash, changes []Change, info CommitInfo) (Hash, error) {
	if err := validateChanges(changes); err != nil {
		return ZeroHash, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	pend := newPendingObjects()
	commitHash, err := s.buildCommit(pend, expected, changes, info)
	if err != nil {
		return ZeroHash, err
	}
	if err := s.install(pend, expected, commitHash, 1, info); err != nil {
		return ZeroHash, err
	}
	return commitHash, nil
}

// prepared is a commit, or a chain of commits, built but not written.
type prepared struct {
	pend    *pendingObjects
	first   Hash       // the first commit (the proposal's own)
	head    Hash       // the last commit
	commits int        // how many commits pend holds
	info    CommitInfo // the last commit's
}

// prepareProposal builds, without writing anything, the commit of
// p.Changes on expected and, if p.Next asks for one, a second commit on
// it. s.mu is not held while p.Next runs. The errors are p.Next's, invalid
// paths and unreadable objects: none of them is a conflict.
func (s *Store) prepareProposal(expected Hash, p *Proposal) (*prepared, error) {
	if err := validateChanges(p.Changes); err != nil {
		return nil, err
	}
	pr := &prepared{pend: newPendingObjects(), commits: 1, info: p.Info}
	build := func(parent Hash, changes []Change, info CommitInfo) (Hash, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return ZeroHash, errClosed
		}
		return s.buildCommit(pr.pend, parent, changes, info)
	}
	var err error
	if pr.head, err = build(expected, p.Changes, p.Info); err != nil {
		return nil, err
	}
	pr.first = pr.head
	if p.Next == nil {
		return pr, nil
	}
	p2, err := p.Next(pr.head)
	if err != nil || p2 == nil {
		return pr, err
	}
	if err := validateChanges(p2.Changes); err != nil {
		return nil, err
	}
	if pr.head, err = build(pr.head, p2.Changes, p2.Info); err != nil {
		return nil, err
	}
	pr.commits, pr.info = 2, p2.Info
	return pr, nil
}

// commitPrepared installs pr, moving the ref from expected to pr.head.
func (s *Store) commitPrepared(expected Hash, pr *prepared) (Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	if err := s.install(pr.pend, expected, pr.head, pr.commits, pr.info); err != nil {
		return ZeroHash, err
	}
	return pr.head, nil
}

// writePrepared writes pr's objects (fsynced) without moving any ref, for a
// remote authority that publishes them with a push.
func (s *Store) writePrepared(pr *prepared) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := s.odb.writePacked(pr.pend.objs); err != nil {
		return fmt.Errorf("gitstore: write objects: %w", err)
	}
	s.noteCommits(pr.commits)
	return nil
}

// validateChanges checks the path of every change.
func validateChanges(changes []Change) error {
	for _, c := range changes {
		if err := validatePath(c.Path); err != nil {
			return err
		}
	}
	return nil
}

// install writes the objects of pend, the last of which is the commit
// head, and moves the ref from expected to head: one round of fsyncs for
// the objects and the ref-lock twin, then git's ref lock protocol. The
// reflog gets one entry, with info's subject; commits (the number of
// commits in pend) count towards the next automatic GC. Callers hold s.mu
// and the exclusive fence.
func (s *Store) install(pend *pendingObjects, expected, head Hash, commits int, info CommitInfo) error {
	// The ref lock will be a hard link to a twin file holding the new
	// value (see refs.go); the twin is fsynced together with the objects.
	twin, twinFile, err := s.createTwin(head)
	if err != nil {
		return err
	}
	defer os.Remove(twin) // runs after lk.release: a lock always has its twin
	err = s.odb.writePacked(pend.objs, twinFile)
	if cerr := twinFile.Close(); err == nil {
		err = ioError(cerr)
	}
	if err != nil {
		return fmt.Errorf("gitstore: write objects: %w", err)
	}
	hook("objects-written")
	// Like git, take the ref lock only now, so that it is held for a
	// moment (verify, rename), not during the fsyncs.
	lk, err := s.lockRef(expected, head, twin)
	if err != nil {
		return err
	}
	defer lk.release()
	if err := lk.commit(); err != nil {
		return err
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(info.Message), "\n")
	_, committer := idents(info)
	s.appendReflog(expected, head, committer, "loopx: "+subject)
	s.noteCommits(commits)
	return nil
}

// formatIdent formats "Name <email> unix ±hhmm".
func formatIdent(name, email, defName, defEmail string, when time.Time) string {
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			switch r {
			case '<', '>', '\n', '\r', 0:
				return -1
			}
			return r
		}, s)
		return strings.TrimSpace(s)
	}
	name, email = clean(name), clean(email)
	if name == "" {
		name = defName
	}
	if email == "" {
		email = defEmail
	}
	_, off := when.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s <%s> %d %c%02d%02d", name, email, when.Unix(), sign, off/3600, off/60%60)
}

// commitData is a decoded commit object.
type commitData struct {
	tree      Hash
	parents   []Hash
	author    object.Signature
	committer object.Signature
	message   string
}

// readCommit reads and decodes commit h. Callers hold s.mu.
func (s *Store) readCommit(h Hash) (*commitData, error) {
	typ, data, err := s.odb.read(h)
	if err != nil {
		return nil, err
	}
	if typ != plumbing.CommitObject {
		return nil, fmt.Errorf("gitstore: object %s is a %s, not a commit", h, typ)
	}
	c, err := parseCommit(data)
	if err != nil {
		return nil, fmt.Errorf("gitstore: commit %s: %w", h, err)
	}
	return c, nil
}

func parseCommit(data []byte) (*commitData, error) {
	c := &commitData{}
	haveTree := false
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			nl = len(data)
		}
		line := data[:nl]
		data = data[min(nl+1, len(data)):]
		if len(line) == 0 {
			c.message = string(data)
			break
		}
		if line[0] == ' ' {
			continue // continuation of a multi-line header (gpgsig)
		}
		key, val, _ := bytes.Cut(line, []byte{' '})
		switch string(key) {
		case "tree":
			if !plumbing.IsHash(string(val)) {
				return nil, errors.New("bad tree line")
			}
			c.tree = plumbing.NewHash(string(val))
			haveTree = true
		case "parent":
			if !plumbing.IsHash(string(val)) {
				return nil, errors.New("bad parent line")
			}
			c.parents = append(c.parents, plumbing.NewHash(string(val)))
		case "author":
			c.author.Decode(val)
		case "committer":
			c.committer.Decode(val)
		}
	}
	if !haveTree {
		return nil, errors.New("no tree")
	}
	return c, nil
}

// Log calls fn for from and its first-parent ancestors, newest first,
// reading one commit at a time, until fn returns false or an error, or the
// root commit is reached. Log(ZeroHash, fn) calls nothing.
func (s *Store) Log(from Hash, fn func(c CommitMeta) (bool, error)) error {
	for h := from; !h.IsZero(); {
		s.mu.Lock()
		var c *commitData
		err := errClosed
		if !s.closed {
			c, err = s.readCommit(h)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
		meta := CommitMeta{
			Hash:          h,
			Tree:          c.tree,
			Message:       c.message,
			AuthorName:    c.author.Name,
			AuthorEmail:   c.author.Email,
			When:          c.author.When,
			CommitterName: c.committer.Name, CommitterEmail: c.committer.Email,
			CommitTime: c.committer.When,
			Parents:    len(c.parents),
		}
		if len(c.parents) > 0 {
			meta.Parent = c.parents[0]
		}
		more, err := fn(meta)
		if err != nil || !more {
			return err
		}
		h = meta.Parent
	}
	return nil
}

// buildCommit computes, without writing anything, the objects of a commit
// whose parent is parent (none if ZeroHash) and whose tree is parent's tree
// with changes applied, and adds them to pend: the new blobs, the trees on
// changed paths, and the commit itself (last). It returns the commit's
// name. parent may be a commit pending in pend (a chained commit). Callers
// hold s.mu and have validated the paths.
func (s *Store) buildCommit(pend *pendingObjects, parent Hash, changes []Change, info CommitInfo) (Hash, error) {
	var baseTree Hash
	if !parent.IsZero() {
		if t, ok := pend.commits[parent]; ok {
			baseTree = t
		} else {
			c, err := s.readCommit(parent)
			if err != nil {
				return ZeroHash, err
			}
			baseTree = c.tree
		}
	}
	b := &treeBuilder{s: s, pend: pend}
	root, err := b.open(baseTree)
	if err != nil {
		return ZeroHash, err
	}
	for _, c := range changes {
		comps := splitPath(c.Path)
		if c.Delete {
			err = b.remove(root, comps)
		} else {
			h := hashObject(plumbing.BlobObject, c.Data)
			pend.add(newObject{hash: h, typ: plumbing.BlobObject, data: c.Data})
			err = b.put(root, c.Path, comps, h)
		}
		if err != nil {
			return ZeroHash, err
		}
	}
	treeHash, empty, err := b.finish(root)
	if err != nil {
		return ZeroHash, err
	}
	if empty {
		pend.add(newObject{hash: emptyTree, typ: plumbing.TreeObject, data: nil})
	}
	author, committer := idents(info)
	msg := info.Message
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	var cb bytes.Buffer
	fmt.Fprintf(&cb, "tree %s\n", treeHash)
	if !parent.IsZero() {
		fmt.Fprintf(&cb, "parent %s\n", parent)
	}
	fmt.Fprintf(&cb, "author %s\ncommitter %s\n\n%s", author, committer, msg)
	commitData := cb.Bytes()
	if info.Sign != nil {
		sig, err := info.Sign(commitData)
		if err != nil {
			return ZeroHash, fmt.Errorf("gitstore: sign commit: %w", err)
		}
		if commitData, err = insertSignature(commitData, sig); err != nil {
			return ZeroHash, err
		}
	}
	commitHash := hashObject(plumbing.CommitObject, commitData)
	pend.add(newObject{hash: commitHash, typ: plumbing.CommitObject, data: commitData})
	pend.commits[commitHash] = treeHash
	return commitHash, nil
}

// idents returns the author and committer lines of a commit: empty names and
// emails default to loopx, the committer to the author, a zero time to now.
func idents(info CommitInfo) (author, committer string) {
	when := info.When
	if when.IsZero() {
		when = time.Now()
	}
	author = formatIdent(info.AuthorName, info.AuthorEmail, "loopx", "loopx@localhost", when)
	committer = author
	if info.CommitterName != "" || info.CommitterEmail != "" {
		committer = formatIdent(info.CommitterName, info.CommitterEmail, "loopx", "loopx@localhost", when)
	}
	return author, committer
}
