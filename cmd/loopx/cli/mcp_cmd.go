package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx/mcp"
)

func mcpCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve loopx's operations as Model Context Protocol tools on stdio",
		Long: `mcp is a Model Context Protocol server on stdin/stdout whose tools are the
operations of the agent's loop: ready, claim, acquire, renew, transfer, release,
complete, update, show, inspect, status and log. A mutation tool takes the fields
of its request schema (docs/request-schema.json) and is decided exactly as the
command: the same results, the same error codes. A refusal is a tool error whose
text is the command's {"ok":false,"error":{...}} object.

The global flags apply to every call: --registry and --repo locate the store
(opened for each call, so it may be created after the server started), --goal-id
is the goal of calls that name none, --remote and --offline as for any command.
When its client closes stdin, the server answers the calls it has read and exits
0; SIGINT or SIGTERM stop it at once.`,
		Example: "  claude mcp add loopx -- loopx mcp\n  loopx mcp --goal-id example-goal",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := e.options(); err != nil { // LOOPX_NOW and friends: refuse at start, not per call
				return err
			}
			collectForLongRun() // a server lives long
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			t := &sdk.IOTransport{Reader: io.NopCloser(c.InOrStdin()), Writer: nopWriteCloser{e.stdout}}
			return mcp.Serve(ctx, mcp.Options{Open: e.open, Goal: e.goal, Version: Version}, t)
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
