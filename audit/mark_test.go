package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
)

// TestLogVerifiesWhatItShows: a log judges each entry it shows, and only
// those, while the verified-up-to mark is far behind; once the mark is set
// it looks verdicts up; a log a few commits above the mark judges just
// those. A forged commit is invalid and names nobody, with or without the
// mark.
func TestLogVerifiesWhatItShows(t *testing.T) {
	auditor := func(s *loopx.Store) *Auditor {
		a := New(s)
		a.MarkCatchUp = 8
		return a
	}
	f := fixture.NewMem(t, loopx.Options{}, "agent-a", "agent-b")
	s := f.S
	for i := range 30 {
		f.Do(s, lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_n%02d", i), Text: "n", Actor: "agent-a"})
	}
	// A forged commit: an honest add's message, records it did not write.
	head, _ := f.Repo.Head(context.Background())
	prev, _ := records.CommitMeta(f.Repo, head)
	for prev.Message == "" || !strings.Contains(prev.Message, "Loopx-Request") {
		prev, _ = records.CommitMeta(f.Repo, prev.Parent)
	}
	_, err := f.Repo.Transact(context.Background(), func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Info: gitstore.CommitInfo{Message: strings.Replace(prev.Message, "todo_n29", "todo_fake", -1),
			AuthorName: "agent-a", AuthorEmail: "agent-a@loopx.invalid", CommitterName: "loopx", CommitterEmail: "loopx@loopx.invalid", When: f.Clock},
			Changes: []gitstore.Change{{Path: "goals/g/forged.yaml", Data: []byte("x: 1\n")}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		f.Do(s, lease.UpdateRequest{Goal: "g", Todo: "todo_n01", Actor: "agent-b", Note: fmt.Sprintf("note %d", i)})
	}
	judged := map[string]int{}
	log := func(q LogQuery) []LogEntry {
		t.Helper()
		a := auditor(f.Open())
		res, err := a.Log(q)
		if err != nil {
			t.Fatal(err)
		}
		judged[q.Agent] = a.judged
		return res.Data.Entries
	}

	// Far behind (no mark, more than MarkCatchUp commits): each entry shown.
	got := log(LogQuery{Limit: 5})
	if len(got) != 5 || judged[""] != 5 {
		t.Fatalf("a --limit 5 log judged %d commits for %d entries, want 5", judged[""], len(got))
	}
	byAgent := log(LogQuery{Agent: "agent-a", Limit: 50})
	for _, e := range byAgent {
		if e.Todo == "todo_fake" || e.Integrity != IntegrityVerified {
			t.Fatalf("agent-a's log shows %+v", e)
		}
	}
	all := log(LogQuery{Limit: 200})
	forged := 0
	for _, e := range all {
		if e.Integrity == IntegrityInvalid {
			forged++
			if e.Actor != "" || e.Subject != "" || !strings.HasPrefix(e.Problem, lease.ProblemTreeMismatch) {
				t.Fatalf("the forged entry: %+v", e)
			}
		}
	}
	if forged != 1 {
		t.Fatalf("%d invalid entries, want 1", forged)
	}

	// verify --history stops at the forged commit: no mark. A history that
	// verifies sets it; a log then judges nothing.
	f2 := fixture.NewMem(t, loopx.Options{}, "agent-a")
	for i := range 20 {
		f2.Do(f2.S, lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_m%02d", i), Text: "m", Actor: "agent-a"})
	}
	if _, err := auditor(f2.S).VerifyHistory(""); err != nil {
		t.Fatal(err)
	}
	s2 := auditor(f2.Open())
	if _, err := s2.Log(LogQuery{Limit: 50}); err != nil || s2.judged != 0 {
		t.Fatalf("below a mark at the head a log judged %d commits (%v)", s2.judged, err)
	}
	for i := range 3 {
		f2.Do(f2.S, lease.UpdateRequest{Goal: "g", Todo: "todo_m01", Actor: "agent-a", Note: fmt.Sprintf("n%d", i)})
	}
	s3 := auditor(f2.Open())
	if _, err := s3.Log(LogQuery{Limit: 1}); err != nil || s3.judged != 6 { // 3 state + 3 board commits
		t.Fatalf("three mutations above the mark: the log judged %d commits (%v), want 6", s3.judged, err)
	}
	s4 := auditor(f2.Open())
	if _, err := s4.Log(LogQuery{Limit: 50}); err != nil || s4.judged != 0 {
		t.Fatalf("the mark did not move up: %d judged (%v)", s4.judged, err)
	}
}
