package loopxsource_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/web"
	"github.com/loopx-dev/loopx/web/loopxsource"
)

// openSource opens dir's store as `loopx web` does (remote "" for local).
func openSource(t *testing.T, dir, remote string) *loopxsource.Source {
	t.Helper()
	st, err := lx.Open(lx.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := gitstore.Open(dir, gitstore.Options{Ref: st.Ref()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gs.Close(); st.Close() })
	src := loopxsource.New(st, gs, remote)
	src.PollMin, src.PollMax, src.LocalPoll = 20*time.Millisecond, 100*time.Millisecond, time.Hour
	return src
}

// waitHead waits for a signal of w after which src's head differs from old.
func waitHead(t *testing.T, src *loopxsource.Source, w <-chan struct{}, old string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-w:
			h, err := src.Head(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if h != old {
				return h
			}
		case <-deadline:
			t.Fatal("the watch never told of the new head")
		}
	}
}

// TestWatchLocal: a commit by another process is signalled by the ref
// watch (file notifications: the fallback poll is an hour here), and the
// board read then shows it.
func TestWatchLocal(t *testing.T) {
	dir := newStore(t)
	loopx(t, dir, "todo", "add", "--todo-id", "todo_lexer", "--text", "Write the lexer")
	src := openSource(t, dir, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old, err := src.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := src.Watch(ctx)
	loopx(t, dir, "task-lease", "acquire", "--todo-id", "todo_lexer", "--owner", "agent-a", "--idempotency-key", "k1", "--ttl-seconds", "60")
	head := waitHead(t, src, w, old)
	b, err := src.Board(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if b.Revision != head || len(b.Todos) != 1 || b.Todos[0].Lease == nil || b.Todos[0].Lease.Owner != "agent-a" || !b.Todos[0].Lease.InForce {
		t.Fatalf("board at %s: %+v", head, b.Todos)
	}
	cancel()
	for range w { // the watch ends with its context
	}
}

// TestWatchRemote: with a remote, the server's head is polled: an acquire
// made through another clone is signalled, and the board shows it.
func TestWatchRemote(t *testing.T) {
	root := t.TempDir()
	server := filepath.Join(root, "server.git")
	git(t, root, "init", "-q", "--bare", server)
	clone := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, d, "init", "-q")
		git(t, d, "remote", "add", "origin", server)
		loopx(t, d, "init", "--remote", "origin")
		return d
	}
	a := clone("a")
	loopx(t, a, "goal", "create", "--goal-id", "g")
	loopx(t, a, "agent", "register", "--agent-id", "agent-b")
	loopx(t, a, "todo", "add", "--todo-id", "todo_lexer", "--text", "Write the lexer")
	b := clone("b")
	src := openSource(t, a, "origin")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old, err := src.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := src.Watch(ctx)
	loopx(t, b, "task-lease", "acquire", "--todo-id", "todo_lexer", "--owner", "agent-b", "--idempotency-key", "k1", "--ttl-seconds", "60")
	head := waitHead(t, src, w, old)
	board, err := src.Board(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if board.Revision != head || board.Remote != "origin" || board.Todos[0].Lease == nil || board.Todos[0].Lease.Owner != "agent-b" {
		t.Fatalf("board at %s (head %s): %+v", board.Revision, head, board.Todos)
	}
	tl, err := src.Timeline(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Rows) != 1 || len(tl.Rows[0].Spans) != 1 || tl.Rows[0].Spans[0].Owner != "agent-b" || !tl.Rows[0].Spans[0].InForce {
		t.Fatalf("timeline %+v", tl.Rows)
	}
}

// TestSourceErrors: unknown goals and todos are not found, malformed ids
// bad requests.
func TestSourceErrors(t *testing.T) {
	dir := newStore(t)
	src := openSource(t, dir, "")
	ctx := context.Background()
	check := func(what string, err error, want web.ErrorKind) {
		t.Helper()
		e, ok := err.(*web.Error)
		if !ok || e.Kind != want {
			t.Errorf("%s: %v (%T), want kind %d", what, err, err, want)
		}
	}
	_, err := src.Board(ctx, "nope")
	check("unknown goal", err, web.NotFound)
	_, err = src.TodoHistory(ctx, "g", "todo_nope")
	check("unknown todo", err, web.NotFound)
	_, err = src.TodoHistory(ctx, "g", "BAD")
	check("malformed todo id", err, web.BadRequest)
	_, err = src.AgentStatus(ctx, "g", "Bad Agent")
	check("malformed agent id", err, web.BadRequest)
	st, err := src.AgentStatus(ctx, "g", "agent-z")
	if err != nil || st.Registered || len(st.Ready) != 0 {
		t.Errorf("an unknown agent: %+v %v", st, err)
	}
}
