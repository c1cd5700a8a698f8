package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// adminCmd is `loopx admin add|remove|list` (contract section 8).
func adminCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "admin",
		Short: "Add, remove and list the store's admins (who may change the rules)",
		Long: `A store may name admins. Without any, the store is open: anyone changes its
settings and agents register themselves with any role. The first admin closes
it (an audited commit); from then on store settings, orchestrator and lifecycle
authority grants, another agent's key or registration, goal archive/unarchive
and clock-reset need an admin named with --by (in a store that requires
signatures, the admin's signature proves it). See docs/SECURITY.md.`,
	}
	var add lease.AdminAddRequest
	var keyFile string
	addCmd := &cobra.Command{
		Use:   "add",
		Short: "Add an admin (the first closes an open store), or replace an admin's key",
		Example: "  loopx admin add --admin-id root --signing-key ~/.ssh/id_ed25519.pub\n" +
			"  loopx admin add --admin-id ops --signing-key ops.pub --by root",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if keyFile != "" {
				key, err := readKeyFile("signing-key", keyFile)
				if err != nil {
					return err
				}
				add.SigningKey = key
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.AddAdmin(add) })
		},
	}
	addCmd.Flags().StringVar(&add.Admin, "admin-id", "", "the admin to add (an id like an agent id)")
	addCmd.Flags().StringVar(&keyFile, "signing-key", "", "the admin's SSH public key file (FILE.pub); needed in a store that requires signatures")
	addCmd.Flags().StringVar(&add.By, "by", "", "the admin who adds it (needed once the store has an admin)")
	var rm lease.AdminRemoveRequest
	removeCmd := &cobra.Command{
		Use:     "remove",
		Short:   "Remove an admin (by an admin; the last admin stays)",
		Example: "  loopx admin remove --admin-id ops --by root",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.RemoveAdmin(rm) })
		},
	}
	removeCmd.Flags().StringVar(&rm.Admin, "admin-id", "", "the admin to remove")
	removeCmd.Flags().StringVar(&rm.By, "by", "", "the admin who removes it")
	listCmd := &cobra.Command{
		Use: "list", Short: "List the store's admins and who may register agents", Args: noArgs,
		Example: "  loopx admin list",
		RunE: func(c *cobra.Command, args []string) error {
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.ListAdmins() })
		},
	}
	c.AddCommand(addCmd, removeCmd, listCmd)
	return c
}

// readKeyFile reads a public key file named by --flag.
func readKeyFile(flag, file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", lease.Errorf(lease.CodeInvalidRequest, "--%s: cannot read %s: %v", flag, file, err).With("field", "signing_key")
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", lease.Errorf(lease.CodeInvalidRequest, "--%s: %s is empty", flag, file).With("field", "signing_key")
	}
	return string(data), nil
}
