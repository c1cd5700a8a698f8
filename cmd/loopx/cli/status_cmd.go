package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
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

// printStatus prints the status for people: two tables and a list.
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
		return
	}
	fmt.Fprintf(w, "\nready for %s:\n", who)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range d.Ready {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.TodoID, r.Priority, orDash(strings.Join(r.RequiredWriteScopes, ",")), oneLine(r.Text))
	}
	tw.Flush()
}

func holdingTable(w io.Writer, hs []lease.Holding, withReason bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "  OWNER\tKIND\tTODO\tEPOCH\tSCOPES\tTIME"
	if withReason {
		head += "\tREASON"
	}
	fmt.Fprintln(tw, head)
	for _, h := range hs {
		owner := h.Owner
		if h.ScopeAgent != "" {
			owner += " (for " + h.ScopeAgent + ")"
		}
		epoch := "-"
		if h.Epoch != nil {
			epoch = fmt.Sprintf("e%d", *h.Epoch)
		}
		left := "no expiry"
		if h.SecondsLeft != nil {
			left = relativeLeft(*h.SecondsLeft)
		}
		line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%s", owner, h.Kind, h.TodoID, epoch,
			orDash(strings.Join(h.WriteScopes, ",")), left)
		if withReason {
			line += "\t" + strings.ReplaceAll(h.Reason, "_", " ")
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// relativeLeft says how long until (or since) an expiry, for people:
// "4m left", "1h5m left", "expired 2m ago", "expires now".
func relativeLeft(seconds int64) string {
	switch {
	case seconds > 0:
		return humanSpan(seconds) + " left"
	case seconds < 0:
		return "expired " + humanSpan(-seconds) + " ago"
	}
	return "expires now"
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
