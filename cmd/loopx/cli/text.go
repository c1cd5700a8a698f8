package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loopx-dev/loopx"
)

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// printText prints a result for people: a summary line for mutations, a
// listing for list-like results, and the fields as YAML otherwise.
func printText(w io.Writer, res *loopx.Result) {
	var m map[string]any
	raw, _ := json.Marshal(res)
	_ = json.Unmarshal(raw, &m)
	if res.Mutation {
		fmt.Fprintf(w, "%s %s at %s", res.Status, res.Operation, short(res.Revision))
		if res.Projection == loopx.ProjectionPending {
			fmt.Fprintf(w, " (board pending: run `loopx todo project-markdown`)")
		}
		fmt.Fprintln(w)
	}
	for _, k := range []string{"ok", "operation", "status", "idempotent", "revision", "current_provider_revision", "provider", "projection_delivery", "retry_business_mutation"} {
		delete(m, k)
	}
	switch {
	case m["entries"] != nil:
		for _, e := range m["entries"].([]any) {
			en := e.(map[string]any)
			fmt.Fprintf(w, "%s %s %s\n", short(str(en["revision"])), str(en["time"]), str(en["subject"]))
		}
		return
	case m["todos"] != nil:
		for _, t := range m["todos"].([]any) {
			td := t.(map[string]any)
			claim := str(td["claimed_by"])
			if claim == "" {
				claim = "-"
			}
			fmt.Fprintf(w, "%-22s %s %-10s %-14s %s\n", str(td["todo_id"]), str(td["priority"]), str(td["status"]), claim, oneLine(str(td["text"])))
		}
		if len(m["todos"].([]any)) == 0 {
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
		if t, ok := m["todo"].(map[string]any); ok {
			fmt.Fprintf(w, "  todo %s: %s, claimed by %s\n", str(t["todo_id"]), str(t["status"]), orDash(str(t["claimed_by"])))
		}
		if l, ok := m["lease"].(map[string]any); ok {
			fmt.Fprintf(w, "  lease: %s by %s (key %s), version %s, epoch %s, expires %s\n", str(l["status"]), str(l["owner"]),
				str(l["idempotency_key"]), str(l["version"]), str(l["epoch"]), str(l["expires_at"]))
		}
		if a, ok := m["agent"].(map[string]any); ok {
			fmt.Fprintf(w, "  agent %s: %s (%s)\n", str(a["agent_id"]), str(a["status"]), str(a["role"]))
		}
		return
	}
	out, _ := yaml.Marshal(m)
	w.Write(out)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 72 {
		s = s[:69] + "..."
	}
	return s
}
