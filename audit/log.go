package audit

import (
	"context"
	"strings"
	"time"

	"github.com/loopx-dev/loopx"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
)

// LogQuery filters the audit trail. Zero fields do not filter.
type LogQuery struct {
	Goal, Todo, Agent, Operation string
	Since                        time.Time
	Limit                        int
}

// LogEntry is one entry of the audit trail, parsed from a commit's trailers.
type LogEntry struct {
	Revision string    `json:"revision"`
	Time     time.Time `json:"time"`
	// Subject is the commit's subject; empty for a commit that does not
	// verify (its subject names an actor, which it cannot prove).
	Subject string `json:"subject"`
	lease.Entry
	// Integrity says whether the entry can be trusted (contract section 7:
	// the log reports only what a verified commit did):
	//   - "verified": the commit verifies as verify --history verifies it
	//     (its recorded request, decided again on its parent at its time,
	//     gives exactly it);
	//   - "older": made before the store recorded requests;
	//   - "invalid": it does not verify; Problem says why, and its actor is
	//     not attributed (never matched by --agent-id, never shown).
	Integrity string `json:"integrity"`
	Problem   string `json:"problem,omitempty"`
}

// Integrity values of log entries.
const (
	IntegrityVerified = "verified"
	IntegrityOlder    = "older"
	IntegrityInvalid  = "invalid"
)

// LogData is the result of log.
type LogData struct {
	Entries []LogEntry `json:"entries"`
}

// DefaultLogLimit bounds log output when no --limit is given.
const DefaultLogLimit = 50

// Log walks the state ref's history from the head, newest first, stopping as
// soon as the limit is reached (or at --since), so a short query on a long
// history stays short. Every entry shown is verified (mark.go):
// from the verified-up-to mark kept beside the store, or commit by commit.
func (a *Auditor) Log(q LogQuery) (*loopx.Result[LogData], error) {
	if q.Limit <= 0 {
		q.Limit = DefaultLogLimit
	}
	head, err := a.repo.Head(context.Background())
	if err != nil {
		return nil, storeerr.Map(err)
	}
	if head.IsZero() {
		return nil, lease.Errorf(lease.CodeStoreNotInitialized, "no loopx store here: run `loopx init`")
	}
	lv, err := a.newLogVerifier(head)
	if err != nil {
		return nil, storeerr.Map(err)
	}
	entries, ok, err := a.indexedLog(head, q, lv)
	if err == nil && !ok {
		entries, err = a.walkLog(head, q, lv)
	}
	if err != nil {
		return nil, storeerr.Map(err)
	}
	return loopx.NewResult(a.s, loopx.Envelope{Operation: "log", CurrentRevision: records.Rev(head)}, time.Time{}, LogData{Entries: entries}), nil
}

// indexedLog answers q (a todo, no --since) from the per-todo log index
// beside the store (internal/derived): the entries the walk from head
// would give. ok is false when the index cannot serve the query.
func (a *Auditor) indexedLog(head gitstore.Hash, q LogQuery, lv *logVerifier) (entries []LogEntry, ok bool, err error) {
	if q.Todo == "" || !q.Since.IsZero() || q.Limit > a.derived.LogKeep() || !lease.ValidTodoID(q.Todo) {
		return nil, false, nil
	}
	entries = []LogEntry{}
	if err := a.derived.TodoCommits(head, q.Todo, a.collect(q, lv, &entries)); err != nil {
		return nil, false, err
	}
	return entries, true, nil
}

// walkLog answers q by walking the history from head.
func (a *Auditor) walkLog(head gitstore.Hash, q LogQuery, lv *logVerifier) ([]LogEntry, error) {
	entries := []LogEntry{}
	err := a.repo.Log(head, a.collect(q, lv, &entries))
	return entries, err
}

// collect is a history walk's callback that adds q's entries to *entries,
// newest first, up to q's limit (or down to q.Since). A commit is judged
// by what it verifiably did: one that does not verify matches no actor.
func (a *Auditor) collect(q LogQuery, lv *logVerifier, entries *[]LogEntry) func(c gitstore.CommitMeta) (bool, error) {
	return func(c gitstore.CommitMeta) (bool, error) {
		if !q.Since.IsZero() && c.When.Before(q.Since) {
			return false, nil
		}
		le, ok := a.logEntry(c)
		if !ok || !matches(le.Entry, q) || (le.ProjectionOf != "" && q.Operation == "") {
			return true, nil
		}
		if err := lv.judge(c, &le); err != nil {
			return false, err
		}
		if !matches(le.Entry, q) {
			return true, nil // it claimed an actor it cannot prove
		}
		*entries = append(*entries, le)
		return len(*entries) < q.Limit, nil
	}
}

// logEntry reads one commit for the log (ok is false for commits that are
// not loopx's). Its integrity is judged by the log verifier.
func (a *Auditor) logEntry(c gitstore.CommitMeta) (LogEntry, bool) {
	subject, _, _ := strings.Cut(c.Message, "\n")
	rc, _ := lease.ParseCommit(c.Message)
	le := LogEntry{Revision: c.Hash.String(), Time: c.When.UTC(), Subject: subject, Entry: rc.Entry}
	if rc.Entry.Operation == "" && rc.Request == "" {
		return le, false
	}
	return le, true
}

func matches(e lease.Entry, q LogQuery) bool {
	switch {
	case q.Goal != "" && e.Goal != q.Goal,
		q.Todo != "" && e.Todo != q.Todo,
		q.Agent != "" && e.Actor != q.Agent,
		q.Operation != "" && e.Operation != q.Operation && !strings.HasPrefix(e.Operation, q.Operation+"."):
		return false
	}
	return true
}
