package gitstore

// The history side of the repository, used by `loopx guard check --range`
// and the pre-push guard: which commits a range holds (git's own rev-list,
// so A..B, --not --remotes and every revision syntax mean what they mean to
// git), what one commit records (its committer time, author, message) and
// which paths it changed, and the committer times along the state ref's
// first-parent history.
//
// Paths a commit changed (ChangedPaths), decided where git is silent:
//   - against its only parent: every path whose entry differs (content,
//     mode, or kind: a file, a symlink, a submodule), as `git diff-tree -r`
//     lists them; a rename counts as its deletion and its addition;
//   - a root commit: every path it records;
//   - a merge: what the merge itself wrote, measured against the merge
//     base git names (`git merge-base --octopus`): a path where it differs
//     from every parent (the paths `git diff-tree -c` lists: a conflict
//     resolved by hand, an edit), and a path where a parent changed the
//     base and the merge does not hold that parent's version (it threw the
//     change away: a conflict resolved by taking one side, `-s ours`, a
//     revert made in the merge). A path the merge took unchanged from the
//     one side that changed it is that side's commits' change, checked as
//     those commits: a clean merge of main into a branch writes nothing.

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// ErrUnknownRevision is returned (wrapped, naming the revision) by
// ResolveCommit for a revision that names no commit.
var ErrUnknownRevision = errors.New("unknown revision")

// CommitFacts is what one commit records, besides its tree.
type CommitFacts struct {
	Hash                    Hash
	Parents                 []Hash
	AuthorName, AuthorEmail string
	AuthorTime              time.Time
	CommitterTime           time.Time
	Message                 string
}

// ReadCommitFacts reads commit h.
func (s *Store) ReadCommitFacts(h Hash) (*CommitFacts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	c, err := s.readCommit(h)
	if err != nil {
		return nil, err
	}
	return &CommitFacts{Hash: h, Parents: c.parents, AuthorName: c.author.Name, AuthorEmail: c.author.Email,
		AuthorTime: c.author.When, CommitterTime: c.committer.When, Message: c.message}, nil
}

// ResolveCommit returns the commit that rev names, as git resolves it (a
// hash, a branch, a remote-tracking branch, HEAD~2, a tag peeled to its
// commit). A revision that names no commit is ErrUnknownRevision; one
// starting with '-' is never passed to git.
func (s *Store) ResolveCommit(rev string) (Hash, error) {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
		return ZeroHash, fmt.Errorf("gitstore: %q: %w", rev, ErrUnknownRevision)
	}
	cmd := exec.Command("git", "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	cmd.Dir = firstNonEmpty(s.workDir, s.gitDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return ZeroHash, fmt.Errorf("gitstore: %q: %w", rev, ErrUnknownRevision)
		}
		return ZeroHash, fmt.Errorf("gitstore: git rev-parse %s: %w: %s", rev, err, strings.TrimSpace(stderr.String()))
	}
	h := strings.TrimSpace(string(out))
	if !isHexHash(h) {
		return ZeroHash, fmt.Errorf("gitstore: git rev-parse %s printed %q", rev, truncate(h, 80))
	}
	return ParseHash(h), nil
}

// HasCommit reports whether h names a commit present in the repository.
func (s *Store) HasCommit(h Hash) bool {
	if h.IsZero() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	_, err := s.readCommit(h)
	return err == nil
}

// RevList returns the commits reachable from include and from none of
// exclude (nor, with notRemoteTracking, from any remote-tracking branch,
// refs/remotes/*): git's `rev-list INCLUDE... ^EXCLUDE... [--not
// --remotes]`. They come parents first (topological order, oldest first),
// as they would be replayed.
func (s *Store) RevList(include, exclude []Hash, notRemoteTracking bool) ([]Hash, error) {
	if len(include) == 0 {
		return nil, nil
	}
	args := []string{"rev-list", "--topo-order", "--reverse"}
	for _, h := range include {
		args = append(args, h.String())
	}
	for _, h := range exclude {
		args = append(args, "^"+h.String())
	}
	if notRemoteTracking {
		args = append(args, "--not", "--remotes")
	}
	out, err := s.gitOut(args...)
	if err != nil {
		return nil, err
	}
	return parseRevList(out)
}

// RevListNew returns the commits reachable from include and from none of
// the refs that counts (their current values; nil counts every ref),
// parents first: in a pre-receive hook, the commits a push brings to the
// refs counts names (its refs are still the old ones while the hook runs).
// A commit the repository has only under other refs (a tag pushed first,
// say) is new to those refs, and listed.
func (s *Store) RevListNew(include []Hash, counts func(ref string) bool) ([]Hash, error) {
	if len(include) == 0 {
		return nil, nil
	}
	// Each ref as "type hash peeled-type peeled-hash name": a tag counts
	// as the commit it names; a ref to anything but a commit is skipped.
	out, err := s.gitOut("for-each-ref", "--format=%(objecttype) %(objectname) %(*objecttype) %(*objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	var stdin strings.Builder
	for _, h := range include {
		stdin.WriteString(h.String() + "\n")
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		var obj, ref string
		switch {
		case len(f) == 3 && f[0] == "commit":
			obj, ref = f[1], f[2]
		case len(f) == 5 && f[0] == "tag" && f[2] == "commit":
			obj, ref = f[3], f[4]
		default:
			continue
		}
		if isHexHash(obj) && (counts == nil || counts(ref)) {
			stdin.WriteString("^" + obj + "\n")
		}
	}
	cmd := exec.Command("git", "rev-list", "--topo-order", "--reverse", "--stdin")
	cmd.Dir = firstNonEmpty(s.workDir, s.gitDir)
	cmd.Stdin = strings.NewReader(stdin.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	list, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gitstore: git rev-list --stdin: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseRevList(list)
}

func isHexHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ChangedPaths returns the paths (slash-separated, sorted) commit h changed
// (see the file comment: its parent, a root commit, a merge).
func (s *Store) ChangedPaths(h Hash) ([]string, error) {
	files, err := s.ChangedFiles(h)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return paths, nil
}

// FileChange is one path a commit changed.
type FileChange struct {
	Path string
	// Deleted reports that the commit has no file at Path.
	Deleted bool
	// Link is, when the commit's entry at Path is a symlink, what it
	// points at (its blob: at most maxLinkTarget bytes are read).
	Link    string
	Symlink bool
}

// maxLinkTarget bounds the symlink target read (git's own limit is the
// platform's PATH_MAX, 4096 on Linux).
const maxLinkTarget = 4096

// ChangedFiles is ChangedPaths with what the commit holds at each path.
func (s *Store) ChangedFiles(h Hash) ([]FileChange, error) {
	facts, err := s.ReadCommitFacts(h)
	if err != nil {
		return nil, err
	}
	tree, err := s.commitTree(h)
	if err != nil {
		return nil, err
	}
	if len(facts.Parents) <= 1 {
		var parent Hash
		if len(facts.Parents) == 1 {
			if parent, err = s.commitTree(facts.Parents[0]); err != nil {
				return nil, err
			}
		}
		return s.diffFiles(parent, tree)
	}
	// A merge: for each path where it differs from some parent, whether a
	// side's change was kept (see the file comment).
	baseTree, err := s.mergeBaseTree(facts.Parents)
	if err != nil {
		return nil, err
	}
	type seen struct {
		file    FileChange
		differs int  // parents the merge differs from at the path
		dropped bool // a parent's change from the base is not kept
	}
	at := map[string]*seen{}
	for _, p := range facts.Parents {
		pt, err := s.commitTree(p)
		if err != nil {
			return nil, err
		}
		files, err := s.diffFiles(pt, tree)
		if err != nil {
			return nil, err
		}
		sideChanged := map[string]bool{}
		err = s.diffEntries("", baseTree, pt, func(path string, _, _ *treeEntry) error {
			sideChanged[path] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			e := at[f.Path]
			if e == nil {
				e = &seen{file: f}
				at[f.Path] = e
			}
			e.differs++
			e.dropped = e.dropped || sideChanged[f.Path]
		}
	}
	var out []FileChange
	for _, e := range at {
		if e.differs == len(facts.Parents) || e.dropped {
			out = append(out, e.file)
		}
	}
	slices.SortFunc(out, func(x, y FileChange) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

// diffFiles lists the files that differ between trees from and to
// (ZeroHash: empty), as to holds them.
func (s *Store) diffFiles(from, to Hash) ([]FileChange, error) {
	var files []FileChange
	links := map[int]Hash{}
	err := s.diffEntries("", from, to, func(path string, _, y *treeEntry) error {
		if y != nil && y.mode == modeSymlink {
			links[len(files)] = y.hash
		}
		files = append(files, FileChange{Path: path, Deleted: y == nil, Symlink: links[len(files)] != ZeroHash})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, blob := range links {
		if files[i].Link, err = s.linkTarget(blob); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// mergeBaseTree is the tree of the merge base git names for parents (`git
// merge-base --octopus`: with several best bases, one of them), ZeroHash
// (empty) when they share no history.
func (s *Store) mergeBaseTree(parents []Hash) (Hash, error) {
	args := []string{"merge-base", "--octopus"}
	for _, p := range parents {
		args = append(args, p.String())
	}
	out, err := s.gitOut(args...)
	var ee *exec.ExitError
	if err != nil && errors.As(err, &ee) && ee.ExitCode() == 1 && len(bytes.TrimSpace(out)) == 0 {
		return ZeroHash, nil // no common ancestor
	}
	if err != nil {
		return ZeroHash, err
	}
	base := strings.TrimSpace(string(out))
	if !isHexHash(base) {
		return ZeroHash, fmt.Errorf("gitstore: git merge-base printed %q", truncate(base, 80))
	}
	return s.commitTree(ParseHash(base))
}

// linkTarget reads a symlink's blob ("" when it is longer than any path).
func (s *Store) linkTarget(blob Hash) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errClosed
	}
	_, data, err := s.odb.read(blob)
	if err != nil || len(data) > maxLinkTarget {
		return "", err
	}
	return string(data), nil
}

func (s *Store) commitTree(h Hash) (Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	c, err := s.readCommit(h)
	if err != nil {
		return ZeroHash, err
	}
	return c.tree, nil
}

// FirstParentTimes calls fn for from and its first-parent ancestors,
// newest first, with each commit's committer time, until fn returns false
// or an error, or the root commit is reached. It reads one commit at a
// time.
func (s *Store) FirstParentTimes(from Hash, fn func(h Hash, committed time.Time) (bool, error)) error {
	return s.Log(from, func(c CommitMeta) (bool, error) { return fn(c.Hash, c.CommitTime) })
}

// DirHash returns the name of the tree at dir ("" is the root) in the
// snapshot, ZeroHash when there is no directory there. Two snapshots with
// the same DirHash hold the same files under dir, so a caller can reuse
// what it derived from one for the other.
func (sn *Snapshot) DirHash(dir string) (Hash, error) {
	if err := validateDir(dir); err != nil {
		return ZeroHash, err
	}
	if sn.tree.IsZero() {
		return ZeroHash, nil
	}
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ZeroHash, errClosed
	}
	e, found, err := s.lookup(sn.tree, splitPath(dir))
	if err != nil || !found || !e.isDir() {
		return ZeroHash, err
	}
	return e.hash, nil
}

// parseRevList reads the hashes git rev-list printed, one per line.
func parseRevList(out []byte) ([]Hash, error) {
	var hs []Hash
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if !isHexHash(line) {
			return nil, fmt.Errorf("gitstore: git rev-list printed %q", truncate(line, 80))
		}
		hs = append(hs, ParseHash(line))
	}
	return hs, nil
}
