package derived_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/fixture"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
)

// A board rendered for a decision shows the decision's own writes, also
// when the goal's saved model is at the very revision decided on (a
// mutation that did not change the board's bytes saves its model at its
// state commit, the head the next decision reads).
func TestBoardRenderShowsTheDecisionsWrites(t *testing.T) {
	f := fixture.NewMem(t, loopx.Options{}, "agent-a")
	f.Do(f.S, lease.AddRequest{Goal: "g", Todo: "todo_aaa", Text: "a"})
	head, err := f.Repo.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sn, err := f.Repo.Snapshot(head)
	if err != nil {
		t.Fatal(err)
	}
	c := derived.New(f.Repo, derived.Config{})
	_, m, err := derived.RenderFull(c.RecordView(sn), "g", f.Clock, markdown.RendererTimed)
	if err != nil {
		t.Fatal(err)
	}
	c.Boards().Save("g", head, m)

	v := c.View(sn)
	if _, err := lease.AddTodo(v, lease.AddRequest{Goal: "g", Todo: "todo_bbb", Text: "b", Actor: "agent-a", Priority: "P2"}, f.Clock); err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Boards().Render(derived.TargetOf(sn, v, f.Clock), "g")
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := derived.RenderFull(v, "g", f.Clock, markdown.RendererTimed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte("todo_bbb")) {
		t.Fatalf("the board from the saved model:\n%s\nfrom every record:\n%s", got, want)
	}
}
