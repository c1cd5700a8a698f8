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
}

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
	head, err := s.readHead(context.Background())
	if err != nil {
		return nil, mapErr(err)
	}
	if head.IsZero() {
		return nil, lease.Errorf(lease.CodeStoreNotInitialized, "no loopx store here: run `loopx init`")
	}
	d := LogData{Entries: []LogEntry{}}
	err = s.git.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if !q.Since.IsZero() && c.When.Before(q.Since) {
			return false, nil
		}
		e, ok := lease.ParseMessage(c.Message)
		if !ok || !matches(e, q) || (e.ProjectionOf != "" && q.Operation == "") {
			return true, nil
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		d.Entries = append(d.Entries, LogEntry{Revision: c.Hash.String(), Time: c.When.UTC(), Subject: subject, Entry: e})
		return len(d.Entries) < q.Limit, nil
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return s.annotate(&Result{Operation: "log", CurrentRevision: revString(head), Data: d}, time.Time{}), nil
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
