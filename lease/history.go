package lease

// Re-verifying history (contract section 7). A state commit of a store at
// format 2 records its canonical request (Loopx-Request). Deciding that
// request on the commit's parent at the commit's time must give exactly the
// commit's changes and message; the root package compares the resulting
// tree with the commit's tree. A board commit must be the rendering of the
// state it names, which is its parent. ParseCommit is also what `loopx log`
// reads, so the log attributes only commits that carry a valid request.

import (
	"fmt"
	"strings"
	"time"
)

// Problem kinds of history verification (the "reason" of its refusal).
const (
	ProblemMissingRequest  = "missing_request"  // a state commit without a recorded request
	ProblemInvalidRequest  = "invalid_request"  // malformed, unknown field, wrong type, not canonical
	ProblemUnknownSchema   = "unknown_schema"   // a schema id or version this loopx does not know
	ProblemTrailerMismatch = "trailer_mismatch" // the trailers or subject say other than the request's decision
	ProblemRefused         = "refused"          // the request is refused on its parent
	ProblemNoEffect        = "no_effect"        // the request changes nothing on its parent
	ProblemTreeMismatch    = "tree_mismatch"    // the records differ from what the request decides (a forged record)
	ProblemAuthorMismatch  = "author_mismatch"  // author or committer are not the acting agent and loopx
	ProblemTimeRegression  = "time_regression"  // the commit is dated before its parent
	ProblemBoardMismatch   = "board_mismatch"   // a board commit that is not the rendering of its parent
	ProblemNotLinear       = "not_linear"       // a merge commit, or a commit that is not a child of the head
	ProblemFutureDated     = "future_dated"     // dated more than the skew bound ahead of the checking clock
	ProblemOfflineCommit   = "offline_commit"   // an offline commit (Loopx-Offline) published as it is, not re-decided by sync
)

// HistoryError is a commit that does not verify.
type HistoryError struct {
	Kind    string
	Message string
}

func (e *HistoryError) Error() string { return e.Kind + ": " + e.Message }

func historyErr(kind, format string, args ...any) *HistoryError {
	return &HistoryError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// RecordedCommit is what ParseCommit reads from a commit message.
type RecordedCommit struct {
	Entry Entry
	// Request is the recorded request's JSON ("" when there is none), and
	// Call its decoded form (when it decodes).
	Request string
	Call    Call
	// Offline is the remote an offline commit was made for ("" online).
	Offline string
	// Board reports a board (projection) commit.
	Board bool
}

// TrailerOffline marks a commit made with --offline.
const TrailerOffline = "Loopx-Offline"

// ParseCommit reads a commit message: its trailers, and the recorded
// request decoded strictly (legacy base64 requests are not accepted here:
// they were never recorded on a format-2 store). A state commit whose
// request is missing or invalid, or whose trailers name another actor,
// goal or todo than the request, gives a *HistoryError; the entry is still
// returned, for display.
func ParseCommit(msg string) (RecordedCommit, error) {
	var rc RecordedCommit
	rc.Entry, _ = ParseMessage(msg)
	rc.Request = trailerLast(msg, TrailerRequest)
	rc.Offline = trailerLast(msg, TrailerOffline)
	if rc.Entry.ProjectionOf != "" && rc.Request == "" {
		rc.Board = true
		return rc, nil
	}
	if rc.Request == "" {
		return rc, historyErr(ProblemMissingRequest, "the commit records no request (%s)", TrailerRequest)
	}
	call, err := DecodeRequest([]byte(rc.Request))
	if err != nil {
		if e, ok := AsError(err); ok && e.Details["field"] == SchemaField {
			return rc, historyErr(ProblemUnknownSchema, "%s", e.Message)
		}
		return rc, historyErr(ProblemInvalidRequest, "%v", err)
	}
	rc.Call = call
	if canon, err := call.Encode(); err != nil || string(canon) != rc.Request {
		return rc, historyErr(ProblemInvalidRequest, "the recorded request is not in canonical form")
	}
	// The fields of the canonical request, decoded once (a log reads
	// every commit it walks). The actor is by_agent_id (an agent operation
	// done by another agent), agent_id or owner.
	var fields map[string]any
	_ = decodeOne([]byte(rc.Request), &fields)
	str := func(name string) string { s, _ := fields[name].(string); return s }
	actor := requestActor(fields)
	for _, c := range []struct{ trailer, field, want string }{
		{TrailerActor, "actor", actor},
		{TrailerGoal, "goal", str("goal_id")},
		{TrailerTodo, "todo", str("todo_id")},
	} {
		got := map[string]string{"actor": rc.Entry.Actor, "goal": rc.Entry.Goal, "todo": rc.Entry.Todo}[c.field]
		if c.want != "" && got != c.want {
			return rc, historyErr(ProblemTrailerMismatch, "%s says %q, the request %q", c.trailer, got, c.want)
		}
	}
	return rc, nil
}

// requestActor is the acting agent of a request's decoded fields:
// by_agent_id (an agent operation done by another agent), agent_id or owner.
func requestActor(fields map[string]any) string {
	for _, f := range []string{"by_agent_id", "agent_id", "owner"} {
		if a, _ := fields[f].(string); a != "" {
			return a
		}
	}
	return ""
}

// actor is the acting agent the call's request names (requestActor).
func (c Call) actor() string {
	raw, err := c.Encode()
	if err != nil {
		return ""
	}
	var fields map[string]any
	if decodeOne(raw, &fields) != nil {
		return ""
	}
	return requestActor(fields)
}

// trailerLast returns the value of the last "key: value" line of msg.
func trailerLast(msg, key string) string {
	v := ""
	for _, line := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(line, key+": "); ok {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}

// Redecision is what a state commit must be.
type Redecision struct {
	Outcome *Outcome
	Changes []Change
	// Message is the commit message it must have (without the offline
	// trailer, which the commit may add).
	Message string
}

// Redecide decides the request rc records on parent (the view of the
// commit's parent) at when (the commit's time), as the mutation did.
func Redecide(parent *View, rc RecordedCommit, when time.Time) (*Redecision, error) {
	if rc.Call.Op == nil {
		return nil, historyErr(ProblemMissingRequest, "no decodable request")
	}
	if !parent.HeadTime.IsZero() && when.Before(parent.HeadTime) && !rc.Call.Op.Rewinds {
		return nil, historyErr(ProblemTimeRegression, "dated %s, before its parent (%s)",
			when.UTC().Format(time.RFC3339), parent.HeadTime.UTC().Format(time.RFC3339))
	}
	if rc.Call.Op.rules != 0 {
		// A superseded schema version decides by the rules it had, for the
		// history made when they were the rules: a store of format 3 was
		// written only by a loopx of the current rules, so there it is a
		// way around them (a hand-made commit), never history.
		if m, err := parent.Meta(); err == nil && m != nil && m.FormatVersion >= 3 {
			return nil, historyErr(ProblemUnknownSchema, "%s is superseded: a store of format %d is decided by its current version (%s's rules changed)",
				rc.Call.Op.Schema, m.FormatVersion, rc.Call.Op.Name)
		}
	}
	c := rc.Call.Clone()
	if err := c.Resolve(parent, Defaults{}, when); err != nil {
		return nil, historyErr(ProblemRefused, "the request does not resolve on its parent: %v", err)
	}
	if canon, _ := c.Encode(); string(canon) != rc.Request {
		return nil, historyErr(ProblemInvalidRequest, "the recorded request leaves a default implicit (resolved: %s)", canon)
	}
	o, err := c.Decide(parent, when)
	if err != nil {
		return nil, historyErr(ProblemRefused, "the request is refused on its parent: %v", err)
	}
	if !o.Write {
		return nil, historyErr(ProblemNoEffect, "the request changes nothing on its parent (%s)", o.Status)
	}
	o.Request = rc.Request
	return &Redecision{Outcome: o, Changes: parent.Changes(), Message: o.Message()}, nil
}

// MessageMatches reports whether a commit's message is want, allowing the
// offline trailer that offline commits add.
func MessageMatches(got, want string) bool {
	if got == want {
		return true
	}
	rest, ok := strings.CutPrefix(got, want)
	if !ok {
		return false
	}
	name, ok := strings.CutPrefix(rest, TrailerOffline+": ")
	return ok && strings.HasSuffix(name, "\n") && !strings.Contains(strings.TrimSuffix(name, "\n"), "\n")
}
