package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/lease"
)

// TestLogIndexMatchesWalk: along random histories of several todos (the ref
// moved back now and then, the index's side files damaged or gone), a log
// of one todo answered from the index equals the walk's, whatever the
// limit and the other filters.
func TestLogIndexMatchesWalk(t *testing.T) {
	deep := 0
	defer func() { t.Logf("%d answers went on below the index", deep) }()
	rapid.Check(t, func(rt *rapid.T) {
		// Small indexes too, so queries go on below what they name.
		keep := rapid.SampledFrom([]int{2, 3, 8, 64}).Draw(rt, "keep")
		clock := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		repo := gitstore.NewMemRepo(gitstore.DefaultRetry)
		opts := loopx.Options{Now: func() time.Time { return clock }, Derived: derived.Config{LogIndexKeep: keep}}
		s := loopx.OpenRepo(repo, opts)
		a := New(s)
		for _, req := range []any{
			lease.InitRequest{FormatVersion: lease.FormatVersion},
			lease.GoalCreateRequest{Goal: "g"},
			lease.RegisterRequest{Goal: "g", Agent: "agent-a"},
			lease.RegisterRequest{Goal: "g", Agent: "agent-b"},
		} {
			if _, err := s.Apply(lease.CallOf(req)); err != nil {
				rt.Fatal(err)
			}
		}
		todos := []string{"todo_aaa", "todo_bbb", "todo_ccc"}
		var heads []gitstore.Hash
		steps := rapid.IntRange(5, 120).Draw(rt, "steps")
		for i := range steps {
			clock = clock.Add(time.Second)
			todo := rapid.SampledFrom(todos).Draw(rt, "todo")
			agent := rapid.SampledFrom([]string{"agent-a", "agent-b"}).Draw(rt, "agent")
			var req any
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0:
				req = lease.AddRequest{Goal: "g", Todo: todo, Text: todo}
			case 1, 4, 5:
				req = lease.UpdateRequest{Goal: "g", Todo: todo, Actor: agent, Note: fmt.Sprintf("n%d", i)}
			case 2:
				req = lease.ClaimRequest{Goal: "g", Todo: todo, Actor: agent}
			default:
				req = lease.UpdateRequest{Goal: "g", Todo: todo, Actor: agent, ClearClaim: true}
			}
			_, _ = s.Apply(lease.CallOf(req))
			head, _ := repo.Head(context.Background())
			heads = append(heads, head)
			switch rapid.IntRange(0, 9).Draw(rt, "event") {
			case 0: // the ref moved back
				back := heads[rapid.IntRange(0, len(heads)-1).Draw(rt, "back")]
				repo.Reset(back)
			case 1: // a damaged bucket
				sum := sha256.Sum256([]byte(rapid.SampledFrom(todos).Draw(rt, "damaged")))
				name := "loopx-cache/log-" + hex.EncodeToString(sum[:1])
				if data, _ := repo.ReadSideFile(name); len(data) > 0 {
					data[rapid.IntRange(0, len(data)-1).Draw(rt, "at")] ^= 1
					repo.WriteSideFile(name, data, false)
				}
			}
			if !rapid.Bool().Draw(rt, "query") {
				continue
			}
			head, _ = repo.Head(context.Background())
			q := LogQuery{Todo: rapid.SampledFrom(todos).Draw(rt, "qtodo"), Limit: rapid.IntRange(1, keep).Draw(rt, "limit")}
			switch rapid.IntRange(0, 3).Draw(rt, "filter") {
			case 1:
				q.Agent = rapid.SampledFrom([]string{"agent-a", "agent-b"}).Draw(rt, "qagent")
			case 2:
				q.Operation = rapid.SampledFrom([]string{"todo", "todo.claim", "todo.update"}).Draw(rt, "qop")
			case 3:
				q.Goal = rapid.SampledFrom([]string{"g", "h"}).Draw(rt, "qgoal")
			}
			lv, err := a.newLogVerifier(head)
			if err != nil {
				rt.Fatal(err)
			}
			got, ok, err := a.indexedLog(head, q, lv)
			if err != nil || !ok {
				rt.Fatalf("indexed log: %v %v", ok, err)
			}
			want, err := a.walkLog(head, q, lv)
			if err != nil {
				rt.Fatal(err)
			}
			if below(repo, head, q.Todo, keep, want) {
				deep++ // an answer that goes on below what the index names
			}
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("query %+v: index gave %d entries, the walk %d\n%+v\n%+v", q, len(got), len(want), got, want)
			}
		}
	})
}

// below reports whether the entries of a log of todo reach below the keep
// newest commits of todo, which is all the index names.
func below(repo gitstore.Repo, head gitstore.Hash, todo string, keep int, entries []LogEntry) bool {
	if len(entries) == 0 {
		return false
	}
	n := 0
	deeper := false
	_ = repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if e, _ := lease.ParseMessage(c.Message); e.Todo == todo {
			n++
		}
		if c.Hash.String() == entries[len(entries)-1].Revision {
			deeper = n > keep
			return false, nil
		}
		return true, nil
	})
	return deeper
}
