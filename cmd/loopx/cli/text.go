package cli

// Text output, for people (JSON is for programs). The rules every renderer
// keeps (docs/DECISIONS.md, "Text output"):
//
//   - Every label is the name of the JSON field it shows, its underscores
//     written as spaces ("required write scopes" is required_write_scopes),
//     in tables too (upper case). A line that joins a field with its
//     companions is labelled by the first ("created at: … by lead" is
//     created_at and created_by). So a reader of the text finds the field
//     in the JSON, and a script writer finds the text's line.
//   - Fields are ordered by what people look for first (what it is, who
//     holds it, until when; then relations; then history), never
//     alphabetically; a fact is stated once (a released lease says
//     "released", not also "expired"; an error's details that its message
//     already states are not repeated under it).
//   - Sizes are humanised (1.9 MiB) and durations too (4m30s); a time is
//     shown as the absolute time and how long ago or ahead it is, or, in a
//     one-line summary, only relatively ("expires in 4m"): the absolute
//     time is always in the JSON. Relative times are taken against now,
//     LOOPX_NOW when set, so scripts that fix the clock get fixed bytes.
//   - The text is drawn from the result's JSON document, so `loopx apply`
//     and the command of the same request print the same text.
//
// Every string that came from a user (todo text, notes, evidence, reasons,
// titles, error messages) is cleaned of control characters before it
// reaches the terminal, so a hostile todo cannot move the cursor, retitle
// the window or ring the bell; a final filter on the writer catches
// anything a renderer missed.

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

// size is a byte count for people: 512 B, 9.5 KiB, 260 KiB, 1.9 MiB (three
// significant digits at most, binary units as git's count-objects -H).
func size(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	unit := ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		unit = u
		if v < 1024 {
			break
		}
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
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

// label is the text label of a JSON field: its name, underscores as spaces.
func label(field string) string { return strings.ReplaceAll(field, "_", " ") }

// block is a list of "label: value" lines, aligned on the values.
type block struct {
	rows []row
}

type row struct {
	label, value string
	sub          []string // lines shown under the row, indented
}

// add adds the row of JSON field field.
func (b *block) add(field, value string) {
	b.rows = append(b.rows, row{label: label(field), value: value})
}

// addIf adds the row when value is not empty.
func (b *block) addIf(field, value string) {
	if value != "" {
		b.add(field, value)
	}
}

func (b *block) write(w io.Writer, indent string) {
	width := 0
	for _, r := range b.rows {
		width = max(width, len(r.label)+1)
	}
	for _, r := range b.rows {
		lines := strings.Split(clean(r.value), "\n")
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("%s%-*s %s", indent, width, r.label+":", lines[0]), " "))
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

// heading is a table's header row: the JSON names of its columns, upper
// case, underscores as spaces.
func heading(fields ...string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = strings.ToUpper(label(f))
	}
	return out
}

// envelopeFields are the contract's envelope: the summary line and the
// notes under the result say what people need of them.
var envelopeFields = []string{"ok", "operation", "status", "idempotent", "revision", "current_provider_revision",
	"current_cursor", "provider", "projection_delivery", "retry_business_mutation", "projection_error",
	"offline", "view_fetched_at", "offline_pending", "checked_at", "clock_skew"}

// renderers print the payload of one operation's result (m: the result's
// JSON document without its envelope).
var renderers = map[string]func(w io.Writer, m map[string]any, now time.Time){}

func init() {
	for op, r := range map[string]func(io.Writer, map[string]any, time.Time){
		"init":                    initText,
		"goal.show":               goalText,
		"goal.list":               goalsText,
		"agent.list":              agentsText,
		"admin.list":              adminsText,
		"admin.add":               adminsText,
		"admin.remove":            adminsText,
		"store.clock-reset":       clockResetText,
		"todo.show":               todoText,
		"todo.list":               todosText,
		"todo.ready":              todosText,
		"task-lease.inspect":      inspectText,
		"todo.project-markdown":   projectText,
		"log":                     logText,
		"verify":                  verifyText,
		"gc":                      gcText,
		"guard.install":           hookInstallText,
		"server-hook.install":     hookInstallText,
		"guard.check":             guardText,
		"guard.commit-msg":        guardText,
		"server-hook.pre-receive": preReceiveText,
		"sync":                    syncText,
	} {
		renderers[op] = r
	}
}

// printText prints a result for people: a summary line for mutations, then
// what the command is about, then what the envelope says that people must
// know (an offline view, a clock ahead).
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
	for _, k := range envelopeFields {
		delete(m, k)
	}
	switch r := renderers[res.Operation]; {
	case r != nil:
		r(w, m, now)
	case res.Mutation:
		changedText(w, m, now)
	default:
		generic(w, m, "", now)
	}
	envelopeText(w, res, now)
}

// envelopeText adds the envelope's warnings: a view that is not the
// server's head now (offline), and a head dated ahead of this machine.
func envelopeText(w io.Writer, res *loopx.Envelope, now time.Time) {
	if ri := res.Remote; ri != nil && ri.Offline {
		s := "offline: the view of " + ri.Name
		if ri.FetchedAt.IsZero() {
			s += " was never fetched"
		} else {
			s += " fetched " + rel(ri.FetchedAt, now)
		}
		if ri.Pending > 0 {
			s += fmt.Sprintf("; %d offline change(s) to publish with `loopx sync`", ri.Pending)
		}
		fmt.Fprintln(w, s)
	}
	if sk := res.ClockSkew; sk != nil {
		fmt.Fprintf(w, "clock skew: the head is dated %s, more than %ds ahead of this machine's clock (%s): mutations are refused; see `loopx clock-reset --help`\n",
			sk.HeadTime, sk.MaxClockSkewSeconds, sk.LocalTime)
	}
}

// changedText is a mutation's payload: one line per record it changed
// (the whole record is in the JSON output and on the ref).
func changedText(w io.Writer, m map[string]any, now time.Time) {
	if t := obj(m["todo"]); t != nil {
		fmt.Fprintf(w, "  %s\n", todoLine(t, now))
	} else if c, ok := m["claimed"].(bool); ok && !c {
		fmt.Fprintln(w, "  no todo is ready to claim")
	}
	if l := obj(m["lease"]); l != nil {
		fmt.Fprintf(w, "  lease: %s\n", leaseLine(l, now))
	}
	if moved, _ := m["transfer_claim"].(bool); moved {
		if changed, _ := m["todo_changed"].(bool); changed {
			fmt.Fprintf(w, "  claimed by: %s (the claim moved with the lease)\n", str(m["claimed_by"]))
		}
	}
	if a := obj(m["agent"]); a != nil {
		fmt.Fprintf(w, "  agent %s: %s, role %s\n", str(a["agent_id"]), str(a["status"]), agentRole(a))
		if _, ok := m["previous_signing_key"]; ok {
			fmt.Fprintf(w, "  signing key: %s (was %s)\n", orNone(shortKey(str(a["signing_key"]))), orNone(shortKey(str(m["previous_signing_key"]))))
		}
	}
	if g := obj(m["goal"]); g != nil && m["todo"] == nil {
		fmt.Fprintf(w, "  goal %s: %s, handoff mode %s\n", str(g["goal_id"]), str(g["status"]), str(g["handoff_mode"]))
	}
}

// generic shows a result no renderer knows as aligned fields, in the order
// of the JSON document (sorted keys), nested objects and lists of objects
// indented under their field. Every result of loopx has a renderer; this
// is for one added without.
func generic(w io.Writer, m map[string]any, indent string, now time.Time) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b block
	for _, k := range keys {
		switch v := m[k].(type) {
		case map[string]any:
			var sub strings.Builder
			generic(&sub, v, "", now)
			b.rows = append(b.rows, row{label: label(k), sub: splitLines(sub.String())})
		case []any:
			if len(v) == 0 {
				b.add(k, "none")
				continue
			}
			if _, nested := v[0].(map[string]any); !nested {
				b.add(k, strings.Join(strs(v), ", "))
				continue
			}
			r := row{label: label(k), value: fmt.Sprint(len(v))}
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
				b.add(k, stamp(v, now))
			} else {
				b.add(k, scalar(v))
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
		return yesNo(x)
	}
	return clean(str(v))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
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

// join is a JSON list of strings joined by ", ", or none.
func join(v any, none string) string {
	if s := strs(v); len(s) > 0 {
		return strings.Join(s, ", ")
	}
	return none
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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

// num is a JSON number as an int64 (0 when it is not one).
func num(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
