// Command scaleseed builds the stores bench/scale.sh measures, through the
// Go API only (so the same file builds against an older loopx, whose stores
// are then made by that loopx's own code):
//
//	scaleseed -dir D -todos N -leases L
//	    a store with goal g, agents seed-agent and bench-agent, N open todos
//	    and L active leases on the first of them (seed-agent, scope
//	    seed/<i>/**, 24 h from 2026-01-01), written as one commit; then the
//	    board and a gc.
//	scaleseed -dir D -todos T -history M
//	    a store with T todos on which M real mutations are decided, each
//	    todo cycling through an agent's work: acquire, renew, renew,
//	    transfer to the other agent, renew, release; then a gc.
//
// The clock is fixed (2026-01-01, one second per mutation), so the stores
// are the same on every run.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	dir := flag.String("dir", "", "repository to create")
	todos := flag.Int("todos", 100, "todos")
	leases := flag.Int("leases", 0, "active leases (seeded)")
	history := flag.Int("history", 0, "mutations of history")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the seeding here")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	clock := start
	opts := lx.Options{Dir: *dir, Now: func() time.Time { return clock }}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if _, err := lx.Init(opts, lx.InitOptions{}); err != nil {
		log.Fatal(err)
	}
	s, err := lx.Open(opts)
	if err != nil {
		log.Fatal(err)
	}
	apply := func(req any) *lx.Result[any] {
		res, err := s.Apply(lease.CallOf(req))
		if err != nil {
			log.Fatalf("%T %+v: %v", req, req, err)
		}
		return res
	}
	apply(lease.GoalCreateRequest{Goal: "g"})
	apply(lease.RegisterRequest{Goal: "g", Agent: "seed-agent"})
	apply(lease.RegisterRequest{Goal: "g", Agent: "bench-agent"})
	if *history == 0 {
		s.Close()
		seed(*dir, *todos, *leases)
		s, err = lx.Open(opts)
		if err != nil {
			log.Fatal(err)
		}
		if _, _, err := s.ProjectMarkdown("g"); err != nil {
			log.Fatal(err)
		}
	} else {
		for i := 0; i < *todos; i++ {
			clock = clock.Add(time.Second)
			apply(lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_hist_%04d", i), Text: fmt.Sprintf("todo %d of the history", i)})
		}
		type state struct {
			phase   int
			owner   string
			key     string
			version int64
			n       int
		}
		st := make([]state, *todos)
		agents := []string{"seed-agent", "bench-agent"}
		for m := 0; m < *history; m++ {
			clock = clock.Add(time.Second)
			i := m % *todos
			t := &st[i]
			todo := fmt.Sprintf("todo_hist_%04d", i)
			v := t.version
			switch t.phase {
			case 0:
				t.owner = agents[(i+t.n)%2]
				t.key = fmt.Sprintf("exec-%d-%d", i, t.n)
				t.n++
				apply(lease.AcquireRequest{Goal: "g", Todo: todo, Owner: t.owner, IdempotencyKey: t.key, ExpectedVersion: &v, TTLSeconds: 86400, WriteScopes: []string{fmt.Sprintf("hist/%d/**", i)}})
				t.version++
			case 1, 2, 4:
				apply(lease.RenewRequest{Goal: "g", Todo: todo, Owner: t.owner, IdempotencyKey: t.key, ExpectedVersion: &v, TTLSeconds: 86400})
				t.version++
			case 3:
				other := agents[0]
				if t.owner == other {
					other = agents[1]
				}
				key := fmt.Sprintf("exec-%d-%d", i, t.n)
				t.n++
				apply(lease.TransferRequest{Goal: "g", Todo: todo, Owner: t.owner, IdempotencyKey: t.key, ExpectedVersion: &v, NewOwner: other, NewIdempotencyKey: key, TTLSeconds: 86400})
				t.owner, t.key = other, key
				t.version++
			case 5:
				apply(lease.ReleaseRequest{Goal: "g", Todo: todo, Owner: t.owner, IdempotencyKey: t.key, ExpectedVersion: &v})
			}
			t.phase = (t.phase + 1) % 6
		}
	}
	if _, err := s.GC(); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
}

// seed writes n open todos, the first nLeases of them with an active
// lease, in one commit.
func seed(dir string, n, nLeases int) {
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: lx.DefaultRef})
	if err != nil {
		log.Fatal(err)
	}
	defer gs.Close()
	_, err = gs.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		p := &gitstore.Proposal{Info: gitstore.CommitInfo{Message: "seed\n\nLoopx-Operation: seed\n", AuthorName: "seed", AuthorEmail: "seed@loopx.invalid", When: start}}
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("todo_seed_%06d", i)
			td := &lease.Todo{ID: id, Text: "seeded " + id, Status: lease.TodoOpen, Priority: "P3", CreatedAt: start, UpdatedAt: start}
			if i < nLeases {
				td.LeaseEpoch = 1
				td.RequiredWriteScopes = []string{fmt.Sprintf("seed/%d/**", i)}
				l := &lease.Lease{TodoID: id, Owner: "seed-agent", IdempotencyKey: "seed-" + id, Version: 1, Epoch: 1,
					Status: lease.LeaseActive, WriteScopes: td.RequiredWriteScopes, AcquiredAt: start, ExpiresAt: start.Add(24 * time.Hour),
					OwnerRegistration: 1,
					Holders:           []lease.Holder{{Epoch: 1, Owner: "seed-agent", IdempotencyKey: "seed-" + id, StartedAt: start}}}
				p.Changes = append(p.Changes, gitstore.Change{Path: lease.LeasePath("g", id), Data: lease.Encode(l)})
			}
			p.Changes = append(p.Changes, gitstore.Change{Path: lease.TodoPath("g", id), Data: lease.Encode(td)})
		}
		return p, nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
