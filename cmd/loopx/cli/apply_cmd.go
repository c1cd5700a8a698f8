package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

func applyCmd(e *env) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "apply",
		Short: "Decide one request given as JSON (stdin, or --file) exactly as its command does",
		Long: `apply reads one request in the wire schema of contract section 7: a JSON
object with "schema" (e.g. "loopx.task-lease.acquire/v1") and the request's
fields. It is decided exactly as the equivalent command: the same result, the
same errors and exit codes. Unknown fields, unknown schemas or versions,
wrong types, a key given twice, anything after the object, invalid UTF-8 and
requests over 1 MiB are refused (invalid_request, details field; a wrong
type in an identifier, TTL or scope field gets that field's code, e.g.
invalid_todo_id). The schemas are in docs/request-schema.json.`,
		Example: `  echo '{"schema":"loopx.todo.add/v1","todo_id":"todo_parser","text":"Write the parser"}' | loopx apply
  loopx apply --file request.json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			in := c.InOrStdin()
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return lease.Errorf(lease.CodeInvalidRequest, "read the request: %v", err)
				}
				defer f.Close()
				in = f
			}
			// Read no further than the limit: one byte past it is enough
			// to know the request is too big.
			data, err := io.ReadAll(io.LimitReader(in, lease.MaxRequestSize+1))
			if err != nil {
				return lease.Errorf(lease.CodeInvalidRequest, "read the request: %v", err)
			}
			if err := lease.CheckRequestSize(len(data)); err != nil {
				return err
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ApplyJSON(data) })
		},
	}
	c.Flags().StringVar(&file, "file", "", "read the request from this file (default: stdin)")
	return c
}
