package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loopx-dev/loopx"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/markdown"
	"github.com/loopx-dev/loopx/remote"
)

// verify --history (contract section 7): every commit on the state ref's
// first-parent history, oldest first, is checked against its parent.
//
//   - A state commit: its recorded request (lease.ParseCommit, strict) is
//     re-decided on the parent at the commit's time (lease.Redecide); the
//     tree of the parent with the decision's writes must be the commit's
//     tree, the message the one the decision gives, the author the acting
//     agent and the committer loopx.
//   - A board commit: it must name its parent (Loopx-Projection-Of) and be
//     the parent's tree with the goal's board set to the rendering of the
//     parent's records at the board commit's own (author) time, the time it
//     was rendered at. Rendered at another time, it fails only if that
//     changes its bytes. A board drawn by a loopx from before boards had a
//     render time is checked against that renderer
//     (markdown.RendererUntimed), so its history keeps verifying.
//   - Commits whose parent is a store of format 1 (before requests were
//     recorded) are "unverifiable: made by an older loopx"; the upgrade
//     commit (store.upgrade, format 2) is itself verified, and from it on a
//     commit that does not verify is a forgery.
//
// The first commit that does not hold is named, with the reason.

// HistoryData is the result of verify --history.
type HistoryData struct {
	Valid bool   `json:"valid"`
	Head  string `json:"head"`
	Since string `json:"since,omitempty"`
	// Commits counts the commits checked; StateCommits the re-decided
	// requests and BoardCommits the re-rendered boards among them.
	Commits      int `json:"commits"`
	StateCommits int `json:"state_commits"`
	BoardCommits int `json:"board_commits"`
	// Older counts commits made before the store recorded requests.
	Older        int             `json:"unverifiable_older"`
	FirstInvalid *HistoryProblem `json:"first_invalid,omitempty"`
}

// HistoryReport is the result of verify --history.
type HistoryReport struct {
	History *HistoryData `json:"history"`
}

// HistoryProblem names a commit that does not verify.
type HistoryProblem struct {
	Revision string `json:"revision"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
}

// HistoryQuery says which history verify --history checks, and how.
type HistoryQuery struct {
	// Since is a revision on the state ref: only the commits after it are
	// checked ("" for all of it).
	Since string
	// Published checks the history as a server holds it (the hookless CI
	// check): an offline commit (Loopx-Offline) on it was pushed as it
	// is, which the server hook refuses, so it does not verify either.
	Published bool
}

// VerifyHistory re-verifies the state ref's history after since (a
// revision on it; "" for all of it).
func (a *Auditor) VerifyHistory(since string) (*loopx.Result[HistoryReport], error) {
	return a.VerifyHistoryOf(HistoryQuery{Since: since})
}

// VerifyHistoryOf re-verifies the history q names. Besides verifying each
// commit against its parent it reports, as the server hook refuses, a
// commit dated more than the store's skew bound ahead of this machine's
// real clock (future_dated, code clock_skew; LOOPX_NOW does not apply):
// the check that a host without hooks runs from CI sees a takeover dated
// ahead of real time (contract section 8).
func (a *Auditor) VerifyHistoryOf(q HistoryQuery) (*loopx.Result[HistoryReport], error) {
	since := q.Since
	head, err := a.repo.Head(context.Background())
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if head.IsZero() {
		return nil, lease.Errorf(lease.CodeStoreNotInitialized, "no loopx store here: run `loopx init`")
	}
	d, err := a.verifyHistory(head, since, q.Published)
	if err != nil {
		return nil, err
	}
	res := loopx.NewResult(a.s, loopx.Envelope{Operation: "verify", CurrentRevision: records.Rev(head)}, a.s.Now(), HistoryReport{History: d})
	if !d.Valid {
		p := d.FirstInvalid
		code := lease.CodeCorruptRecord
		switch p.Reason {
		case ProblemSignatureRequired, ProblemSignatureInvalid:
			code = lease.Code(p.Reason)
		case lease.ProblemFutureDated:
			code = lease.CodeClockSkew
		}
		return res, lease.Errorf(code, "commit %s does not verify: %s: %s", p.Revision, p.Reason, p.Message).
			With("revision", p.Revision).With("reason", p.Reason).With("history", d)
	}
	return res, nil
}

// verifyHistory checks the first-parent chain from head back to since.
func (a *Auditor) verifyHistory(head gitstore.Hash, since string, published bool) (*HistoryData, error) {
	d := &HistoryData{Valid: true, Head: head.String(), Since: since}
	stop := gitstore.ZeroHash
	if since != "" {
		stop = gitstore.ParseHash(since)
		if stop.IsZero() || len(since) != 40 {
			return nil, lease.Errorf(lease.CodeInvalidRequest, "--since %q: want a full commit hash on the state ref", since).With("field", "since")
		}
	}
	// The chain, oldest first (hashes only: the messages are read again
	// one at a time, so memory stays flat in history length).
	var chain []gitstore.Hash
	found := stop.IsZero()
	err := a.repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if c.Hash == stop {
			found = true
			return false, nil
		}
		chain = append(chain, c.Hash)
		return true, nil
	})
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if !found {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "--since %s is not on the state ref's first-parent history", since).With("field", "since")
	}
	boards := &historyBoards{a: a, models: map[string]*historyModel{}}
	realNow := a.s.SystemNow()
	older := map[string]bool{}
	// Commits dated beyond the bound ahead of the real clock, not yet
	// acknowledged by a clock-reset after them (see futureDated).
	var future []*HistoryProblem
	fail := func(p *HistoryProblem) (*HistoryData, error) {
		if len(future) > 0 {
			p = future[0] // it came first
		}
		d.Valid, d.FirstInvalid = false, p
		return d, nil
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c, err := records.CommitMeta(a.repo, chain[i])
		if err != nil {
			return nil, storeerr.Map(err)
		}
		d.Commits++
		kind, perr := a.verifyCommit(c, boards)
		if perr == nil {
			perr = a.checkPublished(c, published)
		}
		if perr != nil {
			he, ok := perr.(*lease.HistoryError)
			if !ok {
				return nil, storeerr.Map(perr)
			}
			return fail(&HistoryProblem{Revision: c.Hash.String(), Reason: he.Kind, Message: he.Message})
		}
		why, reset, err := a.futureDated(c, realNow)
		if err != nil {
			return nil, storeerr.Map(err)
		}
		switch {
		case why != "":
			future = append(future, &HistoryProblem{Revision: c.Hash.String(), Reason: lease.ProblemFutureDated, Message: why})
		case reset:
			future = nil // the audited recovery acknowledges them
		}
		switch kind {
		case commitState:
			d.StateCommits++
		case commitBoard:
			d.BoardCommits++
		case commitOlder:
			d.Older++
			older[c.Hash.String()] = true
		}
	}
	if len(future) > 0 {
		return fail(nil)
	}
	if stop.IsZero() {
		a.markVerified(head, older) // the whole history verified: later logs look verdicts up
	}
	return d, nil
}

// checkPublished holds a verified commit of a published history (the
// hookless CI check) to what a server judges: an offline commit pushed as
// it is does not verify.
func (a *Auditor) checkPublished(c gitstore.CommitMeta, published bool) error {
	if published && remote.IsOffline(c.Message) {
		return historyProblem(lease.ProblemOfflineCommit, "an offline commit pushed as it is (the server hook refuses it; `loopx sync` decides offline work again on the server's head)")
	}
	return nil
}

// futureDated judges a verified commit by the real clock (contract
// section 8): why it is dated beyond the store's skew bound ahead of
// realNow ("" when it is not), and whether it is a clock-reset dated
// within the bound, which acknowledges the future-dated commits before it
// (the audited way back: verify --history reports them until someone
// resets the store's clock; a server with the hook never accepts them).
func (a *Auditor) futureDated(c gitstore.CommitMeta, realNow time.Time) (why string, reset bool, err error) {
	why, err = a.checkClockBound(c, realNow, "this machine's clock", false)
	if err != nil || why != "" {
		return why, false, err
	}
	e, _ := lease.ParseMessage(c.Message)
	return "", e.Operation == lease.OpClockReset, nil
}

type commitKind int

const (
	commitState commitKind = iota
	commitBoard
	commitOlder
)

// verifyCommit checks one commit against its parent. A *lease.HistoryError
// says why it does not verify; other errors are the store's.
func (a *Auditor) verifyCommit(c gitstore.CommitMeta, boards *historyBoards) (commitKind, error) {
	if c.Parents > 1 {
		return 0, historyProblem(lease.ProblemNotLinear, "a merge commit (%d parents): the state ref's history is one line", c.Parents)
	}
	parentSn, err := a.repo.Snapshot(c.Parent)
	if err != nil {
		return 0, err
	}
	pv := a.derived.View(parentSn)
	rc, perr := lease.ParseCommit(c.Message)
	older, err := a.madeByOlder(c, pv, rc)
	if err != nil {
		return 0, err
	}
	if older {
		return commitOlder, nil
	}
	if rc.Board {
		return commitBoard, a.verifyBoard(c, parentSn, pv, rc, boards)
	}
	if perr != nil {
		return 0, perr
	}
	rd, err := lease.Redecide(pv, rc, c.When.UTC())
	if err != nil {
		return 0, err
	}
	want := records.Commit(rd.Outcome.Actor, rd.Message, c.When.UTC())
	if !lease.MessageMatches(c.Message, rd.Message) {
		return 0, historyProblem(lease.ProblemTrailerMismatch, "the message is not what the request decides:\n%s", rd.Message)
	}
	if err := sameIdentity(c, want); err != nil {
		return 0, err
	}
	changes := make([]gitstore.Change, 0, len(rd.Changes))
	for _, ch := range rd.Changes {
		changes = append(changes, gitstore.Change{Path: ch.Path, Data: ch.Data, Delete: ch.Data == nil})
	}
	tree, err := a.repo.TreeOf(c.Parent, changes)
	if err != nil {
		return 0, err
	}
	if tree != c.Tree {
		return 0, historyProblem(lease.ProblemTreeMismatch, "its records are not what its request decides on its parent (%s)", a.treeDiff(c, tree))
	}
	if err := a.checkSignature(c, parentSn, rc.Call, rd.Outcome); err != nil {
		return 0, err
	}
	return commitState, nil
}

// madeByOlder reports a commit made before its store recorded requests:
// its parent is a format-1 store (or, for the root commit, it makes one),
// and it records no JSON request.
func (a *Auditor) madeByOlder(c gitstore.CommitMeta, pv *lease.View, rc lease.RecordedCommit) (bool, error) {
	if strings.HasPrefix(rc.Request, "{") {
		return false, nil
	}
	format := 0
	if c.Parent.IsZero() {
		sn, err := a.repo.Snapshot(c.Hash)
		if err != nil {
			return false, err
		}
		pv = a.derived.View(sn)
	}
	if m, err := pv.Meta(); err == nil && m != nil {
		format = m.FormatVersion
	}
	return format == 1, nil
}

// verifyBoard checks a board commit: the rendering of its parent.
func (a *Auditor) verifyBoard(c gitstore.CommitMeta, parentSn *gitstore.Snapshot, pv *lease.View, rc lease.RecordedCommit, boards *historyBoards) error {
	goal := rc.Entry.Goal
	if rc.Entry.ProjectionOf != c.Parent.String() {
		return historyProblem(lease.ProblemBoardMismatch, "it names %s, not its parent %s", rc.Entry.ProjectionOf, c.Parent)
	}
	if !lease.ValidGoalID(goal) {
		return historyProblem(lease.ProblemBoardMismatch, "it names no valid goal (%q)", goal)
	}
	if c.When.Before(parentSn.Time()) {
		return historyProblem(lease.ProblemTimeRegression, "dated before its parent")
	}
	msg := lease.ProjectionMessage(goal, c.Parent.String())
	if !lease.MessageMatches(c.Message, msg) {
		return historyProblem(lease.ProblemTrailerMismatch, "the message is not a board commit's:\n%s", msg)
	}
	if err := sameIdentity(c, records.Commit("", msg, c.When)); err != nil {
		return err
	}
	// The renderer that drew this goal's last board commit first: an old
	// history is all of the old renderer, a new one all of the new.
	first := boards.last[goal]
	if first == 0 {
		first = markdown.RendererTimed
	}
	for _, r := range []int{first, markdown.RendererTimed + markdown.RendererUntimed - first} {
		board, err := boards.render(parentSn, pv, goal, c.When.UTC(), r)
		if err != nil {
			return historyProblem(lease.ProblemBoardMismatch, "the state it names cannot be rendered: %v", err)
		}
		if board == nil {
			return historyProblem(lease.ProblemBoardMismatch, "goal %s does not exist at its parent", goal)
		}
		tree, err := a.repo.TreeOf(c.Parent, []gitstore.Change{{Path: lease.BoardPath(goal), Data: board}})
		if err != nil {
			return err
		}
		if tree == c.Tree {
			if boards.last == nil {
				boards.last = map[string]int{}
			}
			boards.last[goal] = r
			return nil
		}
	}
	return historyProblem(lease.ProblemBoardMismatch, "its tree is not its parent's with the board of %s rendered at its time", goal)
}

func historyProblem(kind, format string, args ...any) *lease.HistoryError {
	return &lease.HistoryError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// sameIdentity compares a commit's author and committer with what loopx
// writes for it.
func sameIdentity(c gitstore.CommitMeta, want gitstore.CommitInfo) error {
	if c.AuthorName != want.AuthorName || c.AuthorEmail != want.AuthorEmail ||
		c.CommitterName != want.CommitterName || c.CommitterEmail != want.CommitterEmail {
		return historyProblem(lease.ProblemAuthorMismatch, "author %s <%s>, committer %s <%s>; want %s <%s> and %s <%s>",
			c.AuthorName, c.AuthorEmail, c.CommitterName, c.CommitterEmail,
			want.AuthorName, want.AuthorEmail, want.CommitterName, want.CommitterEmail)
	}
	if !c.CommitTime.Equal(c.When) {
		return historyProblem(lease.ProblemTimeRegression, "committed at %s, decided at %s", c.CommitTime, c.When)
	}
	return nil
}

// treeDiff names the first paths where a commit's tree differs from the
// expected one (for the message of a forged record).
func (a *Auditor) treeDiff(c gitstore.CommitMeta, want gitstore.Hash) string {
	var paths []string
	_ = a.repo.DiffHashes(c.Parent, c.Hash, "", func(p string, _, _ gitstore.Hash) error {
		paths = append(paths, p)
		return nil
	})
	if len(paths) > 5 {
		paths = append(paths[:5], "…")
	}
	return "it changes " + strings.Join(paths, ", ")
}

// historyBoards renders boards along a history walk from models brought up
// to date commit by commit, so a board costs what changed since the last.
type historyBoards struct {
	a      *Auditor
	models map[string]*historyModel
	// untimed holds the models of markdown.RendererUntimed (boards drawn by
	// an older loopx), last the renderer of each goal's last board commit
	// (both made when first needed).
	untimed map[string]*historyModel
	last    map[string]int
	// saved starts from the goal's saved board model and keeps what it
	// learned (the server hook: a push of one board commit at 10,000 todos
	// then costs what changed, not a render from every record).
	saved bool
}

// save keeps the models brought up to date (saved walks only).
func (h *historyBoards) save() {
	if !h.saved {
		return
	}
	for goal, hm := range h.models {
		h.a.derived.Boards().Save(goal, hm.rev, hm.m)
	}
}

type historyModel struct {
	m   *markdown.Model
	rev gitstore.Hash
}

// render renders the goal's board of snapshot sn (view v) at the render
// time now with renderer r.
func (h *historyBoards) render(sn *gitstore.Snapshot, v *lease.View, goal string, now time.Time, r int) ([]byte, error) {
	g, err := v.Goal(goal)
	if err != nil || g == nil {
		return nil, err
	}
	models := h.models
	if r == markdown.RendererUntimed {
		if h.untimed == nil {
			h.untimed = map[string]*historyModel{}
		}
		models = h.untimed
	}
	if hm := models[goal]; hm != nil {
		if board, ok := h.catchUp(hm, sn, v, g, now); ok {
			return board, nil
		}
	} else if h.saved && r == markdown.RendererTimed {
		if m := h.a.derived.Boards().Model(derived.TargetOf(sn, v, now), goal); m != nil {
			m.SetGoal(g)
			if board, err := m.Render(derived.Records{View: v, Goal: goal}, now); err == nil {
				h.models[goal] = &historyModel{m: m, rev: sn.Revision()}
				return board, nil
			}
		}
	}
	board, m, err := derived.RenderFull(v, goal, now, r)
	if err != nil {
		return nil, err
	}
	models[goal] = &historyModel{m: m, rev: sn.Revision()}
	return board, nil
}

func (h *historyBoards) catchUp(hm *historyModel, sn *gitstore.Snapshot, v *lease.View, g *lease.Goal, now time.Time) ([]byte, bool) {
	if !h.a.derived.Boards().CatchUp(hm.m, hm.rev, derived.TargetOf(sn, v, now), g.ID) {
		return nil, false
	}
	hm.m.SetGoal(g)
	board, err := hm.m.Render(derived.Records{View: v, Goal: g.ID}, now)
	if err != nil {
		return nil, false
	}
	hm.rev = sn.Revision()
	return board, true
}
