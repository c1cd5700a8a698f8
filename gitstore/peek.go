package gitstore

// Reads for `loopx doctor`, which must never write: git's version, and a
// look at a remote's head that keeps nothing.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// GitVersion is the version of the git binary remote operations run
// ("2.39.5"), or an error when there is none.
func GitVersion(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, gitBinary, "version")
	cmd.Env = append(gitEnv(), "LC_ALL=C", "LANGUAGE=C")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("gitstore: %s version: %w", gitBinary, err)
	}
	v := strings.TrimSpace(string(out))
	v = strings.TrimPrefix(v, "git version ")
	return v, nil
}

// MinWireGitVersion is the oldest git whose fetch and push remote mode
// relies on (fetch --no-write-fetch-head came with 2.29).
var MinWireGitVersion = [2]int{2, 29}

// VersionAtLeast reports whether a version as GitVersion returns it
// ("2.39.5", "2.45.1.windows.1") is at least major.minor.
func VersionAtLeast(v string, min [2]int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}

// Peek is a remote's head of the store's ref, as PeekRemote read it.
type Peek struct {
	// Head is the remote's value of the ref (ZeroHash: the remote lacks it).
	Head Hash
	// Time is the head commit's committer time.
	Time time.Time
	// File is the file asked for in the head's tree (nil: there is none).
	File []byte
}

// PeekRemote lists the remote's head of the store's ref, as LsRemote, and
// reads its committer time and one file of its tree, keeping nothing:
// a head this repository lacks is fetched into a temporary folder outside
// it (no ref, FETCH_HEAD, object or maintenance of the repository changes)
// and the folder removed. ctx bounds the whole look.
func (s *Store) PeekRemote(ctx context.Context, remote, path string) (Peek, error) {
	target, err := s.wireTarget(remote)
	if err != nil {
		return Peek{}, err
	}
	head, err := s.gitLsRemote(ctx, remote, target)
	if err != nil || head.IsZero() {
		return Peek{Head: head}, err
	}
	if s.hasCommit(head) {
		sn, err := s.Snapshot(head)
		if err != nil {
			return Peek{Head: head}, err
		}
		data, ok, err := sn.Read(path)
		if !ok {
			data = nil
		}
		return Peek{Head: head, Time: sn.Time(), File: data}, err
	}
	dir, err := os.MkdirTemp("", "loopx-peek-")
	if err != nil {
		return Peek{Head: head}, fmt.Errorf("gitstore: %w: %v", ErrIO, err)
	}
	defer os.RemoveAll(dir)
	q := &quarantine{dir: dir}
	out, err := s.wireGitIn(ctx, q, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--no-auto-maintenance", "--no-write-commit-graph", "--no-show-forced-updates", "--refmap=", target, s.ref)
	if err != nil {
		return Peek{Head: head}, noGit(remote, err)
	}
	if out.code != 0 {
		return Peek{Head: head}, s.wireError(ctx, remote, target, "fetch", out, true)
	}
	commit, err := s.wireGitIn(ctx, q, "cat-file", "commit", head.String())
	if err != nil || commit.code != 0 {
		// The ref moved between the listing and the fetch: look again.
		return Peek{Head: head}, fmt.Errorf("gitstore: remote %s: %s moved while it was read (%v): %w", redactURL(remote), s.ref, err, ErrRemoteUnavailable)
	}
	p := Peek{Head: head, Time: committerTime(commit.stdout)}
	blob, err := s.wireGitIn(ctx, q, "cat-file", "blob", head.String()+":"+path)
	if err == nil && blob.code == 0 {
		p.File = bytes.Clone([]byte(blob.stdout))
	}
	return p, nil
}

// committerTime reads the committer line's time of a raw commit.
func committerTime(raw string) time.Time {
	for _, line := range strings.Split(raw, "\n") {
		if line == "" {
			break // the headers end
		}
		rest, ok := strings.CutPrefix(line, "committer ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		if sec, err := strconv.ParseInt(f[len(f)-2], 10, 64); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Time{}
}
