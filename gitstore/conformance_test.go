package gitstore_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/gitstore/storetest"
)

// The conformance suite against the real store (bound to its local ref)
// and against the in-memory Repo.

var quick = gitstore.RetryPolicy{MaxAttempts: 10, Min: time.Millisecond, Factor: 2, Jitter: 1, Max: 10 * time.Millisecond, Timeout: time.Minute}

func TestConformanceGit(t *testing.T) {
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
