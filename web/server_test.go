package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource is a Source held in memory; tests change it and signal.
type fakeSource struct {
	mu      sync.Mutex
	rev     string
	board   *Board
	tl      *Timeline
	history *TodoHistory
	agent   *AgentStatus
	err     error
	watch   chan struct{}
	watches int
	heads   int
}

func newFake() *fakeSource {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	exp := now.Add(5 * time.Minute)
	return &fakeSource{rev: "1111111111111111111111111111111111111111", watch: make(chan struct{}, 1),
		board: &Board{Goal: "g", Revision: "1111111111111111111111111111111111111111", Now: now, Agents: []string{"agent-a"},
			Todos: []Todo{
				{ID: "todo_held", Text: "Held one", Status: "open", Priority: "P1",
					Lease: &Holding{Kind: "lease", Owner: "agent-a", Epoch: 3, Scopes: []string{"src/**"}, ExpiresAt: &exp, InForce: true}},
				{ID: "todo_markup", Text: `<script>alert("x")</script><b>bold</b>`, Status: "open", Priority: "P2", Ready: true},
			}},
	}
}

func (f *fakeSource) Head(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heads++
	return f.rev, nil
}
func (f *fakeSource) Goals(ctx context.Context) (*Goals, error) {
	return &Goals{Revision: f.rev, Goals: []Goal{{ID: "g", Status: "active"}}, Default: "g"}, nil
}
func (f *fakeSource) Board(ctx context.Context, goal string) (*Board, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return f.board, nil
}
func (f *fakeSource) Timeline(ctx context.Context, goal string) (*Timeline, error) {
	return f.tl, nil
}
func (f *fakeSource) TodoHistory(ctx context.Context, goal, todo string) (*TodoHistory, error) {
	return f.history, nil
}
func (f *fakeSource) AgentStatus(ctx context.Context, goal, agent string) (*AgentStatus, error) {
	return f.agent, nil
}
func (f *fakeSource) Watch(ctx context.Context) <-chan struct{} {
	f.mu.Lock()
	f.watches++
	f.mu.Unlock()
	out := make(chan struct{})
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.watch:
				select {
				case out <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

func newTestServer(t *testing.T, src Source, opts Options) *httptest.Server {
	t.Helper()
	s, err := New(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts
}

func get(t *testing.T, ts *httptest.Server, method, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// TestSecurityHeaders: every response, pages, assets and errors alike,
// carries the strict policy.
func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, newFake(), Options{})
	for _, p := range []string{"/", "/goals/g", "/static/app.js", "/static/app.css", "/nope"} {
		res, _ := get(t, ts, "GET", p, nil)
		h := res.Header
		if got := h.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || !strings.Contains(got, "default-src 'none'") ||
			strings.Contains(got, "unsafe-inline") || strings.Contains(got, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q", p, got)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", p, h)
		}
	}
}

// TestReadOnly: every method but GET and HEAD is refused, on every path.
func TestReadOnly(t *testing.T) {
	ts := newTestServer(t, newFake(), Options{})
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		for _, p := range []string{"/", "/goals/g", "/events", "/static/app.js"} {
			res, _ := get(t, ts, m, p, nil)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q", m, p, res.StatusCode, res.Header.Get("Allow"))
			}
		}
	}
	res, body := get(t, ts, "HEAD", "/goals/g", nil)
	if res.StatusCode != 200 || body != "" {
		t.Errorf("HEAD: %d %q", res.StatusCode, body)
	}
}

// TestHostNames: only loopback names are served unless ListenAny (DNS
// rebinding: a page of another site that resolves its name to 127.0.0.1).
func TestHostNames(t *testing.T) {
	cases := []struct {
		host      string
		listenAny bool
		want      int
	}{
		{"127.0.0.1:8080", false, 200},
		{"localhost:8080", false, 200},
		{"LOCALHOST", false, 200},
		{"[::1]:8080", false, 200},
		{"127.3.2.1", false, 200},
		{"evil.example:8080", false, http.StatusMisdirectedRequest},
		{"127.0.0.1.evil.example", false, http.StatusMisdirectedRequest},
		{"192.168.1.5:8080", false, http.StatusMisdirectedRequest},
		{"evil.example:8080", true, 200},
	}
	for _, c := range cases {
		ts := newTestServer(t, newFake(), Options{ListenAny: c.listenAny})
		res, body := get(t, ts, "GET", "/goals/g", map[string]string{"Host": c.host})
		if res.StatusCode != c.want {
			t.Errorf("Host %q listenAny %v: %d, want %d", c.host, c.listenAny, res.StatusCode, c.want)
		}
		if c.want != 200 && strings.Contains(body, "todo_held") {
			t.Errorf("Host %q: the board was served", c.host)
		}
	}
}

// TestEscaping: todo text is user input; markup renders as text.
func TestEscaping(t *testing.T) {
	ts := newTestServer(t, newFake(), Options{})
	_, body := get(t, ts, "GET", "/goals/g", nil)
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>bold</b>") {
		t.Fatalf("markup from todo text reached the page unescaped")
	}
	if !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;") {
		t.Fatalf("the escaped text is missing:\n%s", body)
	}
	if n := strings.Count(body, "<script"); n != 1 {
		t.Errorf("%d script elements, want exactly the app's own", n)
	}
}

// TestSectionOf: a todo is placed by its state, in a table.
func TestSectionOf(t *testing.T) {
	exp := time.Now()
	in := &Holding{InForce: true, ExpiresAt: &exp}
	out := &Holding{InForce: false, Lapse: "expired"}
	cases := []struct {
		name string
		t    Todo
		want string
	}{
		{"lease in force", Todo{Status: "open", Lease: in}, "held"},
		{"claim in force", Todo{Status: "open", Claim: in}, "held"},
		{"claim in force, lease lapsed", Todo{Status: "open", Claim: in, Lease: out}, "held"},
		{"lease lapsed", Todo{Status: "open", Lease: out, Ready: true}, "stale"},
		{"claim lapsed", Todo{Status: "open", Claim: out}, "stale"},
		{"ready", Todo{Status: "open", Ready: true}, "ready"},
		{"open dependency", Todo{Status: "open", OpenDependencies: []string{"todo_x"}}, "blocked"},
		{"scope blocked", Todo{Status: "open", ScopeBlocks: []ScopeBlock{{Scope: "a/**"}}}, "blocked"},
		{"not ready", Todo{Status: "open"}, "blocked"},
		{"done with a lease left", Todo{Status: "done", Lease: in}, "done"},
		{"superseded", Todo{Status: "superseded"}, "superseded"},
		{"archived", Todo{Status: "open", Archived: true, Ready: true}, "archived"},
	}
	for _, c := range cases {
		if got := sectionOf(&c.t); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestBoardPaging: each section shows a page and a link for more, which
// shows the next page; the other sections keep their own.
func TestBoardPaging(t *testing.T) {
	f := newFake()
	f.board.Todos = nil
	for i := range 250 {
		f.board.Todos = append(f.board.Todos, Todo{ID: fmt.Sprintf("todo_r%04d", i), Status: "open", Ready: true, Priority: "P2", Text: "ready"})
	}
	for i := range 5 {
		f.board.Todos = append(f.board.Todos, Todo{ID: fmt.Sprintf("todo_d%04d", i), Status: "done", Priority: "P2", Text: "done"})
	}
	ts := newTestServer(t, f, Options{})
	_, body := get(t, ts, "GET", "/goals/g", nil)
	if n := strings.Count(body, `class="card" id="todo-todo_r`); n != PageSize {
		t.Fatalf("%d ready cards on the first page, want %d", n, PageSize)
	}
	if !strings.Contains(body, "todo-todo_d0004") {
		t.Error("the done section lost its todos")
	}
	if !strings.Contains(body, `href="?n_ready=200#todo-todo_r0099"`) {
		t.Fatalf("no link to the next page")
	}
	_, body = get(t, ts, "GET", "/goals/g?n_ready=200", nil)
	if n := strings.Count(body, `class="card" id="todo-todo_r`); n != 200 {
		t.Fatalf("%d ready cards on two pages", n)
	}
	_, body = get(t, ts, "GET", "/goals/g?n_ready=300", nil)
	if n := strings.Count(body, `class="card" id="todo-todo_r`); n != 250 || strings.Contains(body, "n_ready=") {
		t.Fatalf("%d ready cards with all shown, or a link to more", n)
	}
	// Nonsense counts fall back to a page.
	_, body = get(t, ts, "GET", "/goals/g?n_ready=-5", nil)
	if n := strings.Count(body, `class="card" id="todo-todo_r`); n != PageSize {
		t.Fatalf("%d cards for a negative count", n)
	}
}

// TestErrors: Source errors get their HTTP status, and the message is
// escaped like anything else.
func TestErrors(t *testing.T) {
	cases := []struct {
		kind ErrorKind
		want int
	}{{NotFound, 404}, {BadRequest, 400}, {Unavailable, 503}, {Internal, 500}}
	for _, c := range cases {
		f := newFake()
		f.err = &Error{Kind: c.kind, Code: "x_code", Message: "<i>no</i>"}
		ts := newTestServer(t, f, Options{})
		res, body := get(t, ts, "GET", "/goals/g", nil)
		if res.StatusCode != c.want || !strings.Contains(body, "&lt;i&gt;no&lt;/i&gt;") || !strings.Contains(body, "x_code") {
			t.Errorf("kind %d: %d %s", c.kind, res.StatusCode, body)
		}
	}
}

// TestEventsFollowTheHead: the stream starts with the current head and
// sends each new one when the Source's watch signals; a signal without a
// change sends nothing. The watch runs only while somebody listens.
func TestEventsFollowTheHead(t *testing.T) {
	f := newFake()
	ts := newTestServer(t, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
		close(events)
	}()
	next := func() string {
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return ""
	}
	if e := next(); e != f.rev {
		t.Fatalf("first event %q, want the head", e)
	}
	heads := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.heads
	}
	before := heads()
	f.watch <- struct{}{} // no change: nothing sent
	for heads() == before {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	f.rev = "2222222222222222222222222222222222222222"
	f.mu.Unlock()
	f.watch <- struct{}{}
	if e := next(); e != "2222222222222222222222222222222222222222" {
		t.Fatalf("event %q after the head moved", e)
	}
	cancel()
	res.Body.Close()
	for range events {
	}
	f.mu.Lock()
	w := f.watches
	f.mu.Unlock()
	if w != 1 {
		t.Errorf("%d watches for one listener", w)
	}
}

// TestTimelineLayout: bars in time order, marks where an execution was
// transferred or taken over, paging by rows.
func TestTimelineLayout(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := t0.Add(time.Duration(m) * time.Minute); return &x }
	tl := &Timeline{Goal: "g", Now: *at(60), Rows: []TimelineRow{{Todo: "todo_a", Spans: []Span{
		{Epoch: 1, Owner: "agent-a", Start: *at(0), End: at(10), EndReason: "transferred"},
		{Epoch: 2, Owner: "agent-b", Start: *at(10), End: at(20), EndReason: "expired"},
		{Epoch: 3, Owner: "agent-a", Start: *at(30), Current: true, InForce: true, ExpiresAt: at(70)},
	}}}}
	v := layoutTimeline(tl, url.Values{})
	if len(v.Rows) != 1 || len(v.Rows[0].Bars) != 3 {
		t.Fatalf("rows %+v", v.Rows)
	}
	b := v.Rows[0].Bars
	if !(b[0].X < b[1].X && b[1].X < b[2].X) || b[0].X != tlLabelW {
		t.Errorf("bars out of order: %v %v %v", b[0].X, b[1].X, b[2].X)
	}
	if b[0].X+b[0].W != b[1].X {
		t.Errorf("a transfer's bars do not meet: %v+%v vs %v", b[0].X, b[0].W, b[1].X)
	}
	if b[2].X+b[2].W != v.NowX || v.NowX >= v.PlotEnd {
		t.Errorf("the current bar ends at %v, now is %v (plot ends %v)", b[2].X+b[2].W, v.NowX, v.PlotEnd)
	}
	if b[0].Class != b[2].Class[:2] || b[0].Class == b[1].Class || !strings.Contains(b[2].Class, "live") {
		t.Errorf("owner classes %q %q %q", b[0].Class, b[1].Class, b[2].Class)
	}
	m := v.Rows[0].Marks
	if len(m) != 2 || m[0].Kind != "transfer" || m[1].Kind != "takeover" || m[0].X != b[1].X || m[1].X != b[2].X {
		t.Errorf("marks %+v", m)
	}
	if len(v.Owners) != 2 {
		t.Errorf("legend %+v", v.Owners)
	}
	// Paging.
	for i := range 120 {
		tl.Rows = append(tl.Rows, TimelineRow{Todo: fmt.Sprintf("todo_%03d", i), Spans: []Span{{Epoch: 1, Owner: "x", Start: *at(1), End: at(2)}}})
	}
	v = layoutTimeline(tl, url.Values{})
	if v.Shown != tlRowsPage || v.More != "?n=100" || v.Total != 121 {
		t.Errorf("paging: shown %d more %q total %d", v.Shown, v.More, v.Total)
	}
	if v = layoutTimeline(tl, url.Values{"n": {"200"}}); v.Shown != 121 || v.More != "" {
		t.Errorf("all: shown %d more %q", v.Shown, v.More)
	}
}

// TestPages: every page renders its facts (a smoke test of each template
// over the fake source).
func TestPages(t *testing.T) {
	f := newFake()
	now := f.board.Now
	exp := now.Add(time.Minute)
	f.tl = &Timeline{Goal: "g", Now: now, Rows: []TimelineRow{{Todo: "todo_held", Text: "<svg onload=x>", Spans: []Span{{Epoch: 1, Owner: "agent-a", Start: now.Add(-time.Hour), Current: true, InForce: true, ExpiresAt: &exp}}}}}
	f.history = &TodoHistory{Goal: "g", Now: now, Todo: f.board.Todos[0], Commits: []Commit{
		{Revision: "aaaa", Operation: "task-lease.acquire", Actor: "agent-a", Integrity: Verified, Request: `{"owner":"<agent>"}`,
			Signature: &Signature{KeyType: "ssh-ed25519", Fingerprint: "SHA256:abc", Agent: "agent-a", Valid: true}},
		{Revision: "bbbb", Operation: "task-lease.renew", Integrity: Invalid, Problem: "tree_mismatch: the tree differs"},
	}}
	f.agent = &AgentStatus{Goal: "g", Agent: "agent-a", Registered: true, Role: "agent", Now: now,
		Holding: []Holding{{Todo: "todo_held", Kind: "lease", Epoch: 3, ExpiresAt: &exp, InForce: true}}}
	ts := newTestServer(t, f, Options{})
	cases := []struct {
		path string
		want []string
	}{
		{"/", []string{`href="/goals/g"`}},
		{"/goals/g", []string{"todo_held", "epoch 3", `class="countdown" datetime="2026-01-01T12:05:00Z"`, "5m 00s left", `aria-current="page"`}},
		{"/goals/g/timeline", []string{"<svg", "agent-a e1", "&lt;svg onload=x&gt;", "<table"}},
		{"/goals/g/todos/todo_held", []string{"✓ verified", "✗ does not verify", "tree_mismatch", "signed by agent-a", "&lt;agent&gt;"}},
		{"/goals/g/agents/agent-a", []string{"Holds", "todo_held", "1m 00s left"}},
	}
	for _, c := range cases {
		res, body := get(t, ts, "GET", c.path, nil)
		if res.StatusCode != 200 {
			t.Errorf("%s: %d", c.path, res.StatusCode)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: missing %q", c.path, w)
			}
		}
		for _, landmark := range []string{"<main", "<nav", "<header", `lang="en"`, `name="viewport"`} {
			if !strings.Contains(body, landmark) {
				t.Errorf("%s: no %s", c.path, landmark)
			}
		}
	}
}
