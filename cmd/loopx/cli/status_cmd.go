package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx/lease"
)

func statusCmd(e *env) *cobra.Command {
	var agent string
	c := &cobra.Command{
		Use:   "status",
		Short: "Who holds what: claims and leases in force, expired holders, todos ready now",
		Long: `status lists the claims and task leases in force in a goal (owner, epoch,
write scopes, time left; soonest expiry first), the holders that are no
longer in force but were not taken over yet (expired, owner unregistered, ...),
and the todos ready now (for --agent-id, or for anybody).`,
		Example: "  loopx status\n  loopx status --agent-id agent-a --format json",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			s, err := e.open()
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := s.Status(e.goal, agent)
			if err != nil {
				return err
			}
			if e.format == "json" {
				return e.print(res)
			}
			printStatus(e.stdout, &res.Data)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent-id", "", "list the todos ready for this agent")
	return c
}

// printStatus prints the status for people: the holdings in force and
// those no longer in force (tables whose columns are the JSON fields), the
// todos ready now, and why each other open todo is not.
func printStatus(w io.Writer, d *lease.StatusData) {
	fmt.Fprintf(w, "goal %s at %s\n", d.GoalID, d.Now.Format(time.RFC3339))
	if len(d.Active) == 0 {
		fmt.Fprintln(w, "\nnobody holds anything")
	} else {
		fmt.Fprintln(w, "\nin force (soonest expiry first):")
		holdingTable(w, d.Active, false)
	}
	if len(d.Expired) > 0 {
		fmt.Fprintln(w, "\nno longer in force, not taken over yet:")
		holdingTable(w, d.Expired, true)
	}
	who := "anybody"
	if d.AgentID != "" {
		who = d.AgentID
	}
	if len(d.Ready) == 0 {
		fmt.Fprintf(w, "\nnothing ready for %s\n", who)
	} else {
		fmt.Fprintf(w, "\nready for %s:\n", who)
		rows := [][]string{heading("todo_id", "priority", "required_write_scopes", "text")}
		for _, r := range d.Ready {
			rows = append(rows, []string{r.TodoID, r.Priority, orDash(strings.Join(r.RequiredWriteScopes, ",")), oneLine(r.Text)})
		}
		table(w, "  ", rows)
	}
	notReadyTable(w, who, d.NotReady, d.NotReadyMore)
}

// notReadyTable says why each todo of notReady is not ready for who
// (status and todo ready; nothing when none).
func notReadyTable(w io.Writer, who string, notReady []lease.NotReady, more int) {
	if len(notReady) == 0 {
		return
	}
	fmt.Fprintf(w, "\nnot ready for %s:\n", who)
	rows := [][]string{heading("todo_id", "priority", "reasons")}
	for _, n := range notReady {
		var why []string
		for _, r := range n.Reasons {
			why = append(why, notReadyText(r))
		}
		rows = append(rows, []string{n.TodoID, n.Priority, strings.Join(why, "; ")})
	}
	table(w, "  ", rows)
	if more > 0 {
		fmt.Fprintf(w, "  and %d more\n", more)
	}
}

// notReadyText says one reason a todo is not ready, with who or what
// stands in the way (until when is in the table of what is in force).
func notReadyText(r lease.NotReadyReason) string {
	switch r.Kind {
	case lease.NotReadyClaimed:
		return "claimed by " + r.Agent
	case lease.NotReadyExcluded:
		return r.Agent + " is excluded"
	case lease.NotReadyBound:
		return "bound to " + r.Agent
	case lease.NotReadyHeld:
		return "held by " + r.Agent + "'s lease"
	case lease.NotReadyDependencies:
		return "dependencies open: " + strings.Join(r.Dependencies, ", ")
	case lease.NotReadyScope:
		return fmt.Sprintf("scope %s is held by %s's lease on %s", r.Scope, r.Agent, r.TodoID)
	}
	return r.Kind
}

func holdingTable(w io.Writer, hs []lease.Holding, withReason bool) {
	head := heading("owner", "kind", "todo_id", "epoch", "write_scopes", "expires")
	if withReason {
		head = append(head, heading("reason")...)
	}
	rows := [][]string{head}
	for _, h := range hs {
		owner := h.Owner
		if h.ScopeAgent != "" {
			owner += " (scope agent " + h.ScopeAgent + ")"
		}
		epoch := "-"
		if h.Epoch != nil {
			epoch = fmt.Sprint(*h.Epoch)
		}
		left := "never"
		if h.SecondsLeft != nil {
			left = relativeLeft(*h.SecondsLeft)
		}
		row := []string{owner, h.Kind, h.TodoID, epoch, orDash(strings.Join(h.WriteScopes, ",")), left}
		if withReason {
			row = append(row, label(h.Reason))
		}
		rows = append(rows, row)
	}
	table(w, "  ", rows)
}

// relativeLeft says how long until (or since) an expiry, for people:
// "4m left", "1h5m left", "2m ago", "now". (A holding no longer in force
// says why in its own column: "expired" is not repeated here.)
func relativeLeft(seconds int64) string {
	switch {
	case seconds > 0:
		return humanSpan(seconds) + " left"
	case seconds < 0:
		return humanSpan(-seconds) + " ago"
	}
	return "now"
}

// humanSpan renders a positive number of seconds in its two largest units,
// rounded down: 59s, 4m, 4m30s, 1h5m, 2d3h.
func humanSpan(s int64) string {
	d, h, m := s/86400, s/3600%24, s/60%60
	sec := s % 60
	switch {
	case d > 0:
		return unitPair(d, "d", h, "h")
	case h > 0:
		return unitPair(h, "h", m, "m")
	case m > 0:
		return unitPair(m, "m", sec, "s")
	}
	return fmt.Sprintf("%ds", sec)
}

func unitPair(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, ua)
	}
	return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
}
