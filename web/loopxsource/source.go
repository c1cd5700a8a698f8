// Package loopxsource is the web app's Source over a loopx store: the one
// place that reads the root package's results (their maps and types) and
// turns them into the web package's views. When the Go API's result shapes
// change, this file changes and web does not.
//
// What it reads, and from where:
//   - the board, an agent's status, a todo: the Store's read methods
//     (ListTodos, Status, ShowTodo, ListGoals, ListAgents), so every
//     judgement (claims and leases in force, why a holder lapsed, what is
//     ready) is the commands' own;
//   - a todo's history: Store.Log (each entry's integrity is the log's
//     verification), with the commit's recorded request and its SSH
//     signature read from the repository (gitstore);
//   - the lease timeline: the lease records' holders (the last
//     lease.MaxHolders executions of each todo), read from the snapshot of
//     the revision the Store's read just returned;
//   - the head and its changes: gitstore's ref watch locally; with a remote
//     (not offline), ls-remote on a bounded poll.
package loopxsource

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/web"
)

// Source reads one store for the web app. Its methods may be called
// concurrently; reads of the Store are serialized.
type Source struct {
	mu     sync.Mutex // guards st (a Store is not made for concurrent reads)
	st     *loopx.Store
	git    *gitstore.Store
	remote string
	// Poll bounds the remote poll: the interval starts at Min after a
	// change and grows by half on each quiet poll up to Max.
	PollMin, PollMax time.Duration
	// LocalPoll is the fallback read of the local ref when file
	// notifications may have been missed (or do not work).
	LocalPoll time.Duration
	// HistoryLimit bounds the commits a todo's history shows.
	HistoryLimit int
}

// New returns the Source of st. git is the same repository opened with
// gitstore (for the ref watch, commit messages and signatures); remote is
// the remote whose server is the authority, "" for a local store (or one
// worked on offline).
func New(st *loopx.Store, git *gitstore.Store, remote string) *Source {
	return &Source{st: st, git: git, remote: remote,
		PollMin: time.Second, PollMax: 10 * time.Second, LocalPoll: 2 * time.Second, HistoryLimit: 200}
}

// Head implements web.Source.
func (s *Source) Head(ctx context.Context) (string, error) {
	var h gitstore.Hash
	var err error
	if s.remote != "" {
		h, err = s.git.LsRemote(ctx, s.remote)
	} else {
		h, err = s.git.Head()
	}
	if err != nil {
		return "", convert(err)
	}
	if h.IsZero() {
		return "", nil
	}
	return h.String(), nil
}

// Watch implements web.Source: file notifications on the ref (with a slow
// fallback read) locally, a bounded poll of the server's head remotely.
func (s *Source) Watch(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	if s.remote != "" {
		go func() {
			defer close(out)
			last, _ := s.Head(ctx)
			interval := s.PollMin
			for {
				t := time.NewTimer(interval)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				h, err := s.Head(ctx)
				if err == nil && h != last {
					last = h
					interval = s.PollMin
					signal()
					continue
				}
				interval = min(interval+interval/2, s.PollMax)
			}
		}()
		return out
	}
	go func() {
		defer close(out)
		rw := s.git.WatchRef()
		defer rw.Close()
		fallback := time.NewTicker(s.LocalPoll)
		defer fallback.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-rw.C:
			case <-fallback.C:
			}
			signal()
		}
	}()
	return out
}

// Goals implements web.Source.
func (s *Source) Goals(ctx context.Context) (*web.Goals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.st.ListGoals()
	if err != nil {
		return nil, convert(err)
	}
	goals := res.Data.Goals
	out := &web.Goals{Revision: res.CurrentRevision, Remote: s.remote}
	active := 0
	for _, g := range goals {
		out.Goals = append(out.Goals, web.Goal{ID: g.ID, Title: g.Title, Status: g.Status, HandoffMode: g.HandoffMode})
		if g.Status == lease.GoalActive {
			active++
			out.Default = g.ID
		}
	}
	if active != 1 {
		out.Default = ""
	}
	return out, nil
}

// goalInfo reads a goal's record and registered agents.
func (s *Source) goalInfo(goal string) (*lease.Goal, []*lease.Agent, error) {
	res, err := s.st.ListAgents(goal)
	if err != nil {
		return nil, nil, convert(err)
	}
	agents, id := res.Data.Agents, res.Data.GoalID
	gres, err := s.st.ListGoals()
	if err != nil {
		return nil, nil, convert(err)
	}
	for _, g := range gres.Data.Goals {
		if g.ID == id {
			return g, agents, nil
		}
	}
	return &lease.Goal{ID: id}, agents, nil
}

// Board implements web.Source.
func (s *Source) Board(ctx context.Context, goal string) (*web.Board, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, agents, err := s.goalInfo(goal)
	if err != nil {
		return nil, err
	}
	res, err := s.st.ListTodos(loopx.TodoFilter{Goal: g.ID})
	if err != nil {
		return nil, convert(err)
	}
	todos := res.Data.Todos
	sres, err := s.st.Status(g.ID, "")
	if err != nil {
		return nil, convert(err)
	}
	st := &sres.Data
	b := &web.Board{Goal: g.ID, Title: g.Title, Revision: res.CurrentRevision, Now: st.Now,
		Archived: g.Status == lease.GoalArchived, Remote: s.remote, ClockSkew: skewWords(sres.ClockSkew)}
	for _, a := range agents {
		if a.Registered() {
			b.Agents = append(b.Agents, a.ID)
		}
	}
	j := newJudged(st)
	var v *lease.View // the records at the list's revision, for open dependencies
	b.Todos = make([]web.Todo, len(todos))
	for i := range todos {
		t := j.todo(&todos[i])
		if needsDeps(&t) {
			if v == nil {
				if v, err = s.viewAt(res.CurrentRevision); err != nil {
					return nil, err
				}
			}
			open, err := lease.OpenDependencies(v, g.ID, &todos[i].Todo)
			if err != nil {
				return nil, convert(err)
			}
			t.OpenDependencies = open
		}
		b.Todos[i] = t
	}
	return b, nil
}

// needsDeps: an open todo that nobody holds, that is not ready and that
// has dependencies: the board says which are open.
func needsDeps(t *web.Todo) bool {
	return t.Status == lease.TodoOpen && !t.Archived && !t.Ready && t.Lease == nil && t.Claim == nil && len(t.DependsOn) > 0
}

// judged holds a status result's judgements by todo.
type judged struct {
	claims, leases map[string]web.Holding
	ready          map[string]bool
	inForce        []lease.Holding // leases in force, for scope blocks
}

func newJudged(st *lease.StatusData) *judged {
	j := &judged{claims: map[string]web.Holding{}, leases: map[string]web.Holding{}, ready: map[string]bool{}}
	add := func(h lease.Holding, inForce bool) {
		wh := holding(h, inForce)
		if h.Kind == lease.HoldingLease {
			j.leases[h.TodoID] = wh
			if inForce {
				j.inForce = append(j.inForce, h)
			}
		} else {
			j.claims[h.TodoID] = wh
		}
	}
	for _, h := range st.Active {
		add(h, true)
	}
	for _, h := range st.Expired {
		add(h, false)
	}
	for _, r := range st.Ready {
		j.ready[r.TodoID] = true
	}
	return j
}

// holding converts a status holding.
func holding(h lease.Holding, inForce bool) web.Holding {
	wh := web.Holding{Todo: h.TodoID, Kind: h.Kind, Owner: h.Owner, ScopeAgent: h.ScopeAgent,
		Scopes: h.WriteScopes, ExpiresAt: h.ExpiresAt, InForce: inForce, Lapse: h.Reason}
	if h.Epoch != nil {
		wh.Epoch = *h.Epoch
	}
	if h.Version != nil {
		wh.Version = *h.Version
	}
	return wh
}

// todo converts one todo, with its holdings and scope blocks.
func (j *judged) todo(tv *lease.TodoView) web.Todo {
	t := web.Todo{ID: tv.ID, Text: tv.Text, Status: tv.Status, Priority: tv.Priority, Archived: tv.Archived,
		DependsOn: tv.DependsOn, RequiredScopes: tv.RequiredWriteScopes, Ready: j.ready[tv.ID],
		Evidence: tv.Evidence, ClosedBy: tv.ClosedBy}
	if tv.TodoRelations != nil {
		t.OpenDependencies = tv.OpenDependencies
	}
	if h, ok := j.claims[tv.ID]; ok {
		t.Claim = &h
	}
	if h, ok := j.leases[tv.ID]; ok {
		t.Lease = &h
	}
	if t.Status == lease.TodoOpen && !t.Archived && !t.Ready && (t.Lease == nil || !t.Lease.InForce) {
		for _, need := range tv.RequiredWriteScopes {
			for _, h := range j.inForce {
				if h.TodoID == tv.ID {
					continue
				}
				for _, held := range h.WriteScopes {
					if lease.ScopesOverlap(need, held) {
						var epoch int64
						if h.Epoch != nil {
							epoch = *h.Epoch
						}
						t.ScopeBlocks = append(t.ScopeBlocks, web.ScopeBlock{Scope: need, Todo: h.TodoID, Owner: h.Owner, HeldScope: held, Epoch: epoch})
					}
				}
			}
		}
	}
	return t
}

// Timeline implements web.Source.
func (s *Source) Timeline(ctx context.Context, goal string) (*web.Timeline, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sres, err := s.st.Status(goal, "")
	if err != nil {
		return nil, convert(err)
	}
	st := &sres.Data
	v, err := s.viewAt(sres.CurrentRevision)
	if err != nil {
		return nil, err
	}
	leases, err := v.Leases(st.GoalID)
	if err != nil {
		return nil, convert(err)
	}
	j := newJudged(st)
	tl := &web.Timeline{Goal: st.GoalID, Revision: sres.CurrentRevision, Now: st.Now, HolderLimit: lease.MaxHolders}
	last := map[string]time.Time{}
	for _, l := range leases {
		t, err := v.Todo(st.GoalID, l.TodoID)
		if err != nil {
			return nil, convert(err)
		}
		row := web.TimelineRow{Todo: l.TodoID}
		if t != nil {
			row.Text = t.Text
		}
		for i, h := range l.Holders {
			sp := web.Span{Epoch: h.Epoch, Owner: h.Owner, Start: h.StartedAt.UTC(), EndReason: h.EndReason}
			if h.EndedAt != nil {
				e := h.EndedAt.UTC()
				sp.End = &e
			}
			if i == len(l.Holders)-1 && h.Epoch == l.Epoch && l.Status == lease.LeaseActive {
				exp := l.ExpiresAt.UTC()
				sp.Current, sp.ExpiresAt, sp.End = true, &exp, nil
				jh, held := j.leases[l.TodoID]
				sp.InForce = held && jh.InForce
				if !sp.InForce && !exp.After(st.Now) {
					// Lapsed: drawn up to its expiry, not to now.
					sp.End = &exp
					sp.EndReason = "expired, not taken over"
				}
			} else if sp.End == nil && i == len(l.Holders)-1 && l.ReleasedAt != nil {
				e := l.ReleasedAt.UTC()
				sp.End, sp.EndReason = &e, "released"
			}
			row.Spans = append(row.Spans, sp)
			end := sp.Start
			if sp.End != nil {
				end = *sp.End
			} else {
				end = st.Now
			}
			if end.After(last[l.TodoID]) {
				last[l.TodoID] = end
			}
		}
		if len(row.Spans) > 0 {
			tl.Rows = append(tl.Rows, row)
		}
	}
	sort.SliceStable(tl.Rows, func(a, b int) bool {
		la, lb := last[tl.Rows[a].Todo], last[tl.Rows[b].Todo]
		if !la.Equal(lb) {
			return la.After(lb)
		}
		return tl.Rows[a].Todo < tl.Rows[b].Todo
	})
	return tl, nil
}

// TodoHistory implements web.Source.
func (s *Source) TodoHistory(ctx context.Context, goal, todo string) (*web.TodoHistory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.st.ShowTodo(goal, todo)
	if err != nil {
		return nil, convert(err)
	}
	tv, g := res.Data.Todo, res.Data.GoalID
	sres, err := s.st.Status(g, "")
	if err != nil {
		return nil, convert(err)
	}
	st := &sres.Data
	h := &web.TodoHistory{Goal: g, Revision: res.CurrentRevision, Now: st.Now, Todo: newJudged(st).todo(&tv), Limit: s.HistoryLimit}
	lres, err := audit.New(s.st).Log(audit.LogQuery{Goal: g, Todo: todo, Limit: s.HistoryLimit + 1})
	if err != nil {
		return nil, convert(err)
	}
	entries := lres.Data.Entries
	if len(entries) > s.HistoryLimit {
		entries, h.Limited = entries[:s.HistoryLimit], true
	}
	keys := map[string]string{} // authorized key → agent
	if _, agents, err := s.goalInfo(g); err == nil {
		for _, a := range agents {
			if a.SigningKey != "" {
				keys[a.SigningKey] = a.ID
			}
		}
	}
	for _, e := range entries {
		c := web.Commit{Revision: e.Revision, Time: e.Time, Operation: e.Operation, Actor: e.Actor, Status: e.Status,
			Version: e.Version, Epoch: e.Epoch, Subject: e.Subject, Integrity: e.Integrity, Problem: e.Problem,
			PreviousHolder: e.PreviousHolder, NewOwner: e.NewOwner, TargetAgent: e.TargetAgent}
		hash := gitstore.ParseHash(e.Revision)
		if facts, err := s.git.ReadCommitFacts(hash); err == nil {
			rc, _ := lease.ParseCommit(facts.Message)
			c.Request = rc.Request
		}
		c.Signature = s.signature(hash, keys)
		h.Commits = append(h.Commits, c)
	}
	return h, nil
}

// signature describes commit h's SSH signature: whose registered key it
// names, and whether it checks against that key.
func (s *Source) signature(h gitstore.Hash, keys map[string]string) *web.Signature {
	payload, sig, err := s.git.CommitSignature(h)
	if err != nil || sig == nil {
		return nil
	}
	pub, err := gitstore.SSHSignatureKey(sig)
	if err != nil {
		return &web.Signature{Problem: strings.TrimPrefix(err.Error(), "gitstore: ")}
	}
	out := &web.Signature{KeyType: pub.Type(), Fingerprint: ssh.FingerprintSHA256(pub)}
	out.Agent = keys[strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))]
	if err := gitstore.VerifySSH(payload, sig, pub); err != nil {
		out.Problem = strings.TrimPrefix(err.Error(), "gitstore: ")
		return out
	}
	out.Valid = true
	if out.Agent == "" {
		out.Problem = "not a registered key of this goal's agents"
	}
	return out
}

// AgentStatus implements web.Source.
func (s *Source) AgentStatus(ctx context.Context, goal, agent string) (*web.AgentStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, agents, err := s.goalInfo(goal)
	if err != nil {
		return nil, err
	}
	if err := lease.CheckAgentID("agent id", agent); err != nil {
		return nil, convert(err)
	}
	out := &web.AgentStatus{Goal: g.ID, Agent: agent}
	for _, a := range agents {
		if a.ID == agent {
			out.Registered, out.Role = a.Registered(), a.Role
		}
	}
	asked := ""
	if out.Registered {
		asked = agent // ready for it; an unregistered agent has nothing ready
	}
	sres, err := s.st.Status(g.ID, asked)
	if err != nil {
		return nil, convert(err)
	}
	st := &sres.Data
	out.Revision, out.Now, out.ClockSkew = sres.CurrentRevision, st.Now, skewWords(sres.ClockSkew)
	texts := map[string]string{}
	mine := func(h lease.Holding) bool { return h.Owner == agent || h.ScopeAgent == agent }
	for _, h := range st.Active {
		if mine(h) {
			out.Holding = append(out.Holding, holding(h, true))
		}
	}
	for _, h := range st.Expired {
		if mine(h) {
			out.Lapsed = append(out.Lapsed, holding(h, false))
		}
	}
	if len(out.Holding)+len(out.Lapsed) > 0 {
		v, err := s.viewAt(sres.CurrentRevision)
		if err != nil {
			return nil, err
		}
		for _, hs := range [][]web.Holding{out.Holding, out.Lapsed} {
			for i := range hs {
				if _, ok := texts[hs[i].Todo]; !ok {
					if t, err := v.Todo(g.ID, hs[i].Todo); err == nil && t != nil {
						texts[hs[i].Todo] = t.Text
					}
				}
				hs[i].Text = texts[hs[i].Todo]
			}
		}
	}
	if out.Registered {
		for _, r := range st.Ready {
			t := web.Todo{ID: r.TodoID, Text: r.Text, Priority: r.Priority, Status: lease.TodoOpen,
				RequiredScopes: r.RequiredWriteScopes, Ready: true}
			if r.ClaimedBy != "" {
				t.Claim = &web.Holding{Todo: r.TodoID, Kind: lease.HoldingClaim, Owner: r.ClaimedBy, InForce: true}
				for _, h := range st.Active {
					if h.TodoID == r.TodoID && h.Kind == lease.HoldingClaim {
						hh := holding(h, true)
						t.Claim = &hh
					}
				}
			}
			out.Ready = append(out.Ready, t)
		}
	}
	return out, nil
}

// viewAt is the records of revision rev, read from the repository (the
// revision a Store read just returned: with a remote, that read fetched
// it).
func (s *Source) viewAt(rev string) (*lease.View, error) {
	h := gitstore.ParseHash(rev)
	if h.IsZero() {
		return nil, &web.Error{Kind: web.NotFound, Code: string(lease.CodeStoreNotInitialized), Message: "no loopx store here: run `loopx init`"}
	}
	sn, err := s.git.Snapshot(h)
	if err != nil {
		return nil, convert(err)
	}
	return records.View(sn), nil // records read as the Store reads them: with their size limit
}

// skewWords describes a read's clock skew ("" for none).
func skewWords(sk *lease.Skew) string {
	if sk == nil {
		return ""
	}
	return fmt.Sprintf("The head is dated %s, more than %d s ahead of this machine's clock (%s): expiry is judged at the head's time.",
		sk.HeadTime, sk.MaxClockSkewSeconds, sk.LocalTime)
}

// convert gives a store error its web kind: not found, bad request,
// unavailable (transient), or internal.
func convert(err error) error {
	if err == nil {
		return nil
	}
	le, ok := lease.AsError(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return &web.Error{Kind: web.Unavailable, Code: "canceled", Message: err.Error()}
		}
		return &web.Error{Kind: web.Internal, Code: "internal", Message: err.Error()}
	}
	e := &web.Error{Code: string(le.Code), Message: le.Message}
	switch {
	case le.Code == lease.CodeGoalNotFound, le.Code == lease.CodeTodoNotFound, le.Code == lease.CodeStoreNotInitialized,
		le.Code == lease.CodeAgentNotRegistered:
		e.Kind = web.NotFound
	case strings.HasPrefix(string(le.Code), "invalid_"), le.Code == lease.CodeUsage:
		e.Kind = web.BadRequest
	case lease.ClassOf(le.Code) == lease.Transient:
		e.Kind = web.Unavailable
	default:
		e.Kind = web.Internal
	}
	return e
}
