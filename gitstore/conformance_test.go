package gitstore_test

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/gitstore/storetest"
	"github.com/loopx-dev/loopx/internal/soak"
)

// The conformance suite against the real store bound to its local ref,
// against the real store bound to a Git server's ref (the Remote
// authority, through a git daemon and through git http-backend on
// 127.0.0.1: remotes go through the git binary, whose push carries the old
// value the server checks), and against the in-memory Repo. go-git's own
// server would ignore a push's old value, so it is not a subject.

var quick = gitstore.RetryPolicy{MaxAttempts: 10, Min: time.Millisecond, Factor: 2, Jitter: 1, Max: 10 * time.Millisecond, Timeout: time.Minute}

func TestConformanceGit(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Subject {
		dir := t.TempDir()
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		s, err := gitstore.Open(dir, gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return storetest.Subject{
			Repo: s.Bind(gitstore.LocalRef(), quick),
			Foreign: func(t *testing.T, changes []gitstore.Change) gitstore.Hash {
				h, _ := s.Head()
				n, err := s.Commit(h, changes, gitstore.CommitInfo{Message: "foreign"})
				if err != nil {
					t.Fatal(err)
				}
				return n
			},
			Reset: func(t *testing.T, h gitstore.Hash) {
				cur, _ := s.Head()
				if err := s.UpdateRef(s.Ref(), cur, h); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

func TestConformanceMem(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Subject {
		m := gitstore.NewMemRepo(quick)
		return storetest.Subject{
			Repo: m,
			Foreign: func(t *testing.T, changes []gitstore.Change) gitstore.Hash {
				h, err := m.ForeignCommit(changes, gitstore.CommitInfo{Message: "foreign"})
				if err != nil {
					t.Fatal(err)
				}
				return h
			},
			Reset: func(t *testing.T, h gitstore.Hash) { m.Reset(h) },
		}
	})
}

// TestConformanceRemote: the subject is a clone bound to the server's ref;
// a foreign writer is another clone pushing to the same server, and a
// rewound ref is the server's, moved back by hand.
func TestConformanceRemote(t *testing.T) {
	t.Parallel()
	for _, transport := range []struct {
		name  string
		serve func(t testing.TB, base string) string
	}{{"daemon", gitstore.DaemonURLForTest}, {"http", gitstore.HTTPURLForTest}} {
		t.Run(transport.name, func(t *testing.T) {
			if transport.name == "http" {
				soak.Only(t, "the suite through git http-backend")
			}
			base := t.TempDir()
			url := transport.serve(t, base)
			var n atomic.Int32
			storetest.Run(t, func(t *testing.T) storetest.Subject {
				name := fmt.Sprintf("state%d", n.Add(1))
				bare := gitstore.ServeBareForTest(t, base, name)
				s := remoteClone(t, url+"/"+name+".git")
				other := remoteClone(t, url+"/"+name+".git")
				foreign := other.Bind(&gitstore.Remote{Name: "origin"}, quick)
				return storetest.Subject{
					Repo: s.Bind(&gitstore.Remote{Name: "origin"}, quick),
					Foreign: func(t *testing.T, changes []gitstore.Change) gitstore.Hash {
						res, err := foreign.Transact(context.Background(), func(*gitstore.Snapshot) (*gitstore.Proposal, error) {
							return &gitstore.Proposal{Changes: changes, Info: gitstore.CommitInfo{Message: "foreign"}}, nil
						})
						if err != nil {
							t.Fatal(err)
						}
						return res.Head
					},
					Reset: func(t *testing.T, h gitstore.Hash) {
						gitstore.RunGitForTest(t, bare, "update-ref", gitstore.DefaultRef, h.String())
					},
				}
			})
		})
	}
}

// remoteClone is a repository whose remote origin is url.
func remoteClone(t *testing.T, url string) *gitstore.Store {
	t.Helper()
	dir := t.TempDir()
	gitstore.RunGitForTest(t, dir, "init", "-q", dir)
	gitstore.RunGitForTest(t, dir, "remote", "add", "origin", url)
	s, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
