package derived_test

import (
	"context"
	"testing"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
)

// A bucket that names no todo (a query of a todo without commits) is kept
// like any other: the next query reads it instead of walking all history.
func TestLogIndexEmptyBucketIsKept(t *testing.T) {
	f := fixture.NewMem(t, loopx.Options{})
	f.Do(f.S, lease.AddRequest{Goal: "g", Todo: "todo_aaa", Text: "a"})
	missing := "todo_nothing_here"
	if derived.BucketOf(missing) == derived.BucketOf("todo_aaa") {
		t.Fatal("pick a todo in another bucket")
	}
	head, err := f.Repo.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	c := derived.New(f.Repo, derived.Config{})
	if err := c.TodoCommits(head, missing, func(gitstore.CommitMeta) (bool, error) { n++; return true, nil }); err != nil || n != 0 {
		t.Fatalf("commits of a todo without commits: %d, %v", n, err)
	}
	rev, todos, ok := derived.SavedLogBucket(f.Repo, missing)
	if !ok || rev != head || todos != 0 {
		t.Fatalf("the empty bucket did not load back: %v at %s with %d todos, want the head %s", ok, rev, todos, head)
	}
}
