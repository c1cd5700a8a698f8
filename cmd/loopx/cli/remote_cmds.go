package cli

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopx-dev/loopx"
)

// remoteFlags adds the global remote-mode flags.
func remoteFlags(e *env, pf *pflag.FlagSet) {
	pf.StringVar(&e.remote, "remote", os.Getenv("LOOPX_REMOTE"),
		"remote whose state ref is the authority (default: the registry's remote; $LOOPX_REMOTE)")
	pf.BoolVar(&e.offline, "offline", os.Getenv("LOOPX_OFFLINE") == "1",
		"work on the local ref alone, without contacting the remote ($LOOPX_OFFLINE=1); loopx sync publishes the work later")
}

func syncCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "sync",
		Short: "Bring the store up to date with its remote, replaying offline work",
		Long: `sync fetches the remote's state ref and re-decides, in order, every mutation
made with --offline that the remote lacks, on the remote's current head. Each
replay goes through the remote compare-and-swap like any mutation; those the
head now refuses are listed under "replays" with status "refused" and their
error (never dropped silently). The local ref then points at the remote's head.`,
		Example: "  loopx sync\n  loopx sync --remote origin",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if e.offline {
				return usageError("sync contacts the remote: drop --offline")
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.Sync() })
		},
	}
}
