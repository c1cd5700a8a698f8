package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure a Server.
type Options struct {
	// ListenAny accepts requests for any host name. Without it (the
	// default) only requests addressed to a loopback name (localhost,
	// 127.0.0.1, ::1) are served: a page of another site that resolves
	// its own name to 127.0.0.1 (DNS rebinding) gets 421, not the board.
	ListenAny bool
	// PageSize is how many todos a board section shows before "more"
	// (default PageSize).
	PageSize int
	// Heartbeat is the interval of the event stream's keep-alive comments
	// (default 25s).
	Heartbeat time.Duration
	// Log receives one line per failed request (default: discarded).
	Log *log.Logger
}

// Server is the web app over one Source. It is an http.Handler.
type Server struct {
	src   Source
	opts  Options
	pages map[string]*template.Template
	mux   *http.ServeMux
	hub   *hub
	// static is the embedded assets folder.
	static fs.FS
}

// New returns the server of src.
func New(src Source, opts Options) (*Server, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = PageSize
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 25 * time.Second
	}
	if opts.Log == nil {
		opts.Log = log.New(io.Discard, "", 0)
	}
	s := &Server{src: src, opts: opts, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	s.hub = newHub(src)
	for _, p := range []string{"index", "board", "timeline", "todo", "agent", "error"} {
		t, err := template.New(p).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/card.html", "templates/"+p+".html")
		if err != nil {
			return nil, err
		}
		s.pages[p] = t
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	s.static = static
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /goals/{goal}", s.board)
	s.mux.HandleFunc("GET /goals/{goal}/timeline", s.timeline)
	s.mux.HandleFunc("GET /goals/{goal}/todos/{todo}", s.todo)
	s.mux.HandleFunc("GET /goals/{goal}/agents/{agent}", s.agent)
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(s.asset)))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "not_found", "no such page")
	})
	return s, nil
}

// Close ends the event streams and the watch feeding them.
func (s *Server) Close() { s.hub.close() }

// csp is the Content-Security-Policy of every response: only this server's
// own script, styles and connections; no inline script or style, no
// frames, no plugins, no forms.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP applies the server's rules to every request: security headers,
// loopback host names only (unless ListenAny), GET and HEAD only.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	if !s.opts.ListenAny && !LoopbackHost(r.Host) {
		s.fail(w, r, http.StatusMisdirectedRequest, "host_not_allowed",
			fmt.Sprintf("this server answers requests for localhost, 127.0.0.1 or [::1] only, not %q", r.Host))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		s.fail(w, r, http.StatusMethodNotAllowed, "read_only", "this server is read-only: GET and HEAD only")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// LoopbackHost reports whether a Host header names this machine's loopback
// interface: localhost, an address in 127.0.0.0/8, or ::1, with any port.
func LoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// page is what every template gets.
type page struct {
	Title    string
	Goal     string
	Nav      string // the page's kind, for the navigation's aria-current
	Revision string
	Now      time.Time
	Remote   string
	Data     any
}

// render executes a page template into a buffer first, so a template error
// is a clean 500 and never half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		s.opts.Log.Printf("render %s: %v", name, err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

type errorData struct {
	Status  int
	Code    string
	Message string
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if status >= 500 {
		s.opts.Log.Printf("%s %s: %s: %s", r.Method, r.URL.Path, code, msg)
	}
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Data: errorData{Status: status, Code: code, Message: msg}})
}

// sourceError answers a Source error.
func (s *Server) sourceError(w http.ResponseWriter, r *http.Request, err error) {
	kind, code := kindOf(err)
	status := http.StatusInternalServerError
	switch kind {
	case NotFound:
		status = http.StatusNotFound
	case BadRequest:
		status = http.StatusBadRequest
	case Unavailable:
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "2")
	}
	if code == "" {
		code = "internal"
	}
	msg := err.Error()
	var e *Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	s.fail(w, r, status, code, msg)
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	gs, err := s.src.Goals(r.Context())
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "index", page{Title: "Goals", Nav: "index", Revision: gs.Revision, Remote: gs.Remote, Data: gs})
}

type boardData struct {
	*Board
	Sections []*section
}

func (s *Server) board(w http.ResponseWriter, r *http.Request) {
	b, err := s.src.Board(r.Context(), r.PathValue("goal"))
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	d := boardData{Board: b, Sections: sections(b, r.URL.Query(), s.opts.PageSize)}
	s.render(w, r, http.StatusOK, "board", page{Title: b.Goal + " board", Goal: b.Goal, Nav: "board", Revision: b.Revision, Now: b.Now, Remote: b.Remote, Data: d})
}

type timelineData struct {
	*Timeline
	View *tlView
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	tl, err := s.src.Timeline(r.Context(), r.PathValue("goal"))
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	d := timelineData{Timeline: tl, View: layoutTimeline(tl, r.URL.Query())}
	s.render(w, r, http.StatusOK, "timeline", page{Title: tl.Goal + " lease timeline", Goal: tl.Goal, Nav: "timeline", Revision: tl.Revision, Now: tl.Now, Data: d})
}

func (s *Server) todo(w http.ResponseWriter, r *http.Request) {
	h, err := s.src.TodoHistory(r.Context(), r.PathValue("goal"), r.PathValue("todo"))
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "todo", page{Title: h.Todo.ID + " history", Goal: h.Goal, Nav: "todo", Revision: h.Revision, Now: h.Now, Data: h})
}

func (s *Server) agent(w http.ResponseWriter, r *http.Request) {
	a, err := s.src.AgentStatus(r.Context(), r.PathValue("goal"), r.PathValue("agent"))
	if err != nil {
		s.sourceError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "agent", page{Title: a.Agent + " in " + a.Goal, Goal: a.Goal, Nav: "agent", Revision: a.Revision, Now: a.Now, Data: a})
}

// asset serves an embedded file. The names are fixed by the binary, so
// they may be cached for a while; the pages themselves are never cached.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	data, err := fs.ReadFile(s.static, name)
	if err != nil || name == "" || strings.Contains(name, "/") {
		s.fail(w, r, http.StatusNotFound, "not_found", "no such file")
		return
	}
	ct := "application/octet-stream"
	switch {
	case strings.HasSuffix(name, ".css"):
		ct = "text/css; charset=utf-8"
	case strings.HasSuffix(name, ".js"):
		ct = "text/javascript; charset=utf-8"
	case strings.HasSuffix(name, ".svg"):
		ct = "image/svg+xml"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=300")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// events is the event stream of head changes: on connect the current head
// (so a change made between the page's load and the stream's start is not
// missed), then one "head" event per new revision, and a comment every
// Heartbeat so proxies and the browser keep the connection.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	sub := s.hub.subscribe()
	defer s.hub.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	fmt.Fprint(w, "retry: 2000\n\n")
	if rev, err := s.src.Head(r.Context()); err == nil {
		fmt.Fprintf(w, "event: head\ndata: %s\n\n", sseData(rev))
	}
	fl.Flush()
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		case rev := <-sub:
			fmt.Fprintf(w, "event: head\ndata: %s\n\n", sseData(rev))
			fl.Flush()
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}

// sseData keeps a value on one data line.
func sseData(s string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// hub runs one watch of the Source while anybody listens, and tells every
// listener each new head.
type hub struct {
	src    Source
	mu     sync.Mutex
	subs   map[chan string]bool
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

func newHub(src Source) *hub {
	return &hub{src: src, subs: map[chan string]bool{}, done: make(chan struct{})}
}

func (h *hub) subscribe() chan string {
	c := make(chan string, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[c] = true
	if h.cancel == nil && !h.closed {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go h.watch(ctx)
	}
	return c
}

func (h *hub) unsubscribe(c chan string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, c)
	if len(h.subs) == 0 && h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.done)
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
}

// watch reads the head on every signal of the Source's watch and sends a
// new one to every listener (a listener that has not taken the previous
// one gets the newest instead).
func (h *hub) watch(ctx context.Context) {
	last, _ := h.src.Head(ctx)
	for range h.src.Watch(ctx) {
		rev, err := h.src.Head(ctx)
		if err != nil || rev == last {
			continue
		}
		last = rev
		h.mu.Lock()
		for c := range h.subs {
			select {
			case <-c:
			default:
			}
			c <- rev
		}
		h.mu.Unlock()
	}
}

// pathOf is a site path with each segment escaped.
func pathOf(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}
