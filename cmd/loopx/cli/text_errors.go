package cli

// Errors in text mode (on stderr): "loopx: CODE: message", then the
// details the message does not already state, labelled by their JSON
// names (text.go has the rules). The refusals that list several things (a
// guard's violations, a server hook's refused commits, sync's replays,
// verify's problems) print one line per thing after the first, which the
// message names.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"

	"github.com/loopx-dev/loopx/lease"
)

// detailNoise are details for programs only: where the store was when it
// refused (the cursor, the provider), said again by every result.
var detailNoise = map[string]bool{"current_cursor": true, "provider": true}

// errorText prints a refusal for people.
func errorText(w io.Writer, le *lease.Error) {
	msg := le.Message
	d := jsonDetails(le.Details)
	// A usage error's message says it all; its details are for programs.
	if le.Code == lease.CodeUsage {
		d = nil
	}
	var extra []string // lines of the listed refusals
	switch {
	case list(d["refused"]) != nil && le.Code == lease.CodeRemoteRejected:
		// The server's lines are inside git's message: say git's part,
		// then each refused commit on its own line.
		if i := strings.Index(msg, " (loopx server-hook: refused "); i >= 0 {
			msg = msg[:i]
		}
		for _, r := range list(d["refused"]) {
			extra = append(extra, refusalLine(obj(r)))
		}
		delete(d, "refused")
		delete(d, "reason") // the first refusal's code, on its line
	case obj(d["sync"]) != nil:
		for _, r := range list(obj(d["sync"])["replays"]) {
			r := obj(r)
			if e := obj(r["error"]); e != nil && strings.Contains(msg, str(e["message"])) {
				delete(r, "error") // the message says it, for the first refusal
			}
			extra = append(extra, replayLine(r))
		}
		delete(d, "sync")
		delete(d, "refused")
	case list(d["refused"]) != nil:
		// The code fence's refusals: the message has one line per refused
		// commit already; the commits judged are for programs.
		delete(d, "refused")
		delete(d, "commits")
	case list(d["violations"]) != nil:
		vs := list(d["violations"])
		for _, v := range vs[1:] { // the message names the first
			extra = append(extra, violationLine(obj(v)))
		}
		for _, k := range []string{"violations", "conflicts", "refused", "refused_commits", "agent_id"} {
			delete(d, k)
		}
	case list(d["problems"]) != nil:
		for _, p := range list(d["problems"]) {
			pr := obj(p)
			extra = append(extra, fmt.Sprintf("%s: %s", str(pr["path"]), flat(str(pr["message"]))))
		}
		delete(d, "problems")
	}
	// A message of several lines (one per refused commit) keeps them.
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	fmt.Fprintf(w, "loopx: %s: %s\n", le.Code, flat(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "  %s\n", flat(l))
	}
	if st := obj(d["stale"]); st != nil {
		d["stale"] = staleText(st, now())
	}
	var b block
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if detailNoise[k] {
			continue
		}
		if v, ok := detailValue(msg, d[k]); ok {
			b.add(k, v)
		}
	}
	b.write(w, "  ")
	for _, l := range extra {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// jsonDetails are an error's details as its JSON shows them (the same
// names, omitted fields omitted), numbers kept exact.
func jsonDetails(details map[string]any) map[string]any {
	out := map[string]any{}
	if len(details) == 0 {
		return out
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&out)
	return out
}

// detailValue is a detail as text, and false when there is nothing to add
// to msg: an empty value, or one the message states already.
func detailValue(msg string, v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		if x == "" || mentioned(msg, x) {
			return "", false
		}
		if isHash(x) {
			return short(x), true
		}
		return flat(x), true
	case json.Number:
		if mentioned(msg, x.String()) {
			return "", false
		}
		return x.String(), true
	case bool:
		return yesNo(x), true
	case []any:
		var out []string
		all := true
		for _, e := range x {
			s, ok := detailValue(msg, e)
			if !ok {
				s = flat(str(e))
			} else {
				all = false
			}
			out = append(out, s)
		}
		if len(out) == 0 || all {
			return "", false
		}
		return strings.Join(out, ", "), true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			if s, ok := detailValue(msg, x[k]); ok {
				out = append(out, label(k)+" "+s)
			}
		}
		if len(out) == 0 {
			return "", false
		}
		return "{" + strings.Join(out, ", ") + "}", true
	}
	return flat(str(v)), true
}

// mentioned reports whether msg states s: as a word of its own (not inside
// a longer identifier or a hash), a number followed by no other digit (a
// unit may follow: "30s"), a revision by its first 12 digits.
func mentioned(msg, s string) bool {
	if isHash(s) {
		s = short(s)
	}
	number := strings.Trim(s, "0123456789") == ""
	inWord := func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || number && r == '.'
	}
	// A number may carry a unit after it ("30s"), never a digit.
	inWordAfter := func(r rune) bool {
		if number {
			return unicode.IsDigit(r) || r == '.'
		}
		return inWord(r)
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		before, after := ' ', ' '
		if start > 0 {
			before = rune(msg[start-1])
		}
		if end < len(msg) {
			after = rune(msg[end])
		}
		if !inWord(before) && !inWordAfter(after) || isHash(s) && !inWord(before) {
			return true
		}
		i = start + 1
	}
}

// isHash reports whether s looks like a full Git object name.
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// refusalLine is one commit a server hook refused: "refused 57070b1c6450
// on refs/loopx/state: clock_skew (future_dated): dated ...".
func refusalLine(r map[string]any) string {
	code := str(r["code"])
	if reason := str(r["reason"]); reason != "" && reason != code {
		code += " (" + reason + ")"
	}
	return fmt.Sprintf("refused %s on %s: %s: %s", short(str(r["revision"])), str(r["ref"]), code, flat(str(r["message"])))
}

// violationLine is one path of a guard refusal, as the message says the
// first: "docs/a.md is inside docs/** held by agent-a on todo_docs (goal
// g) until 2026-…", with the commit and its agent for a range.
func violationLine(v map[string]any) string {
	s := fmt.Sprintf("%s is inside %s held by %s on %s (goal %s)", str(v["path"]), str(v["scope"]),
		str(v["owner"]), str(v["todo_id"]), str(v["goal_id"]))
	if c := str(v["commit"]); c != "" {
		who := orDash(str(v["agent_id"]))
		return fmt.Sprintf("commit %s by %s: %s when it was made", short(c), who, s)
	}
	return s + " until " + str(v["expires_at"])
}
