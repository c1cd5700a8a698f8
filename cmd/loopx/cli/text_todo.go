package cli

// Text output of todos and leases: todo show, list, ready, task-lease
// inspect, and the one-line summaries mutations print (text.go has the
// rules).

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/loopx-dev/loopx/lease"
)

// todoLine is a todo on one line, as a mutation left it: "todo todo_lexer:
// open, claimed by agent-a (expires in 30m)". A closed todo says how it
// closed and nothing of its claim, which ended with it.
func todoLine(t map[string]any, now time.Time) string {
	s := fmt.Sprintf("todo %s: %s", str(t["todo_id"]), str(t["status"]))
	switch str(t["status"]) {
	case "open":
		if c := claimText(t, now); c != "nobody" {
			s += ", claimed by " + c
		}
	case "superseded":
		if b := str(t["superseded_by"]); b != "" {
			s += " by " + b
		}
	}
	if archived, _ := t["archived"].(bool); archived {
		s += " (archived)"
	}
	return s
}

// claimText is who holds the claim of a todo view (claimed_by, with its
// scope agent and its expiry), "nobody" when nobody does. A closed todo's
// claim is history: its holder without an expiry.
func claimText(t map[string]any, now time.Time) string {
	if expired, _ := t["claim_expired"].(bool); expired {
		return "nobody (an earlier claim expired)"
	}
	who := str(t["claimed_by"])
	if who == "" {
		return "nobody"
	}
	var more []string
	if sa := str(t["claim_scope_agent_id"]); sa != "" {
		more = append(more, "scope agent "+sa)
	}
	if at, ok := when(t["claim_expires_at"]); ok && str(t["status"]) == "open" {
		more = append(more, "expires "+rel(at, now))
	}
	if len(more) > 0 {
		who += " (" + strings.Join(more, ", ") + ")"
	}
	return who
}

// leaseLine is a lease on one line: its state first, then its fields by
// their JSON names: "active, owner agent-a, idempotency key exec-1,
// version 1, epoch 1, expires in 4m". A released lease says when it was
// released and not when it would have expired; an expired one says since
// when, instead of "active".
func leaseLine(l map[string]any, now time.Time) string {
	exp, hasExp := when(l["expires_at"])
	effective, _ := l["effective"].(bool)
	var state string
	switch {
	case str(l["status"]) == "released":
		state = "released"
		if at, ok := when(l["released_at"]); ok && rel(at, now) != "now" {
			state += " " + rel(at, now)
		}
	case hasExp && !now.Before(exp):
		state = "expired " + rel(exp, now)
	case !effective:
		state = "active, not effective"
	default:
		state = "active"
	}
	s := fmt.Sprintf("%s, owner %s, idempotency key %s, version %s, epoch %s",
		state, str(l["owner"]), str(l["idempotency_key"]), str(l["version"]), str(l["epoch"]))
	if str(l["status"]) == "active" && hasExp && now.Before(exp) {
		s += ", expires " + rel(exp, now)
	}
	return s
}

// todoText is `todo show`: what the todo is and who holds it, its
// relations, how it closed, then its history.
func todoText(w io.Writer, m map[string]any, now time.Time) {
	t := obj(m["todo"])
	fmt.Fprintf(w, "todo %s (goal %s)\n", str(t["todo_id"]), str(m["goal_id"]))
	var b block
	b.add("text", str(t["text"]))
	status := str(t["status"])
	if archived, _ := t["archived"].(bool); archived {
		status += " (archived)"
	}
	b.add("status", status)
	b.add("priority", str(t["priority"]))
	if str(t["status"]) == "open" {
		b.add("claimed_by", claimText(t, now))
	} else {
		// A closed todo's claim is history: who held it, if the view still
		// shows it (an expired claim it does not), and never its expiry.
		b.addIf("claimed_by", str(t["claimed_by"]))
	}
	if l := obj(t["lease"]); l != nil {
		b.add("lease", leaseLine(l, now))
	} else {
		b.add("lease", "none")
	}
	if deps := strs(t["depends_on"]); len(deps) > 0 {
		open := map[string]bool{}
		for _, d := range strs(t["open_dependencies"]) {
			open[d] = true
		}
		for i, d := range deps {
			if open[d] {
				deps[i] = d + " (open)"
			}
		}
		b.add("depends_on", strings.Join(deps, ", "))
	}
	b.addIf("unblocks", join(t["unblocks"], ""))
	b.addIf("required_write_scopes", join(t["required_write_scopes"], ""))
	b.addIf("bound_agent", str(t["bound_agent"]))
	b.addIf("excluded_agents", join(t["excluded_agents"], ""))
	b.addIf("superseded_by", str(t["superseded_by"]))
	b.addIf("reason", str(t["reason"]))
	b.addIf("evidence", strings.Join(strs(t["evidence"]), "\n"))
	b.add("created_at", by(stamp(t["created_at"], now), str(t["created_by"])))
	// The last update is said once: not when it was the creation, nor the
	// closing.
	sameAs := func(at, who string) bool {
		return str(t["updated_at"]) == str(t[at]) && str(t["updated_by"]) == str(t[who])
	}
	if !sameAs("created_at", "created_by") && !sameAs("closed_at", "closed_by") {
		b.add("updated_at", by(stamp(t["updated_at"], now), str(t["updated_by"])))
	}
	if _, ok := when(t["closed_at"]); ok {
		b.add("closed_at", by(stamp(t["closed_at"], now), str(t["closed_by"])))
	}
	if notes := list(t["notes"]); len(notes) > 0 {
		r := row{label: "notes", value: fmt.Sprint(len(notes))}
		for _, n := range notes {
			note := obj(n)
			head := fmt.Sprintf("- %s, %s", orDash(clean(str(note["author"]))), relOf(note["at"], now))
			if stale, _ := note["stale"].(bool); stale {
				head += " (stale: the todo changed since)"
			}
			lines := strings.Split(clean(str(note["text"])), "\n")
			r.sub = append(r.sub, head+": "+lines[0])
			for _, l := range lines[1:] {
				r.sub = append(r.sub, "  "+l)
			}
		}
		b.rows = append(b.rows, r)
	}
	b.write(w, "  ")
}

// todosText is `todo list` and `todo ready`: one todo a line, highest
// priority first (the order of the JSON).
func todosText(w io.Writer, m map[string]any, now time.Time) {
	todos := list(m["todos"])
	defer notReadyList(w, m)
	if len(todos) == 0 {
		if m["count"] != nil { // todo ready
			fmt.Fprintf(w, "no todo is ready for %s\n", orDefault(str(m["agent_id"]), "anybody"))
		} else {
			fmt.Fprintln(w, "no todos")
		}
		return
	}
	rows := [][]string{heading("todo_id", "priority", "status", "claimed_by", "text")}
	for _, x := range todos {
		t := obj(x)
		rows = append(rows, []string{str(t["todo_id"]), str(t["priority"]), str(t["status"]), orDash(str(t["claimed_by"])), oneLine(str(t["text"]))})
	}
	table(w, "", rows)
}

// notReadyList is the not_ready part of `todo ready`: each other open
// todo and why it is not ready, as status says it (nothing when none).
func notReadyList(w io.Writer, m map[string]any) {
	var nr struct {
		NotReady []lease.NotReady `json:"not_ready"`
		More     int              `json:"not_ready_more"`
	}
	if data, err := json.Marshal(map[string]any{"not_ready": m["not_ready"], "not_ready_more": m["not_ready_more"]}); err != nil ||
		json.Unmarshal(data, &nr) != nil || len(nr.NotReady) == 0 {
		return
	}
	notReadyTable(w, orDefault(str(m["agent_id"]), "anybody"), nr.NotReady, nr.More)
}

// inspectText is `task-lease inspect`.
func inspectText(w io.Writer, m map[string]any, now time.Time) {
	l := obj(m["lease"])
	if l == nil {
		fmt.Fprintf(w, "todo %s (goal %s) has no lease: the first acquire uses --expected-version 0\n", str(m["todo_id"]), str(m["goal_id"]))
		return
	}
	fmt.Fprintf(w, "lease of todo %s (goal %s)\n", str(m["todo_id"]), str(m["goal_id"]))
	var b block
	status := str(l["status"])
	exp, hasExp := when(l["expires_at"])
	released := status == "released"
	if !released {
		switch eff, _ := l["effective"].(bool); {
		case eff:
			status += ", effective"
		case hasExp && !now.Before(exp):
			status += ", not effective: it expired"
		default:
			status += ", not effective: its owner or its todo no longer allows it"
		}
	}
	b.add("status", status)
	b.add("owner", str(l["owner"]))
	b.add("idempotency_key", str(l["idempotency_key"]))
	b.add("version", str(l["version"]))
	b.add("epoch", str(l["epoch"]))
	b.add("write_scopes", join(l["write_scopes"], "none"))
	b.add("acquired_at", stamp(l["acquired_at"], now))
	if _, ok := when(l["renewed_at"]); ok {
		b.add("renewed_at", stamp(l["renewed_at"], now))
	}
	if released {
		// Its expiry no longer matters: it ended when it was released.
		b.add("released_at", stamp(l["released_at"], now))
	} else if hasExp {
		b.add("expires_at", stamp(l["expires_at"], now))
	}
	b.write(w, "  ")
}

// projectText is `todo project-markdown`: where the board is.
func projectText(w io.Writer, m map[string]any, now time.Time) {
	fmt.Fprintf(w, "  path: %s (the board of goal %s)\n", str(m["path"]), str(m["goal_id"]))
}
