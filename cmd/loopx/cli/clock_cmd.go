package cli

import (
	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

func clockResetCmd(e *env) *cobra.Command {
	var req lease.ClockResetRequest
	c := &cobra.Command{
		Use:   "clock-reset",
		Short: "Recover a store whose head is dated in the future (a wrong clock or LOOPX_NOW wrote it)",
		Long: `Decisions never use a time earlier than the head's, so one commit dated ahead
(a machine with a wrong clock, or LOOPX_NOW by mistake) would make every later
decision use that time. loopx refuses mutations on such a head (clock_skew,
exit 3). When this machine's clock is right and the head is the one in the
future, clock-reset is the way back: one audited commit, decided at this
machine's real clock (LOOPX_NOW does not apply to it), that brings every lease
and claim expiry lying further ahead than its own TTL back to one TTL from now
(versions, epochs and proofs are kept). It is refused unless the head is more
than the store's skew bound ahead of the real clock, and in a store with admins
it needs an admin (--by). Afterwards decisions use real time again.`,
		Example: "  loopx clock-reset --agent-id ops --reason 'agent-c ran with LOOPX_NOW=2027-01-01'",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ClockReset(req) })
		},
	}
	c.Flags().StringVar(&req.Actor, "agent-id", "", "who recovers the store (recorded as author); in a store with admins, an admin")
	c.Flags().StringVar(&req.Actor, "by", "", "the admin who recovers the store (the same as --agent-id)")
	c.Flags().StringVar(&req.Reason, "reason", "", "why (recorded in the commit)")
	return c
}
