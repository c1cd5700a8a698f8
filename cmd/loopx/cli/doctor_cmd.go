package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx/doctor"
)

func doctorCmd(e *env) *cobra.Command {
	var agent string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check this clone's setup (hooks, identity, signing key, remote, clock, store format) and say how to fix each problem",
		Long: `doctor checks, one line each, what loopx needs here and says for each
problem how to fix it:

  git_version       git can be run (remote mode needs 2.29 or later)
  store_format      the store exists, in a format this loopx writes (or
                    upgrades), not a newer one
  pre_commit_hook   the guard's hooks are installed and run a loopx that
  commit_msg_hook   exists (in a bare repository: the server hook,
  pre_push_hook     pre_receive_hook)
  agent_identity    $LOOPX_AGENT_ID or git config loopx.agent, and the goals
                    it is registered in
  signing_key       the key a mutation would sign with ($LOOPX_SIGNING_KEY,
                    user.signingKey, ssh-agent), registered for the agent (a
                    must in a store that requires signatures)
  remote            the store's remote answers with this clone's
                    credentials, within --timeout, and serves this clone's
                    store (its store_id)
  clock_skew        neither the remote's head nor the local one is dated
                    beyond the store's skew bound ahead of this clock

It exits 0 when every check passes and 1 when one does not. It never writes
anything (the remote's head is read into a temporary folder and dropped)
and never waits on the network longer than --timeout per look; --offline
skips the remote. With --format json it prints {"ok", "operation",
"checks": [{"name", "ok", "detail", "fix"}]}.`,
		Example: "  loopx doctor\n  loopx doctor --format json | jq '.checks[] | select(.ok | not)'\n  loopx doctor --offline",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageError("--timeout %v: want a positive duration", timeout)
			}
			o, err := e.options()
			if err != nil {
				return err
			}
			if agent == "" {
				agent = os.Getenv("LOOPX_AGENT_ID")
			}
			rep := doctor.Run(context.Background(), doctor.Options{Store: o, AgentID: agent, NoRemote: e.offline, Timeout: timeout})
			if e.format == "json" {
				data, err := json.Marshal(struct {
					OK        bool           `json:"ok"`
					Operation string         `json:"operation"`
					Checks    []doctor.Check `json:"checks"`
				}{rep.OK, "doctor", rep.Checks})
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%s\n", data)
			} else {
				doctorText(safeWriter{e.stdout}, rep)
			}
			if !rep.OK {
				return &exitStatus{code: 1}
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent-id", "", "the agent to check (default $LOOPX_AGENT_ID, else git config loopx.agent)")
	c.Flags().DurationVar(&timeout, "timeout", doctor.DefaultTimeout, "the longest each look at the remote may take")
	return c
}

// doctorText is one line per check ("ok" or "problem", its name, what was
// found), the fix under each problem, then the count of problems.
func doctorText(w io.Writer, rep doctor.Report) {
	width := 0
	for _, c := range rep.Checks {
		width = max(width, len(label(c.Name)))
	}
	problems := 0
	for _, c := range rep.Checks {
		verdict := "ok"
		if !c.OK {
			verdict = "problem"
			problems++
		}
		fmt.Fprintf(w, "%-7s  %-*s  %s\n", verdict, width, label(c.Name), flat(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(w, "%-7s  %-*s  fix: %s\n", "", width, "", flat(c.Fix))
		}
	}
	switch problems {
	case 0:
		fmt.Fprintln(w, "\nall is well")
	default:
		fmt.Fprintf(w, "\n%d problem%s\n", problems, strings.Repeat("s", min(problems-1, 1)))
	}
}
