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
same errors and exit codes. Unknown fields, unknown schemas or versions and
wrong types are refused (invalid_request, details field). The schemas are in
docs/request-schema.json.`,
		Example: `  echo '{"schema":"loopx.todo.add/v1","todo_id":"todo_parser","text":"Write the parser"}' | loopx apply
  loopx apply --file request.json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var data []byte
			var err error
			if file == "" || file == "-" {
				data, err = io.ReadAll(c.InOrStdin())
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return lease.Errorf(lease.CodeInvalidRequest, "read the request: %v", err)
			}
			return e.run(func(s *loopx.Store) (*loopx.Result, error) { return s.ApplyJSON(data) })
		},
	}
	c.Flags().StringVar(&file, "file", "", "read the request from this file (default: stdin)")
	return c
}
