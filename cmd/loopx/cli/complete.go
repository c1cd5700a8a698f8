package cli

import "github.com/spf13/cobra"

func registerCompletions(e *env, c *cobra.Command) {}
