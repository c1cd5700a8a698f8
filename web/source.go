// Package web is the read-only browser view of a loopx store (`loopx web`):
// a goal's board, its lease timeline, a todo's history and an agent's status,
// kept live by server-sent events when the state ref moves.
//
// The package reads the store only through Source, an interface it defines,
// and renders only its own view types: it does not import the root package,
// so a change of the Go API's result shapes is absorbed by one adapter
// (web/loopxsource) and the handlers, templates and their tests stay as they
// are. It serves GET and HEAD only; nothing in it can change the store.
package web

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Source is the store as the web app reads it. Every method reads the head
// as it is when called; the views carry the revision they show.
type Source interface {
	// Head is the state ref's current revision ("" for a store without one).
	Head(ctx context.Context) (string, error)
	// Goals lists the store's goals.
	Goals(ctx context.Context) (*Goals, error)
	// Board is every todo of goal, in board order (priority first), with
	// its claim, its lease and why it cannot be taken when it cannot.
	// goal "" is the store's default goal.
	Board(ctx context.Context, goal string) (*Board, error)
	// Timeline is the lease history of goal's todos.
	Timeline(ctx context.Context, goal string) (*Timeline, error)
	// TodoHistory is every commit that touched a todo, newest first.
	TodoHistory(ctx context.Context, goal, todo string) (*TodoHistory, error)
	// AgentStatus is what agent holds in goal and what is ready for it.
	AgentStatus(ctx context.Context, goal, agent string) (*AgentStatus, error)
	// Watch signals (coalesced) when the head may have moved, until ctx
	// ends; the server then asks Head. A local store is watched by file
	// notifications, a remote one by a bounded poll.
	Watch(ctx context.Context) <-chan struct{}
}

// Goals is the store's list of goals.
type Goals struct {
	Revision string
	// Default is the goal commands use when none is named ("" when there
	// is no single default).
	Default string
	Goals   []Goal
	// Remote names the remote whose server is the authority ("" locally).
	Remote string
}

// Goal is one goal in the list.
type Goal struct {
	ID, Title, Status, HandoffMode string
}

// Board is a goal's todos as of one revision.
type Board struct {
	Goal, Title, Revision string
	// Now is the decision time the todos were judged at (the store's
	// clock, never before the head's time); countdowns count from it.
	Now      time.Time
	Archived bool
	// Todos are every todo of the goal, in board order.
	Todos []Todo
	// Agents are the goal's registered agents.
	Agents []string
	// ClockSkew is set when the head is dated beyond the store's skew
	// bound ahead of this machine's clock: expiry is then judged at the
	// head's time.
	ClockSkew string
	Remote    string
}

// Todo is one todo as the board shows it.
type Todo struct {
	ID, Text, Status, Priority string
	Archived                   bool
	DependsOn                  []string
	// OpenDependencies are the dependencies not yet satisfied.
	OpenDependencies []string
	RequiredScopes   []string
	// Claim is the todo's claim: in force, or no longer in force but not
	// taken over or cleared yet (InForce false, Lapse says why); nil
	// without one.
	Claim *Holding
	// Lease is the todo's active lease: in force, or no longer in force
	// but not taken over yet; nil without one (never acquired, or
	// released).
	Lease *Holding
	// ScopeBlocks are the leases in force on other todos whose scopes
	// overlap this todo's required scopes: while they last, nobody can
	// acquire it.
	ScopeBlocks []ScopeBlock
	// Ready: somebody may take it now (`loopx todo ready` lists it).
	Ready bool
	// Evidence and ClosedBy describe a closed todo.
	Evidence []string
	ClosedBy string
}

// Holding is a claim or a lease held on a todo.
type Holding struct {
	Todo  string
	Kind  string // "claim" or "lease"
	Owner string
	// ScopeAgent is the delegated scope agent of a claim.
	ScopeAgent string
	// Epoch and Version are the lease's (0 for a claim).
	Epoch, Version int64
	Scopes         []string
	// ExpiresAt is nil for a claim without TTL.
	ExpiresAt *time.Time
	// InForce: the holding counts now. When it does not, Lapse says why
	// (expired, owner_unregistered, claim_held_by_other, ...).
	InForce bool
	Lapse   string
	// Text is the todo's text, where a page lists holdings of many todos.
	Text string
}

// ScopeBlock is one lease in force whose scope overlaps a todo's required
// scope.
type ScopeBlock struct {
	Scope     string // the todo's required scope
	Todo      string // the todo whose lease holds it
	Owner     string
	HeldScope string
	Epoch     int64
}

// Timeline is the lease history of a goal's todos.
type Timeline struct {
	Goal, Revision string
	Now            time.Time
	// Rows are the todos that ever had a lease, the most recently active
	// first.
	Rows []TimelineRow
	// HolderLimit is how many executions each lease record keeps (older
	// ones are in the Git history, on the todo's page).
	HolderLimit int
}

// TimelineRow is one todo's executions, oldest first.
type TimelineRow struct {
	Todo, Text string
	Spans      []Span
}

// Span is one execution (one epoch) of a todo's lease.
type Span struct {
	Epoch int64
	Owner string
	Start time.Time
	// End is when the execution ended (released, transferred, completed,
	// or taken over after it expired: then ExpiresAt says when it lapsed,
	// if known); nil for the current execution.
	End       *time.Time
	EndReason string
	// ExpiresAt is the current execution's expiry (nil for ended ones).
	ExpiresAt *time.Time
	// Current: this is the todo's current execution and it is still active
	// (not released); InForce: it counts now.
	Current, InForce bool
}

// TodoHistory is every commit that touched a todo, newest first.
type TodoHistory struct {
	Goal, Revision string
	Now            time.Time
	// Todo is the todo as it is now.
	Todo Todo
	// Commits are newest first; Limited is set when older ones were left
	// out (Limit of them are shown).
	Commits []Commit
	Limited bool
	Limit   int
}

// Commit integrity values.
const (
	Verified = "verified" // the commit verifies (its recorded request, decided again, gives exactly it)
	Older    = "older"    // made before the store recorded requests: cannot be checked
	Invalid  = "invalid"  // does not verify: its actor is not attributed
)

// Commit is one state commit as the history shows it.
type Commit struct {
	Revision  string
	Time      time.Time
	Operation string
	// Actor is "" for a commit that does not verify (never attributed).
	Actor, Status  string
	Version, Epoch int64
	Subject        string
	// Integrity is Verified, Older or Invalid; Problem says why a commit
	// does not verify.
	Integrity, Problem string
	// Request is the request the commit recorded (its JSON).
	Request string
	// PreviousHolder, NewOwner and TargetAgent: a takeover's previous
	// holder, a transfer's receiver, a reassignment's target.
	PreviousHolder, NewOwner, TargetAgent string
	// Signature is nil for an unsigned commit.
	Signature *Signature
}

// Signature describes a commit's SSH signature.
type Signature struct {
	KeyType, Fingerprint string
	// Agent is the agent whose registered key this is ("" when it is no
	// registered key of the goal's agents).
	Agent string
	// Valid: the signature checks against that key. Problem says why not.
	Valid   bool
	Problem string
}

// AgentStatus is one agent's view of a goal.
type AgentStatus struct {
	Goal, Agent, Revision string
	Now                   time.Time
	// Registered is false for an agent the goal does not know (or that
	// unregistered); Role is its role.
	Registered bool
	Role       string
	// Holding are its claims and leases in force; Lapsed those no longer
	// in force that nobody took over yet.
	Holding, Lapsed []Holding
	// Ready are the todos it may take now, highest priority first.
	Ready     []Todo
	ClockSkew string
}

// ErrorKind classifies a Source error for the HTTP status it gets.
type ErrorKind int

// Error kinds.
const (
	// Internal: anything else (500).
	Internal ErrorKind = iota
	// NotFound: no such goal, todo or store (404).
	NotFound
	// BadRequest: a malformed id (400).
	BadRequest
	// Unavailable: transient (the store is busy, the server unreachable;
	// 503).
	Unavailable
)

// Error is a Source error with its kind and the store's error code.
type Error struct {
	Kind    ErrorKind
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// kindOf is the kind of a Source error.
func kindOf(err error) (ErrorKind, string) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, e.Code
	}
	return Internal, ""
}
