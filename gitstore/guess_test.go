package gitstore

import (
	"context"
	"fmt"
	"testing"
)

// A process guesses, on a transaction's first attempt, that the server's
// head is still the one it last published, and skips the fetch; a guess
// that lost its compare-and-swap turns guessing off (fetch first) until a
// fetch finds the head still at what this process last published.
func TestRemoteGuessBacksOffWhenStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bare := newBare(t)
	a, b := remoteClient(t, bare), remoteClient(t, bare)
	fetches := 0
	ra := &Remote{Name: "origin", OnHead: func(_ Hash, published bool) {
		if !published {
			fetches++
		}
	}}
	repoA, repoB := a.Bind(ra, DefaultRetry), b.Bind(&Remote{Name: "origin"}, DefaultRetry)
	n := 0
	write := func(r Repo) Proposal {
		n++
		return Proposal{Changes: []Change{put(fmt.Sprintf("notes/%d", n), "x")}, Info: CommitInfo{Message: "note"}}
	}
	// step runs one transaction of r and checks its lost races and the
	// fetches A made.
	step := func(what string, r Repo, wantConflicts, wantFetches int) {
		t.Helper()
		p := write(r)
		before := fetches
		res, err := r.Transact(ctx, func(*Snapshot) (*Proposal, error) { return &p, nil })
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r == repoB {
			return // B's own guesses are not under test
		}
		if res.Conflicts != wantConflicts || fetches-before != wantFetches {
			t.Fatalf("%s: %d lost races and %d fetches, want %d and %d", what, res.Conflicts, fetches-before, wantConflicts, wantFetches)
		}
	}
	step("A's first transaction fetches", repoA, 0, 1)
	step("A alone guesses right: no fetch", repoA, 0, 0)
	step("B writes", repoB, -1, 0)
	step("A's guess is stale: one lost race, then a fetch", repoA, 1, 1)
	step("B writes", repoB, -1, 0)
	step("after a stale guess A fetches first: no lost race", repoA, 0, 1)
	step("the fetch finds A's own head: nobody wrote since", repoA, 0, 1)
	step("so A guesses again", repoA, 0, 0)
}
