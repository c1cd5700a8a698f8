package loopx

import (
	"context"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
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
	Subject  string    `json:"subject"`
	lease.Entry
	// Integrity says whether the entry can be trusted: "recorded" (the
	// commit carries a valid request that its trailers agree with; verify
	// --history re-decides it), "older" (made before the store recorded
	// requests) or "invalid" (no valid request, or trailers that disagree
	// with it: the actor is not attributed and Problem says why).
	Integrity string `json:"integrity"`
	Problem   string `json:"problem,omitempty"`
}

// Integrity values of log entries.
const (
	IntegrityRecorded = "recorded"
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
// history stays short.
func (s *Store) Log(q LogQuery) (*Result, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultLogLimit
	}
	head, err := s.repo.Head(context.Background())
	if err != nil {
		return nil, mapErr(err)
	}
	if head.IsZero() {
		return nil, lease.Errorf(lease.CodeStoreNotInitialized, "no loopx store here: run `loopx init`")
	}
	entries, ok, err := s.indexedLog(head, q)
	if err == nil && !ok {
		entries, err = s.walkLog(head, q)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return s.annotate(&Result{Operation: "log", CurrentRevision: revString(head), Data: LogData{Entries: entries}}, time.Time{}), nil
}

// walkLog answers q by walking the history from head.
func (s *Store) walkLog(head gitstore.Hash, q LogQuery) ([]LogEntry, error) {
	entries := []LogEntry{}
	err := s.repo.Log(head, s.collect(q, &entries))
	return entries, err
}

// collect is a history walk's callback that adds q's entries to *entries,
// newest first, up to q's limit (or down to q.Since).
func (s *Store) collect(q LogQuery, entries *[]LogEntry) func(c gitstore.CommitMeta) (bool, error) {
	return func(c gitstore.CommitMeta) (bool, error) {
		if !q.Since.IsZero() && c.When.Before(q.Since) {
			return false, nil
		}
		le, ok := s.logEntry(c)
		if !ok || !matches(le.Entry, q) || (le.ProjectionOf != "" && q.Operation == "") {
			return true, nil
		}
		*entries = append(*entries, le)
		return len(*entries) < q.Limit, nil
	}
}

// logEntry reads one commit for the log with the parser verify --history
// uses: an entry whose commit carries no valid request is marked, and its
// actor is not attributed (ok is false for commits that are not loopx's).
func (s *Store) logEntry(c gitstore.CommitMeta) (LogEntry, bool) {
	subject, _, _ := strings.Cut(c.Message, "\n")
	rc, err := lease.ParseCommit(c.Message)
	le := LogEntry{Revision: c.Hash.String(), Time: c.When.UTC(), Subject: subject, Entry: rc.Entry, Integrity: IntegrityRecorded}
	if rc.Entry.Operation == "" && rc.Request == "" {
		return le, false
	}
	switch {
	case rc.Board && rc.Entry.ProjectionOf != c.Parent.String():
		le.Integrity, le.Problem = IntegrityInvalid, "a board commit that does not name its parent"
	case err != nil:
		older := false
		if sn, serr := s.repo.Snapshot(c.Parent); serr == nil {
			older, _ = s.madeByOlder(c, s.viewOf(sn), rc)
		}
		if older {
			le.Integrity = IntegrityOlder
			break
		}
		le.Integrity, le.Problem = IntegrityInvalid, err.Error()
		le.Actor = ""
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
