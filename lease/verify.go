package lease

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one invalid record found by Verify.
type Problem struct {
	Path    string `json:"path"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Verify checks every record on the view (schema, id ↔ path, references) and
// returns every problem found, never stopping at the first.
func Verify(v *View) ([]Problem, error) {
	var out []Problem
	add := func(err error, path string) {
		if e, ok := AsError(err); ok {
			p := path
			if d, ok := e.Details["path"].(string); ok {
				p = d
			}
			out = append(out, Problem{Path: p, Code: e.Code, Message: e.Message})
			return
		}
		out = append(out, Problem{Path: path, Code: CodeCorruptRecord, Message: err.Error()})
	}
	if _, err := RequireStore(v); err != nil {
		if e, ok := AsError(err); ok && e.Code != CodeCorruptRecord {
			return nil, err
		}
		add(err, MetaPath)
	}
	names, err := v.files.List(GoalsDir)
	if err != nil {
		return nil, err
	}
	for _, goal := range names {
		dir := GoalDir(goal)
		if !ValidGoalID(goal) {
			add(Corrupt(dir, fmt.Errorf("invalid goal folder name")), dir)
			continue
		}
		if g, err := v.Goal(goal); err != nil {
			add(err, GoalPath(goal))
		} else if g == nil {
			add(Corrupt(dir, fmt.Errorf("goal folder without goal.yaml")), dir)
		}
		todos := map[string]*Todo{}
		leases := map[string]*Lease{}
		var receipts []*Receipt
		err := v.walkRecords(dir, func(p, hash string, read func() ([]byte, error)) error {
			rel := strings.TrimPrefix(p, dir+"/")
			var rec record
			var want func() string // the path the decoded record belongs at
			switch {
			case rel == "goal.yaml" || rel == "TODO.md":
				return nil
			case strings.HasPrefix(rel, "agents/"):
				a := &Agent{}
				rec, want = a, func() string { return AgentPath(goal, a.ID) }
			case strings.HasPrefix(rel, "todos/"):
				// Todos and leases whose very bytes were decoded and
				// validated before are taken from the record cache.
				if t, ok := v.cachedTodo(hash); ok {
					todos[t.ID] = t
					want = func() string { return TodoPath(goal, t.ID) }
					break
				}
				t := &Todo{}
				rec, want = t, func() string { todos[t.ID] = t; v.cacheTodo(hash, t); return TodoPath(goal, t.ID) }
			case strings.HasPrefix(rel, "leases/"):
				if l, ok := v.cachedLease(hash); ok {
					leases[l.TodoID] = l
					want = func() string { return LeasePath(goal, l.TodoID) }
					break
				}
				l := &Lease{}
				rec, want = l, func() string { leases[l.TodoID] = l; v.cacheLease(hash, l); return LeasePath(goal, l.TodoID) }
			case strings.HasPrefix(rel, "receipts/"):
				r := &Receipt{}
				rec, want = r, func() string { receipts = append(receipts, r); return ReceiptPath(goal, r.ID) }
			default:
				add(Corrupt(p, fmt.Errorf("unexpected file in goal folder")), p)
				return nil
			}
			if rec != nil {
				data, err := read()
				if e, ok := AsError(err); ok && e.Code == CodeCorruptRecord {
					add(err, p) // refused for its size before it was read
					return nil
				}
				if err != nil {
					return err
				}
				if err := DecodeAt(p, data, rec); err != nil {
					add(err, p)
					return nil
				}
			}
			if w := want(); w != p {
				add(Corrupt(p, fmt.Errorf("record stored at the wrong path (belongs at %s)", w)), p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, t := range todos {
			for _, d := range t.DependsOn {
				if todos[d] == nil {
					p := TodoPath(goal, t.ID)
					add(Corrupt(p, fmt.Errorf("depends on missing todo %s", d)), p)
				}
			}
		}
		if tracked, _ := v.tracksGenerations(); tracked {
			verifyGenerations(goal, todos, leases, receipts, add)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// verifyGenerations cross-checks a goal's todos, leases and receipts: each
// lease matches its todo's recorded epoch (generation.go), and a lease that
// receipts speak of exists, at an epoch no lower than theirs.
func verifyGenerations(goal string, todos map[string]*Todo, leases map[string]*Lease, receipts []*Receipt, add func(error, string)) {
	ids := map[string]bool{}
	for id := range todos {
		ids[id] = true
	}
	for id := range leases {
		ids[id] = true
	}
	for id := range ids {
		if err := checkGeneration(goal, id, todos[id], leases[id]); err != nil {
			add(err, LeasePath(goal, id))
		}
	}
	seen := map[string]bool{}
	for _, r := range receipts {
		if r.Lease == nil || seen[r.TodoID] {
			continue
		}
		l := leases[r.TodoID]
		switch {
		case l == nil:
			seen[r.TodoID] = true
			p := LeasePath(goal, r.TodoID)
			add(Corrupt(p, fmt.Errorf("missing, though receipt %s records it at epoch %d", r.ID, r.Lease.Epoch)), p)
		case r.Lease.Epoch > l.Epoch || r.Lease.Version > l.Version:
			seen[r.TodoID] = true
			p := LeasePath(goal, r.TodoID)
			add(Corrupt(p, fmt.Errorf("at version %d epoch %d, behind receipt %s (version %d epoch %d)", l.Version, l.Epoch, r.ID, r.Lease.Version, r.Lease.Epoch)), p)
		}
	}
}
