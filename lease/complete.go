package lease

// todo complete and todo supersede (contract sections 4 and 6).
//
// Decisions written down here:
//   - Completing a done todo (superseding a superseded one) is a replay:
//     status "replayed", nothing written, the result shows the todo as it
//     is (closed_by, closed_at, evidence of the original closure). This
//     holds for any caller and whatever evidence, note, reason or --by the
//     retry carries: a todo is closed once, and the result says by whom. It
//     is decided before registration, authority and the fence, so a retry
//     after an ambiguous outcome gets the same answer even if the lease was
//     released by the completion itself. Completing a superseded todo or
//     superseding a done one is todo_not_open.
//   - Completion needs every dependency satisfied (see OpenDependencies):
//     dependencies_open with open_dependencies otherwise. Supersede does not.
//   - Supersede needs --reason (invalid_request); --by, if given, must name
//     another existing todo of the goal (invalid_todo_id, todo_not_found,
//     invalid_request for itself).
//   - Evidence entries must be non-empty; they are appended in order.
//   - Both write closed_by/closed_at, keep the claim fields (history of who
//     worked on it), append the note (facts after the closure), and end a
//     lease verified by the proof in the same commit (EndExecution with end
//     reason "completed"; version and epoch kept). A lease that was not
//     verified is left as is (a closed todo's lease is never effective;
//     release still cleans it up).

import (
	"slices"
	"time"
)

// CompleteRequest completes a todo.
type CompleteRequest struct {
	Goal            string   `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo            string   `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Actor           string   `json:"agent_id,omitempty" desc:"acting agent (default: the goal's only agent)"`
	Evidence        []string `json:"evidence,omitempty" desc:"evidence of completion"`
	Note            string   `json:"note,omitempty" desc:"closing note"`
	AuthorityReason string   `json:"authority_reason,omitempty" desc:"why an orchestrator uses its lifecycle authority"`
	Proof           *Proof   `json:"task_lease,omitempty" desc:"the lease proof, required while the todo has an effective lease"`
}

// SupersedeRequest supersedes a todo.
type SupersedeRequest struct {
	Goal            string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo            string `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Actor           string `json:"agent_id,omitempty" desc:"acting agent (default: the goal's only agent)"`
	Reason          string `json:"reason,omitempty" desc:"why it is superseded" required:"true"`
	By              string `json:"by,omitempty" desc:"the todo that replaces it"`
	AuthorityReason string `json:"authority_reason,omitempty" desc:"why an orchestrator uses its lifecycle authority"`
	Proof           *Proof `json:"task_lease,omitempty" desc:"the lease proof, required while the todo has an effective lease"`
}

// Complete decides `todo complete`.
func Complete(v *View, req CompleteRequest, now time.Time) (*Outcome, error) {
	return withReason(atomically(v, func() (*Outcome, error) {
		if err := checkCloseShape(req.Goal, req.Todo, req.Actor, req.Proof); err != nil {
			return nil, err
		}
		for _, e := range req.Evidence {
			if e == "" {
				return nil, Errorf(CodeInvalidRequest, "--evidence cannot be empty")
			}
		}
		if req.Note != "" {
			if err := checkNoteText(req.Note); err != nil {
				return nil, err
			}
		}
		return closeTodo(v, closeRequest{op: OpTodoComplete, action: ActionComplete, status: TodoDone,
			goal: req.Goal, todo: req.Todo, actor: req.Actor, reasonAuth: req.AuthorityReason, proof: req.Proof,
			evidence: req.Evidence, note: req.Note}, now)
	}))(req.AuthorityReason)
}

// Supersede decides `todo supersede`.
func Supersede(v *View, req SupersedeRequest, now time.Time) (*Outcome, error) {
	return withReason(atomically(v, func() (*Outcome, error) {
		if err := checkCloseShape(req.Goal, req.Todo, req.Actor, req.Proof); err != nil {
			return nil, err
		}
		if req.Reason == "" {
			return nil, Errorf(CodeInvalidRequest, "todo supersede needs --reason")
		}
		if req.By != "" {
			if err := CheckTodoID(req.By); err != nil {
				return nil, err
			}
			if req.By == req.Todo {
				return nil, Errorf(CodeInvalidRequest, "todo %s cannot be superseded by itself", req.Todo)
			}
		}
		return closeTodo(v, closeRequest{op: OpTodoSupersede, action: ActionSupersede, status: TodoSuperseded,
			goal: req.Goal, todo: req.Todo, actor: req.Actor, reasonAuth: req.AuthorityReason, proof: req.Proof,
			reason: req.Reason, by: req.By}, now)
	}))(req.AuthorityReason)
}

func checkCloseShape(goal, todo, actor string, p *Proof) error {
	if err := CheckGoalID(goal); err != nil {
		return err
	}
	if err := CheckTodoID(todo); err != nil {
		return err
	}
	if err := CheckAgentID("agent id", actor); err != nil {
		return err
	}
	return checkProofShape(p)
}

type closeRequest struct {
	op, action, status            string
	goal, todo, actor, reasonAuth string
	proof                         *Proof
	evidence                      []string
	note, reason, by              string
}

func closeTodo(v *View, req closeRequest, now time.Time) (*Outcome, error) {
	g, err := RequireGoal(v, req.goal)
	if err != nil {
		return nil, err
	}
	t, err := RequireTodo(v, req.goal, req.todo)
	if err != nil {
		return nil, err
	}
	if t.Status == req.status {
		res := &TodoResult{}
		if err := fillTodoResult(v, res, req.goal, t, false, now); err != nil {
			return nil, err
		}
		return &Outcome{Operation: req.op, Status: StatusReplayed, Goal: req.goal, Todo: t.ID, Actor: req.actor, Data: res}, nil
	}
	if g.Status == GoalArchived {
		return nil, Errorf(CodeGoalArchived, "goal %s is archived", req.goal)
	}
	if _, err := RequireAgent(v, req.goal, "agent id", req.actor); err != nil {
		return nil, err
	}
	if err := requireOpenTodo(t); err != nil {
		return nil, err
	}
	if err := Authorize(v, g, t, req.actor, req.action, req.reasonAuth, now); err != nil {
		return nil, err
	}
	if req.by != "" {
		if _, err := RequireTodo(v, req.goal, req.by); err != nil {
			return nil, err
		}
	}
	if req.status == TodoDone {
		open, err := OpenDependencies(v, req.goal, t)
		if err != nil {
			return nil, err
		}
		if len(open) > 0 {
			return nil, Errorf(CodeDependenciesOpen, "todo %s has open dependencies: %v", t.ID, open).With("open_dependencies", open)
		}
	}
	l, verified, err := checkTodoFence(v, req.goal, t, req.actor, req.proof, now)
	if err != nil {
		return nil, err
	}

	nt := *t
	nt.Status = req.status
	nt.ClosedBy, nt.ClosedAt = req.actor, timePtr(now)
	nt.UpdatedBy, nt.UpdatedAt = req.actor, now
	if len(req.evidence) > 0 {
		nt.Evidence = append(slices.Clone(t.Evidence), req.evidence...)
	}
	if req.status == TodoSuperseded {
		nt.Reason, nt.SupersededBy = req.reason, req.by
	}
	o := &Outcome{Operation: req.op, Status: StatusApplied, Goal: req.goal, Todo: t.ID, Actor: req.actor,
		Write: true, BoardChanged: true}
	res := &TodoResult{}
	if verified && l.Status == LeaseActive {
		EndExecution(l, now, "completed")
		v.PutLease(req.goal, l)
		res.LeaseReleased = true
	}
	if verified {
		o.Version, o.Epoch = l.Version, l.Epoch
	}
	if req.note != "" {
		nt.Notes = slices.Clone(t.Notes)
		appendNote(&nt, l, req.note, req.actor, now)
	}
	v.PutTodo(req.goal, &nt)
	if err := fillTodoResult(v, res, req.goal, &nt, verified, now); err != nil {
		return nil, err
	}
	o.Data = res
	return o, nil
}
