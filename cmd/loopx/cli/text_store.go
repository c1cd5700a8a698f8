package cli

// Text output of the store's own results: init, goals, agents, admins,
// the clock, the log, verify, gc, the hooks and sync (text.go has the
// rules).

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// initText is `loopx init`: where the store is.
func initText(w io.Writer, m map[string]any, now time.Time) {
	var b block
	b.add("ref", str(m["ref"]))
	b.add("repo", str(m["repo"]))
	b.add("registry", str(m["registry"]))
	if action := str(m["remote_action"]); action != "" {
		b.add("remote", str(m["remote"]))
		b.add("remote_action", label(action)) // published | adopted | up_to_date
	}
	b.write(w, "  ")
}

// goalText is `goal show`.
func goalText(w io.Writer, m map[string]any, now time.Time) {
	g := obj(m["goal"])
	fmt.Fprintf(w, "goal %s: %s\n", str(g["goal_id"]), oneLine(str(g["title"])))
	var b block
	b.add("status", str(g["status"]))
	b.add("handoff_mode", str(g["handoff_mode"]))
	b.add("agents", str(m["agents"])+" registered")
	c := obj(m["todo_counts"])
	b.add("todo_counts", fmt.Sprintf("%s open, %s done, %s superseded", str(c["open"]), str(c["done"]), str(c["superseded"])))
	b.add("created_at", by(stamp(g["created_at"], now), str(g["created_by"])))
	if str(g["updated_at"]) != str(g["created_at"]) {
		b.add("updated_at", stamp(g["updated_at"], now))
	}
	b.write(w, "  ")
}

// goalsText is `goal list`.
func goalsText(w io.Writer, m map[string]any, now time.Time) {
	goals := list(m["goals"])
	if len(goals) == 0 {
		fmt.Fprintln(w, "no goals")
		return
	}
	rows := [][]string{heading("goal_id", "status", "handoff_mode", "title")}
	for _, x := range goals {
		g := obj(x)
		rows = append(rows, []string{str(g["goal_id"]), str(g["status"]), str(g["handoff_mode"]), oneLine(str(g["title"]))})
	}
	table(w, "", rows)
}

// agentsText is `agent list`.
func agentsText(w io.Writer, m map[string]any, now time.Time) {
	agents := list(m["agents"])
	if len(agents) == 0 {
		fmt.Fprintf(w, "no agents in goal %s\n", str(m["goal_id"]))
		return
	}
	rows := [][]string{heading("agent_id", "status", "role", "signing_key")}
	for _, x := range agents {
		a := obj(x)
		rows = append(rows, []string{str(a["agent_id"]), str(a["status"]), agentRole(a), orDash(shortKey(str(a["signing_key"])))})
	}
	table(w, "", rows)
}

// shortKey is an SSH public key people can tell apart: its type and the
// end of its body ("ssh-ed25519 …+DdOM1EESGxU"); "" stays "".
func shortKey(key string) string {
	if typ, body, ok := strings.Cut(strings.TrimSpace(key), " "); ok {
		body, _, _ = strings.Cut(body, " ")
		if len(body) > 12 {
			body = "…" + body[len(body)-12:]
		}
		return typ + " " + body
	}
	return key
}

// agentRole is an agent's role with its authority: "orchestrator
// (lifecycle authority complete, reassign; requires reason)".
func agentRole(a map[string]any) string {
	s := str(a["role"])
	var more []string
	if auth := strs(a["lifecycle_authority"]); len(auth) > 0 {
		more = append(more, "lifecycle authority "+strings.Join(auth, ", "))
	}
	if rr, _ := a["requires_reason"].(bool); rr {
		more = append(more, "requires reason")
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, "; ") + ")"
	}
	return s
}

// adminsText is `admin list`, and what admin add and remove leave.
func adminsText(w io.Writer, m map[string]any, now time.Time) {
	admins := list(m["admins"])
	var b block
	if m["admin_id"] != nil { // a mutation: the admins it leaves, on one line
		var ids []string
		for _, x := range admins {
			ids = append(ids, str(obj(x)["admin_id"]))
		}
		b.add("admins", strings.Join(ids, ", "))
		b.add("registration", str(m["registration"]))
		b.write(w, "  ")
		return
	}
	if len(admins) == 0 {
		b.add("admins", "none")
		b.add("open", "yes: anyone changes the store's settings")
	} else {
		rows := [][]string{heading("admin_id", "added_by", "added_at", "signing_key")}
		for _, x := range admins {
			a := obj(x)
			at, _ := when(a["added_at"])
			rows = append(rows, []string{str(a["admin_id"]), orDash(str(a["added_by"])), at.UTC().Format(time.RFC3339), orDash(shortKey(str(a["signing_key"])))})
		}
		table(w, "", rows)
		fmt.Fprintln(w)
		b.add("open", "no: store settings and grants need an admin (--by; see `loopx admin --help`)")
	}
	b.add("registration", str(m["registration"]))
	b.write(w, "")
}

// clockResetText is `loopx clock-reset`.
func clockResetText(w io.Writer, m map[string]any, now time.Time) {
	var b block
	b.add("reset_from", stamp(m["reset_from"], now))
	b.add("reset_to", stamp(m["reset_to"], now))
	b.add("leases_clamped", join(m["leases_clamped"], "none"))
	b.add("claims_clamped", join(m["claims_clamped"], "none"))
	b.write(w, "  ")
}

// logText is `loopx log`: one commit a line, newest first, like git log
// --oneline with its time.
func logText(w io.Writer, m map[string]any, now time.Time) {
	entries := list(m["entries"])
	if len(entries) == 0 {
		fmt.Fprintln(w, "no entries")
		return
	}
	for _, e := range entries {
		en := obj(e)
		// Subjects are loopx's own (ids and numbers): shown whole, on one line.
		subject := strings.Join(strings.Fields(clean(str(en["subject"]))), " ")
		switch str(en["integrity"]) {
		case "invalid":
			// Never the subject: it names an actor the commit cannot prove.
			claims := str(en["operation"])
			if t := strings.Trim(str(en["goal_id"])+"/"+str(en["todo_id"]), "/"); t != "" {
				claims += " " + t
			}
			subject = "[DOES NOT VERIFY: " + oneLine(str(en["problem"])) + "] claims " + claims
		case "older":
			subject = "[made before requests were recorded] " + subject
		}
		fmt.Fprintf(w, "%s %s %s\n", short(str(en["revision"])), str(en["time"]), subject)
	}
}

// verifyText is a successful `loopx verify` (an invalid store is an
// error) and `loopx verify --history`.
func verifyText(w io.Writer, m map[string]any, now time.Time) {
	if h := obj(m["history"]); h != nil {
		historyText(w, h)
		return
	}
	var b block
	b.add("valid", "yes: every record on the head checks")
	pending := strs(m["pending_boards"])
	if len(pending) == 0 {
		b.add("pending_boards", "none")
	} else {
		r := row{label: label("pending_boards"), value: strings.Join(pending, ", ")}
		for _, g := range pending {
			r.sub = append(r.sub, "repair: loopx todo project-markdown --goal-id "+g)
		}
		b.rows = append(b.rows, r)
	}
	b.write(w, "")
}

// historyText is the verdict of verify --history, then what it checked.
func historyText(w io.Writer, h map[string]any) {
	var b block
	valid, _ := h["valid"].(bool)
	since := str(h["since"])
	switch {
	case valid && since != "":
		b.add("valid", "yes: every commit after "+short(since)+" re-verifies")
	case valid:
		b.add("valid", "yes: every commit re-verifies")
	default:
		b.add("valid", "no")
	}
	b.add("head", short(str(h["head"])))
	b.add("commits", str(h["commits"]))
	b.add("state_commits", str(h["state_commits"]))
	b.add("board_commits", str(h["board_commits"]))
	if n := num(h["unverifiable_older"]); n > 0 {
		b.add("unverifiable_older", fmt.Sprintf("%d (made before the store recorded requests)", n))
	}
	if f := obj(h["first_invalid"]); f != nil {
		b.add("first_invalid", fmt.Sprintf("%s: %s: %s", short(str(f["revision"])), str(f["reason"]), oneLine(str(f["message"]))))
	}
	b.write(w, "")
}

// gcText is `loopx gc`: sizes for people, before and after.
func gcText(w io.Writer, m map[string]any, now time.Time) {
	var b block
	b.add("size_before", size(num(m["size_before"])))
	b.add("size_after", size(num(m["size_after"])))
	b.add("loose_objects_before", str(m["loose_objects_before"]))
	b.add("loose_objects_after", str(m["loose_objects_after"]))
	b.add("packs", str(m["packs"]))
	b.write(w, "")
}

// hookInstallText is `guard install` (the pre-commit hook and its
// commit-msg companion, or the pre-push hook) and `server-hook install`:
// one line per hook ("pre-commit hook installed: PATH"), then what the
// hooks run.
func hookInstallText(w io.Writer, m map[string]any, now time.Time) {
	hooks := []map[string]any{m}
	if cm := obj(m["commit_msg"]); cm != nil {
		hooks = append(hooks, cm)
	}
	for _, h := range hooks {
		kind := orDefault(str(h["kind"]), "pre-receive")
		fmt.Fprintf(w, "%s hook %s: %s\n", kind, hookChanged(h), str(h["hook"]))
	}
	var b block
	exe := str(m["loopx"])
	if exe == "loopx" || exe == "" {
		exe = "loopx, looked up on PATH when the hook runs"
	}
	b.add("loopx", exe)
	if _, ok := m["refs"]; ok {
		b.add("refs", join(m["refs"], "none"))
	}
	if _, ok := m["code_refs"]; ok {
		b.add("code_refs", join(m["code_refs"], "none: the code fence is off"))
	}
	b.write(w, "  ")
}

// hookChanged says whether an install changed a hook.
func hookChanged(h map[string]any) string {
	if changed, _ := h["changed"].(bool); changed {
		return "installed"
	}
	return "already installed"
}

// staleText says that a check decided on the last state fetched from a
// server it could not reach: "origin could not be reached (why): decided
// on its state fetched 3m ago (2026-…)".
func staleText(st map[string]any, now time.Time) string {
	s := str(st["remote"]) + " could not be reached"
	if r := flat(str(st["reason"])); r != "" {
		s += " (" + r + ")"
	}
	if _, ok := when(st["fetched_at"]); ok {
		return s + ": decided on its state fetched " + stamp(st["fetched_at"], now)
	}
	return s + ": decided on the last state fetched from it (when is unknown)"
}

// guardText is a `guard check` that passes (a refusal is an error), and
// what `guard commit-msg` added.
func guardText(w io.Writer, m map[string]any, now time.Time) {
	var b block
	if _, ok := m["allowed"]; ok {
		b.add("allowed", "yes")
	}
	if _, ok := m["agent_id"]; ok {
		b.add("agent_id", orDash(str(m["agent_id"])))
	}
	if r := str(m["range"]); r != "" {
		b.add("range", r)
	}
	if _, ok := m["paths"]; ok {
		b.add("paths", str(m["paths"]))
	}
	if _, ok := m["trailers"]; ok {
		b.add("trailers", orNone(strings.Join(strs(m["trailers"]), "\n")))
	}
	if st := obj(m["stale"]); st != nil {
		b.add("stale", staleText(st, now))
	}
	if rev := str(m["state_revision"]); rev != "" {
		b.add("state_revision", short(rev))
	}
	b.addIf("note", str(m["note"]))
	commits := list(m["commits"])
	if m["commits"] != nil {
		b.add("commits", fmt.Sprint(len(commits)))
	}
	b.write(w, "")
	if len(commits) > 0 {
		rows := [][]string{heading("commit", "agent_id", "leases", "paths", "signed")}
		for _, x := range commits {
			c := obj(x)
			signed, _ := c["signed"].(bool)
			rows = append(rows, []string{short(str(c["commit"])), orDash(str(c["agent_id"])),
				join(c["leases"], "-"), str(c["paths"]), yesNo(signed)})
		}
		table(w, "  ", rows)
	}
}

// preReceiveText is a push the server hook accepts (the hook itself prints
// nothing then; this is the result read back by a program).
func preReceiveText(w io.Writer, m map[string]any, now time.Time) {
	fmt.Fprintf(w, "checked %s commit(s) of %s and %s of code refs (%s): every one holds\n", str(m["checked_commits"]),
		join(m["refs"], "no state ref"), orDefault(str(m["checked_code_commits"]), "0"), join(m["code_refs"], "none"))
}

// syncText is `loopx sync`: what became of each offline request.
func syncText(w io.Writer, m map[string]any, now time.Time) {
	var b block
	b.add("remote", str(m["remote"]))
	replays := list(m["replays"])
	if len(replays) == 0 {
		b.add("replays", "none: nothing offline to publish")
	} else {
		b.add("replays", fmt.Sprintf("%s applied, %s refused, %s pending", str(m["applied"]), str(m["refused"]), str(m["pending"])))
	}
	b.write(w, "")
	for _, r := range replays {
		fmt.Fprintf(w, "  %s\n", replayLine(obj(r)))
	}
}

// replayLine is one offline request replayed by sync: "applied todo.add
// g/todo_x (offline 2cfcc2121018) at 95da317a0ff2", or "refused ...: code:
// message".
func replayLine(r map[string]any) string {
	what := str(r["operation"])
	if t := strings.Trim(str(r["goal_id"])+"/"+str(r["todo_id"]), "/"); t != "" {
		what += " " + t
	}
	if a := str(r["actor"]); a != "" {
		what += " by " + a
	}
	s := fmt.Sprintf("%-8s %s (offline %s)", str(r["status"]), what, short(str(r["offline_revision"])))
	if rev := str(r["revision"]); rev != "" {
		s += " at " + short(rev)
	}
	if e := obj(r["error"]); e != nil {
		s += ": " + str(e["code"]) + ": " + flat(str(e["message"]))
	}
	return s
}
