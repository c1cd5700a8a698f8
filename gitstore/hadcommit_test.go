package gitstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Whether the commit a transaction makes is already in the repository (an
// identical decision on a rewound ref) is answered without go-git, which
// would load every pack index; a commit only in an alternate object store
// is not readable anyway.
func TestHadCommit(t *testing.T) {
	same := func(s *Store) (TxResult, error) {
		t.Helper()
		return s.transact(context.Background(), LocalRef(), DefaultRetry, func(sn *Snapshot) (*Proposal, error) {
			return &Proposal{Changes: []Change{put("b", "1")}, Info: CommitInfo{Message: "same", When: time.Unix(1_700_000_002, 0)}}, nil
		})
	}
	a := newRepo(t)
	sa := openT(t, a, Options{Ref: "refs/loopx/state"})
	base := commitT(t, sa, put("a", "1"))
	reads := sa.odb.fallbackReads
	first, err := same(sa)
	if err != nil || first.Existed {
		t.Fatalf("a new commit: %+v, %v", first, err)
	}
	if n := sa.odb.fallbackReads - reads; n != 0 {
		t.Errorf("a commit read %d objects through go-git", n)
	}
	runGitT(t, a, "update-ref", "refs/loopx/state", base.String())
	if again, err := same(sa); err != nil || again.State != first.State || !again.Existed {
		t.Errorf("identical decision: %+v (%v), first %+v", again, err, first)
	}
	runGitT(t, a, "update-ref", "refs/keep", first.State.String())
	runGitT(t, a, "update-ref", "refs/loopx/state", base.String())
	runGitT(t, a, "gc", "-q", "--prune=now") // the commit in a pack of git's
	sa = openT(t, a, Options{Ref: "refs/loopx/state"})
	if again, err := same(sa); err != nil || again.State != first.State || !again.Existed {
		t.Errorf("identical decision after git gc: %+v (%v), first %+v", again, err, first)
	}

	// b borrows a's objects: gitstore cannot read its base commit there.
	b := newRepo(t)
	if err := os.WriteFile(filepath.Join(b, ".git", "objects", "info", "alternates"), []byte(filepath.Join(a, ".git", "objects")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGitT(t, b, "update-ref", "refs/loopx/state", base.String())
	if _, err := same(openT(t, b, Options{Ref: "refs/loopx/state"})); err == nil {
		t.Error("a commit on a base only an alternate holds")
	}
}
