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
		err := v.files.Walk(dir, func(p string, data []byte) error {
			rel := strings.TrimPrefix(p, dir+"/")
			var rec record
			switch {
			case rel == "goal.yaml" || rel == "TODO.md":
				return nil
			case strings.HasPrefix(rel, "agents/"):
				a := &Agent{}
				rec = a
				if err := DecodeAt(p, data, a); err == nil && p != AgentPath(goal, a.ID) {
					add(Corrupt(p, fmt.Errorf("agent %q stored at the wrong path", a.ID)), p)
				}
			case strings.HasPrefix(rel, "todos/"):
				t := &Todo{}
				rec = t
				if err := DecodeAt(p, data, t); err == nil {
					todos[t.ID] = t
					if p != TodoPath(goal, t.ID) {
						add(Corrupt(p, fmt.Errorf("todo %q stored at the wrong path", t.ID)), p)
					}
				}
			case strings.HasPrefix(rel, "leases/"):
				l := &Lease{}
				rec = l
				if err := DecodeAt(p, data, l); err == nil && p != LeasePath(goal, l.TodoID) {
					add(Corrupt(p, fmt.Errorf("lease of %q stored at the wrong path", l.TodoID)), p)
				}
			case strings.HasPrefix(rel, "receipts/"):
				r := &Receipt{}
				rec = r
				if err := DecodeAt(p, data, r); err == nil && p != ReceiptPath(goal, r.ID) {
					add(Corrupt(p, fmt.Errorf("receipt %q stored at the wrong path", r.ID)), p)
				}
			default:
				add(Corrupt(p, fmt.Errorf("unexpected file in goal folder")), p)
				return nil
			}
			if err := DecodeAt(p, data, rec); err != nil {
				add(err, p)
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
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
