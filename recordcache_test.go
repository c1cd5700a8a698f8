package loopx_test

import (
	"fmt"
	"testing"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/fixture"

	"github.com/loopx-dev/loopx/lease"
)

// A Store that lives for many mutations keeps its record cache bounded by
// the records of the head, in memory and in the file it saves: every
// version it decoded is not kept.
func TestRecordCacheStaysBoundedInALongLivedStore(t *testing.T) {
	t.Parallel()
	const slack = 8
	f := fixture.NewMem(t, lx.Options{Derived: derived.Config{RecordCacheSlack: slack}}, "agent-a")
	s, repo := f.S, f.Repo
	do := func(req any) { t.Helper(); f.Do(s, req) }
	const todos = 5
	for i := range todos {
		do(lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Text: "t"})
		v := int64(0)
		do(lease.AcquireRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Owner: "agent-a", IdempotencyKey: fmt.Sprintf("k%d", i),
			ExpectedVersion: &v, TTLSeconds: 3600, WriteScopes: []string{fmt.Sprintf("w/%d/**", i)}})
	}
	peak := 0
	for r := int64(1); r <= 60; r++ {
		for i := range todos {
			v := r
			do(lease.RenewRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Owner: "agent-a", IdempotencyKey: fmt.Sprintf("k%d", i),
				ExpectedVersion: &v, TTLSeconds: 3600})
		}
		// A scan reads every record of the head through the cache.
		if _, err := s.ListTodos(lx.TodoFilter{Goal: "g"}); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, s.RecordCacheLen())
	}
	// 5 todos and 5 leases are live; 300 renewals made 300 lease versions.
	if limit := 2*(2*todos) + slack + 2*todos; peak > limit {
		t.Fatalf("the cache grew to %d records (limit %d)", peak, limit)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.RecordCacheLen(); n > 2*todos {
		t.Fatalf("after Close the cache holds %d records, want at most the %d of the head", n, 2*todos)
	}
	// The file holds those (10 records: 13 KB here; the 310 versions
	// decoded would be some 400 KB).
	data, err := repo.ReadSideFile("loopx-cache/records.gob")
	if err != nil || len(data) == 0 || len(data) > 64<<10 {
		t.Fatalf("saved cache: %d bytes, %v", len(data), err)
	}
	t.Logf("peak %d records in memory, %d bytes saved", peak, len(data))
}

// A Store that only reads, while another process writes, keeps its record
// cache bounded too.
func TestRecordCacheStaysBoundedInALongLivedReader(t *testing.T) {
	t.Parallel()
	const slack = 8
	f := fixture.NewMem(t, lx.Options{Derived: derived.Config{RecordCacheSlack: slack}}, "agent-a")
	writer, reader := f.S, f.Open()
	do := func(req any) { t.Helper(); f.Do(writer, req) }
	for i := range 5 {
		do(lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Text: "t"})
	}
	peak := 0
	for r := range 60 {
		for i := range 5 {
			do(lease.UpdateRequest{Goal: "g", Todo: fmt.Sprintf("todo_%03d", i), Actor: "agent-a", Note: fmt.Sprintf("n%d", r)})
		}
		if _, err := reader.ListTodos(lx.TodoFilter{Goal: "g"}); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, reader.RecordCacheLen())
	}
	// 5 todos are live; the reader decoded 300 versions.
	if limit := 2*5 + slack + 5; peak > limit {
		t.Fatalf("the reader's cache grew to %d records (limit %d)", peak, limit)
	}
}
