package cli

// Text output, for people (JSON is for programs). Every string that came
// from a user (todo text, notes, evidence, reasons, titles, error messages)
// is cleaned of control characters before it reaches the terminal, so a
// hostile todo cannot move the cursor, retitle the window or ring the bell;
// a final filter on the writer catches anything a renderer missed. Times are
// shown relative to now ("expires in 4m", "expired 3m ago"); now is
// LOOPX_NOW when set, so scripts that fix the clock get fixed bytes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loopx-dev/loopx"
)

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// now is the time relative times are shown against: LOOPX_NOW when set.
func now() time.Time {
	if t, err := time.Parse(time.RFC3339, os.Getenv("LOOPX_NOW")); err == nil {
		return t
	}
	return time.Now()
}

// clean makes user text safe for a terminal: invalid UTF-8 and
// bidirectional controls become U+FFFD (they could reorder what is read),
// a tab becomes a space, line and paragraph separators become newlines, and
// every other control character (C0, DEL, C1: ESC, BEL, CR, ...) is dropped.
// Newlines are kept; layouts that want one line use oneLine.
func clean(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' || c >= 0x7f {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteRune('\uFFFD')
		case isBidiControl(r):
			b.WriteRune('\uFFFD')
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteByte(' ')
		case r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return r == '\u061C' || r == '\u200E' || r == '\u200F' ||
		(r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// flat is clean(s) on one line.
func flat(s string) string { return strings.Join(strings.Fields(clean(s)), " ") }

// oneLine is clean(s) on one line, at most 72 characters.
func oneLine(s string) string {
	s = flat(s)
	if r := []rune(s); len(r) > 72 {
		s = string(r[:69]) + "..."
	}
	return s
}

// safeWriter drops the control characters a renderer let through (every
// one but the newline), in case user text reached it uncleaned.
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, clean(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// human is a duration for people: 45s, 4m, 4m30s, 2h5m, 3d4h.
func human(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

// rel is t relative to now: "in 4m", "3m ago", "now".
func rel(t, now time.Time) string {
	switch d := t.Sub(now); {
	case d >= time.Second:
		return "in " + human(d)
	case d <= -time.Second:
		return human(-d) + " ago"
	}
	return "now"
}

// when parses an RFC 3339 field value; ok is false for null or "".
func when(v any) (time.Time, bool) {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// stamp is an RFC 3339 value with its relative time: "2026-… (3m ago)".
func stamp(v any, now time.Time) string {
	t, ok := when(v)
	if !ok {
		return clean(str(v))
	}
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), rel(t, now))
}

// block is a list of "label: value" lines, aligned on the values.
type block struct {
	rows []row
}

type row struct {
	label, value string
	sub          []string // lines shown under the row, indented
}

func (b *block) add(label, value string) { b.rows = append(b.rows, row{label: label, value: value}) }

// addIf adds the row when value is not empty.
func (b *block) addIf(label, value string) {
	if value != "" {
		b.add(label, value)
	}
}

func (b *block) write(w io.Writer, indent string) {
	width := 0
	for _, r := range b.rows {
		width = max(width, len(r.label)+1)
	}
	for _, r := range b.rows {
		lines := strings.Split(clean(r.value), "\n")
		fmt.Fprintf(w, "%s%-*s %s\n", indent, width, r.label+":", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%-*s %s\n", indent, width, "", l)
		}
		for _, l := range r.sub {
			fmt.Fprintf(w, "%s  %s\n", indent, l)
		}
	}
}

// table prints rows in columns padded to their widest cell.
func table(w io.Writer, indent string, rows [][]string) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// printText prints a result for people: a summary line for mutations, then
// what the command is about, as aligned fields or a listing.
func printText(out io.Writer, reply loopx.Reply, now time.Time) {
	w := safeWriter{out}
	res := reply.Env()
	var m map[string]any
	raw, _ := json.Marshal(reply)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // versions and epochs print as integers, however large
	_ = dec.Decode(&m)
	if res.Mutation {
		fmt.Fprintf(w, "%s %s at %s", res.Status, res.Operation, short(res.Revision))
		if res.Projection == loopx.ProjectionPending {
			fmt.Fprintf(w, " (board pending: run `loopx todo project-markdown`)")
		}
		fmt.Fprintln(w)
	}
	for _, k := range []string{"ok", "operation", "status", "idempotent", "revision", "current_provider_revision", "provider", "projection_delivery", "retry_business_mutation", "projection_error"} {
		delete(m, k)
	}
	switch {
	case res.Operation == "todo.show":
		todoText(w, m, now)
		return
	case res.Operation == "task-lease.inspect":
		inspectText(w, m, now)
		return
	case res.Operation == "goal.show":
		goalText(w, m, now)
		return
	case res.Operation == "goal.list":
		goalsText(w, m)
		return
	case res.Operation == "agent.list":
		agentsText(w, m)
		return
	case res.Operation == "verify" && m["valid"] != nil:
		verifyText(w, m)
		return
	case m["entries"] != nil:
		for _, e := range list(m["entries"]) {
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
		return
	case m["todos"] != nil:
		todos := list(m["todos"])
		for _, t := range todos {
			td := obj(t)
			fmt.Fprintf(w, "%-22s %s %-10s %-14s %s\n", str(td["todo_id"]), str(td["priority"]), str(td["status"]),
				orDash(str(td["claimed_by"])), oneLine(str(td["text"])))
		}
		if len(todos) == 0 {
			fmt.Fprintln(w, "no todos")
		}
		return
	}
	if len(m) == 0 {
		return
	}
	if res.Mutation {
		// People want what changed, not the whole record: one line for the
		// todo, one for the lease (the record is in JSON output and on the ref).
		if t := obj(m["todo"]); t != nil {
			fmt.Fprintf(w, "  todo %s: %s, claimed by %s\n", str(t["todo_id"]), str(t["status"]), orDash(str(t["claimed_by"])))
		} else if c, ok := m["claimed"].(bool); ok && !c {
			fmt.Fprintln(w, "  no todo is ready to claim")
		}
		if l := obj(m["lease"]); l != nil {
			fmt.Fprintf(w, "  lease: %s\n", leaseLine(l, now))
		}
		if a := obj(m["agent"]); a != nil {
			fmt.Fprintf(w, "  agent %s: %s (%s)\n", str(a["agent_id"]), str(a["status"]), agentRole(a))
		}
		if g := obj(m["goal"]); g != nil && m["todo"] == nil {
			fmt.Fprintf(w, "  goal %s: %s, %s\n", str(g["goal_id"]), str(g["status"]), str(g["handoff_mode"]))
		}
		return
	}
	generic(w, m, "", now)
}

// todoText is `todo show`.
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
	b.add("claim", claimText(t, now))
	b.addIf("bound agent", str(t["bound_agent"]))
	b.addIf("excluded", strings.Join(strs(t["excluded_agents"]), ", "))
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
		b.add("depends on", strings.Join(deps, ", "))
	}
	b.addIf("unblocks", strings.Join(strs(t["unblocks"]), ", "))
	b.addIf("write scopes", strings.Join(strs(t["required_write_scopes"]), ", "))
	if l := obj(t["lease"]); l != nil {
		b.add("lease", leaseLine(l, now))
	} else {
		b.add("lease", "none")
	}
	b.addIf("superseded by", str(t["superseded_by"]))
	b.addIf("reason", str(t["reason"]))
	b.addIf("evidence", strings.Join(strs(t["evidence"]), "\n"))
	b.add("created", by(stamp(t["created_at"], now), str(t["created_by"])))
	b.add("updated", by(stamp(t["updated_at"], now), str(t["updated_by"])))
	if _, ok := when(t["closed_at"]); ok {
		b.add("closed", by(stamp(t["closed_at"], now), str(t["closed_by"])))
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

// claimText is the effective claim of a todo view.
func claimText(t map[string]any, now time.Time) string {
	if expired, _ := t["claim_expired"].(bool); expired {
		return "none (an earlier claim expired)"
	}
	who := str(t["claimed_by"])
	if who == "" {
		return "none"
	}
	s := who
	if sa := str(t["claim_scope_agent_id"]); sa != "" {
		s += " (delegated to " + sa + ")"
	}
	if at, ok := when(t["claim_expires_at"]); ok {
		s += ", expires " + rel(at, now)
	}
	return s
}

// leaseLine is a lease on one line: "active by agent-a (key k), version 1,
// epoch 1, expires in 4m".
func leaseLine(l map[string]any, now time.Time) string {
	status := str(l["status"])
	effective, _ := l["effective"].(bool)
	exp, hasExp := when(l["expires_at"])
	timing := ""
	switch {
	case status == "released":
		if at, ok := when(l["released_at"]); ok {
			timing = "released " + rel(at, now)
		}
	case hasExp && !now.Before(exp):
		timing = "expired " + rel(exp, now)
	case hasExp:
		timing = "expires " + rel(exp, now)
	}
	if status == "active" && !effective && hasExp && now.Before(exp) {
		status = "active (not effective)"
	}
	s := fmt.Sprintf("%s by %s (key %s), version %s, epoch %s", status, str(l["owner"]), str(l["idempotency_key"]), str(l["version"]), str(l["epoch"]))
	if timing != "" {
		s += ", " + timing
	}
	return s
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
	if status == "active" {
		exp, _ := when(l["expires_at"])
		switch eff, _ := l["effective"].(bool); {
		case eff:
			status += " (effective)"
		case !now.Before(exp):
			status += ", expired: no longer effective"
		default:
			status += ", not effective: its owner or its todo no longer allows it"
		}
	}
	b.add("status", status)
	b.add("owner", str(l["owner"]))
	b.add("idempotency key", str(l["idempotency_key"]))
	b.add("version", str(l["version"]))
	b.add("epoch", str(l["epoch"]))
	scopes := strings.Join(strs(l["write_scopes"]), ", ")
	if scopes == "" {
		scopes = "none"
	}
	b.add("write scopes", scopes)
	b.add("acquired", stamp(l["acquired_at"], now))
	if _, ok := when(l["renewed_at"]); ok {
		b.add("renewed", stamp(l["renewed_at"], now))
	}
	if exp, ok := when(l["expires_at"]); ok {
		label := "expires"
		if !now.Before(exp) {
			label = "expired"
		}
		b.add(label, stamp(l["expires_at"], now))
	}
	if _, ok := when(l["released_at"]); ok {
		b.add("released", stamp(l["released_at"], now))
	}
	b.write(w, "  ")
}

// goalText is `goal show`.
func goalText(w io.Writer, m map[string]any, now time.Time) {
	g := obj(m["goal"])
	fmt.Fprintf(w, "goal %s: %s\n", str(g["goal_id"]), oneLine(str(g["title"])))
	var b block
	b.add("status", str(g["status"]))
	b.add("handoff mode", str(g["handoff_mode"]))
	b.add("agents", str(m["agents"])+" registered")
	c := obj(m["todo_counts"])
	b.add("todos", fmt.Sprintf("%s open, %s done, %s superseded", str(c["open"]), str(c["done"]), str(c["superseded"])))
	b.add("created", by(stamp(g["created_at"], now), str(g["created_by"])))
	b.add("updated", stamp(g["updated_at"], now))
	b.write(w, "  ")
}

// goalsText is `goal list`.
func goalsText(w io.Writer, m map[string]any) {
	goals := list(m["goals"])
	if len(goals) == 0 {
		fmt.Fprintln(w, "no goals")
		return
	}
	rows := [][]string{{"GOAL", "STATUS", "HANDOFF", "TITLE"}}
	for _, x := range goals {
		g := obj(x)
		rows = append(rows, []string{str(g["goal_id"]), str(g["status"]), str(g["handoff_mode"]), oneLine(str(g["title"]))})
	}
	table(w, "", rows)
}

// agentsText is `agent list`.
func agentsText(w io.Writer, m map[string]any) {
	agents := list(m["agents"])
	if len(agents) == 0 {
		fmt.Fprintf(w, "no agents in goal %s\n", str(m["goal_id"]))
		return
	}
	rows := [][]string{{"AGENT", "STATUS", "ROLE", "SIGNING KEY"}}
	for _, x := range agents {
		a := obj(x)
		key := str(a["signing_key"])
		if key == "" {
			key = "-"
		} else if typ, body, ok := strings.Cut(key, " "); ok && len(body) > 12 {
			key = typ + " …" + body[len(body)-12:]
		}
		rows = append(rows, []string{str(a["agent_id"]), str(a["status"]), agentRole(a), key})
	}
	table(w, "", rows)
}

// agentRole is an agent's role with its authority: "orchestrator:
// complete, reassign (reason required)".
func agentRole(a map[string]any) string {
	s := str(a["role"])
	if auth := strs(a["lifecycle_authority"]); len(auth) > 0 {
		s += ": " + strings.Join(auth, ", ")
	}
	if rr, _ := a["requires_reason"].(bool); rr {
		s += " (reason required)"
	}
	return s
}

// verifyText is a successful `loopx verify` (an invalid store is an error).
func verifyText(w io.Writer, m map[string]any) {
	var b block
	b.add("valid", "yes: every record on the head checks")
	pending := strs(m["pending_boards"])
	if len(pending) == 0 {
		b.add("pending boards", "none")
	} else {
		r := row{label: "pending boards", value: strings.Join(pending, ", ")}
		for _, g := range pending {
			r.sub = append(r.sub, "repair: loopx todo project-markdown --goal-id "+g)
		}
		b.rows = append(b.rows, r)
	}
	b.write(w, "")
}

// generic shows any other result as aligned fields, nested objects and
// lists of objects indented under their field.
func generic(w io.Writer, m map[string]any, indent string, now time.Time) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b block
	for _, k := range keys {
		label := strings.ReplaceAll(k, "_", " ")
		switch v := m[k].(type) {
		case map[string]any:
			var sub strings.Builder
			generic(&sub, v, "", now)
			b.rows = append(b.rows, row{label: label, sub: splitLines(sub.String())})
		case []any:
			if len(v) == 0 {
				b.add(label, "none")
				continue
			}
			if _, nested := v[0].(map[string]any); !nested {
				b.add(label, strings.Join(strs(v), ", "))
				continue
			}
			r := row{label: label, value: fmt.Sprint(len(v))}
			for _, e := range v {
				var sub strings.Builder
				generic(&sub, obj(e), "", now)
				for i, l := range splitLines(sub.String()) {
					if i == 0 {
						r.sub = append(r.sub, "- "+l)
					} else {
						r.sub = append(r.sub, "  "+l)
					}
				}
			}
			b.rows = append(b.rows, r)
		default:
			if strings.HasSuffix(k, "_at") {
				b.add(label, stamp(v, now))
			} else {
				b.add(label, scalar(v))
			}
		}
	}
	b.write(w, indent)
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case bool:
		if x {
			return "yes"
		}
		return "no"
	}
	return clean(str(v))
}

// by adds "by WHO" when who is known.
func by(s, who string) string {
	if who == "" {
		return s
	}
	return s + " by " + who
}

// relOf is the relative time of an RFC 3339 value, or the value itself.
func relOf(v any, now time.Time) string {
	if t, ok := when(v); ok {
		return rel(t, now)
	}
	return clean(str(v))
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// strs is a JSON list as strings, each cleaned.
func strs(v any) []string {
	var out []string
	for _, e := range list(v) {
		out = append(out, clean(str(e)))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}
