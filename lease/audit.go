package lease

import (
	"fmt"
	"strconv"
	"strings"
)

// Outcome is what a decision produced, besides the records it wrote into the
// View: the audit facts that become the commit subject and trailers, and the
// result fields printed to the caller.
type Outcome struct {
	Operation string // e.g. "task-lease.acquire", "todo.add"
	// Audit, when set, is what the audit trail calls this decision instead
	// of Operation (todo.reassign for an update that moved a claim).
	Audit string
	// PreviousHolder is the claim holder a claim change replaced (also an
	// expired one), recorded as Loopx-Previous-Holder.
	PreviousHolder string
	// NewOwner is a transfer's receiver and ClaimMoved whether its claim
	// moved with it (Loopx-New-Owner, Loopx-Claim-Moved).
	NewOwner   string
	ClaimMoved bool
	// TargetAgent is the agent an agent operation acted on when another
	// agent did it (agent unregister --by): Loopx-Target-Agent.
	TargetAgent string
	Status      string // applied | replayed | no_change
	Goal        string
	Todo        string
	Actor       string
	Version     int64 // lease version after the operation (0: none)
	Epoch       int64 // lease epoch after the operation (0: none)
	ReceiptID   string
	// Write is false when the decision changed nothing and no commit is made
	// (a replay, or a no_change that needs no durable receipt).
	Write bool
	// BoardChanged is false when the change cannot alter the goal's board
	// (a renewal), so no projection is attempted.
	BoardChanged bool
	// ReplayOf is, for a replay, the receipt's decided_on revision; the
	// service reports the commit that first applied it.
	ReplayOf string
	// AuthorityReason is the --authority-reason an orchestrator gave, kept in
	// the audit trail.
	AuthorityReason string
	// Request is the canonical request of a written outcome (JSON, one
	// line), recorded in the Loopx-Request trailer so the commit can be
	// re-decided (operation.go).
	Request string
	// Data holds the result fields (a struct or map with JSON tags), merged
	// into the top level of the JSON envelope.
	Data any
}

// Status values of an outcome.
const (
	StatusApplied  = "applied"
	StatusReplayed = "replayed"
	StatusNoChange = "no_change"
)

// Trailer keys of state commits.
const (
	TrailerOperation    = "Loopx-Operation"
	TrailerGoal         = "Loopx-Goal"
	TrailerTodo         = "Loopx-Todo"
	TrailerActor        = "Loopx-Actor"
	TrailerStatus       = "Loopx-Status"
	TrailerVersion      = "Loopx-Version"
	TrailerEpoch        = "Loopx-Epoch"
	TrailerReceipt      = "Loopx-Receipt"
	TrailerProjectionOf = "Loopx-Projection-Of"
	TrailerReason       = "Loopx-Authority-Reason"
	TrailerRequest      = "Loopx-Request"
	TrailerPrevious     = "Loopx-Previous-Holder"
	TrailerNewOwner     = "Loopx-New-Owner"
	TrailerClaimMoved   = "Loopx-Claim-Moved"
	TrailerTargetAgent  = "Loopx-Target-Agent"
)

// AuditName is the operation the audit trail names.
func (o *Outcome) AuditName() string {
	if o.Audit != "" {
		return o.Audit
	}
	return o.Operation
}

// Subject is the readable first line of the commit:
// "task-lease acquire g/todo_x by agent-a: v1 e1".
func (o *Outcome) Subject() string {
	var b strings.Builder
	b.WriteString(strings.Replace(o.AuditName(), ".", " ", 1))
	target := o.Goal
	if o.Todo != "" {
		target += "/" + o.Todo
	} else if o.TargetAgent != "" {
		target += "/" + o.TargetAgent
	}
	if target != "" {
		b.WriteString(" " + target)
	}
	if o.Actor != "" {
		b.WriteString(" by " + o.Actor)
	}
	if o.NewOwner != "" {
		b.WriteString(" to " + o.NewOwner)
	} else if o.PreviousHolder != "" && o.AuditName() == AuditReassign {
		b.WriteString(" from " + o.PreviousHolder)
	}
	if o.Version > 0 || o.Epoch > 0 {
		fmt.Fprintf(&b, ": v%d e%d", o.Version, o.Epoch)
	}
	if o.ClaimMoved {
		b.WriteString(" (claim moved)")
	}
	if o.Status == StatusNoChange {
		b.WriteString(" (no change)")
	}
	return b.String()
}

// Message is the full commit message: subject, blank line, trailers.
func (o *Outcome) Message() string {
	var b strings.Builder
	b.WriteString(o.Subject() + "\n\n")
	add := func(k, v string) {
		if v != "" {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	add(TrailerOperation, o.AuditName())
	add(TrailerGoal, o.Goal)
	add(TrailerTodo, o.Todo)
	add(TrailerActor, o.Actor)
	add(TrailerStatus, o.Status)
	if o.Version > 0 || o.Epoch > 0 {
		add(TrailerVersion, strconv.FormatInt(o.Version, 10))
		add(TrailerEpoch, strconv.FormatInt(o.Epoch, 10))
	}
	add(TrailerReceipt, o.ReceiptID)
	add(TrailerPrevious, o.PreviousHolder)
	add(TrailerTargetAgent, o.TargetAgent)
	if o.NewOwner != "" {
		add(TrailerNewOwner, o.NewOwner)
		add(TrailerClaimMoved, strconv.FormatBool(o.ClaimMoved))
	}
	add(TrailerReason, strings.Join(strings.Fields(o.AuthorityReason), " "))
	add(TrailerRequest, o.Request)
	return b.String()
}

// ProjectionMessage is the message of a board commit rendering state revision rev.
func ProjectionMessage(goal, rev string) string {
	short := rev
	if len(short) > 12 {
		short = short[:12]
	}
	return fmt.Sprintf("board %s at %s\n\n%s: %s\n%s: %s\n%s: %s\n",
		goal, short, TrailerOperation, OpProjection, TrailerGoal, goal, TrailerProjectionOf, rev)
}

// Entry is one audit-trail entry parsed back from a commit message.
type Entry struct {
	Operation    string `json:"operation"`
	Goal         string `json:"goal_id,omitempty"`
	Todo         string `json:"todo_id,omitempty"`
	Actor        string `json:"actor,omitempty"`
	Status       string `json:"status,omitempty"`
	Version      int64  `json:"version,omitempty"`
	Epoch        int64  `json:"epoch,omitempty"`
	Receipt      string `json:"receipt_id,omitempty"`
	ProjectionOf string `json:"projection_of,omitempty"`
	Reason       string `json:"authority_reason,omitempty"`
	// PreviousHolder, NewOwner, ClaimMoved and TargetAgent: see Outcome.
	PreviousHolder string `json:"previous_holder,omitempty"`
	NewOwner       string `json:"new_owner,omitempty"`
	ClaimMoved     *bool  `json:"claim_moved,omitempty"`
	TargetAgent    string `json:"target_agent,omitempty"`
}

// ParseMessage reads the trailers of a commit message. ok is false when the
// commit carries no Loopx-Operation trailer (not a loopx commit).
func ParseMessage(msg string) (e Entry, ok bool) {
	for _, line := range strings.Split(msg, "\n") {
		k, v, found := strings.Cut(line, ": ")
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case TrailerOperation:
			e.Operation = v
		case TrailerGoal:
			e.Goal = v
		case TrailerTodo:
			e.Todo = v
		case TrailerActor:
			e.Actor = v
		case TrailerStatus:
			e.Status = v
		case TrailerVersion:
			e.Version, _ = strconv.ParseInt(v, 10, 64)
		case TrailerEpoch:
			e.Epoch, _ = strconv.ParseInt(v, 10, 64)
		case TrailerReceipt:
			e.Receipt = v
		case TrailerProjectionOf:
			e.ProjectionOf = v
		case TrailerReason:
			e.Reason = v
		case TrailerPrevious:
			e.PreviousHolder = v
		case TrailerNewOwner:
			e.NewOwner = v
		case TrailerClaimMoved:
			moved := v == "true"
			e.ClaimMoved = &moved
		case TrailerTargetAgent:
			e.TargetAgent = v
		}
	}
	return e, e.Operation != ""
}
