package lease

import (
	"fmt"
	"testing"
	"time"
)

// benchListing is a listing of n todos as bench/scaleseed makes them.
func benchListing(n int) *Listing {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var todos []*Todo
	leases := map[string]*Lease{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("todo_seed_%06d", i)
		todos = append(todos, &Todo{ID: id, Text: "seeded " + id, Status: TodoOpen, Priority: "P3",
			RequiredWriteScopes: []string{fmt.Sprintf("seed/%d/**", i)}, CreatedAt: at, UpdatedAt: at})
		if i < 10 {
			leases[id] = &Lease{TodoID: id, Owner: "seed-agent", Epoch: 1, Status: LeaseActive, ExpiresAt: at.Add(24 * time.Hour)}
		}
	}
	return NewListing(todos, leases)
}

// BenchmarkDecodeListing decodes the listing of 10,000 todos, as every
// todo list and todo ready process does first.
func BenchmarkDecodeListing(b *testing.B) {
	data := benchListing(10000).Encode()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeListing(data); err != nil {
			b.Fatal(err)
		}
	}
}
