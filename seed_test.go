package loopx_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// seedTodos writes n open todos (and nLeases active leases on the first of
// them, each with its own scope) into goal g of the store in dir, in one
// commit, so benchmarks can start from a large store without n CLI calls.
func seedTodos(t testing.TB, dir string, n, nLeases int) {
	t.Helper()
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: "refs/loopx/state"})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = gs.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		p := &gitstore.Proposal{Info: gitstore.CommitInfo{Message: "seed\n\nLoopx-Operation: seed\n", AuthorName: "seed", AuthorEmail: "seed@loopx.invalid", When: now}}
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("todo_seed_%06d", i)
			td := &lease.Todo{ID: id, Text: "seeded " + id, Status: lease.TodoOpen, Priority: "P3", CreatedAt: now, UpdatedAt: now}
			if i < nLeases {
				td.LeaseEpoch = 1 // the lease's epoch (lease/generation.go)
				td.RequiredWriteScopes = []string{fmt.Sprintf("seed/%d/**", i)}
				l := &lease.Lease{TodoID: id, Owner: "seed-agent", IdempotencyKey: "seed-" + id, Version: 1, Epoch: 1,
					Status: lease.LeaseActive, WriteScopes: td.RequiredWriteScopes, AcquiredAt: now, ExpiresAt: now.Add(24 * time.Hour),
					OwnerRegistration: 1, // seed-agent's first registration (newStore registers it once)
					Holders:           []lease.Holder{{Epoch: 1, Owner: "seed-agent", IdempotencyKey: "seed-" + id, StartedAt: now}}}
				p.Changes = append(p.Changes, gitstore.Change{Path: lease.LeasePath("g", id), Data: lease.Encode(l)})
			}
			p.Changes = append(p.Changes, gitstore.Change{Path: lease.TodoPath("g", id), Data: lease.Encode(td)})
		}
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
