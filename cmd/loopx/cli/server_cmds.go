package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// rotateKeyCmd is `loopx agent rotate-key`.
func rotateKeyCmd(e *env) *cobra.Command {
	var req lease.RotateKeyRequest
	var keyFile string
	c := &cobra.Command{
		Use:   "rotate-key",
		Short: "Replace an agent's signing key (by the agent, or an orchestrator with reassign authority)",
		Long: `rotate-key replaces the SSH public key registered for an agent, or gives one
to an agent that has none, in one audited commit. The agent rotates its own key
(in a store that requires signatures the commit is signed with the old key),
or a registered orchestrator with reassign authority does it with --by (signed
with the orchestrator's key; --authority-reason when its registration requires
one).`,
		Example: "  loopx agent rotate-key --agent-id agent-a --signing-key ~/.ssh/id_ed25519_new.pub\n" +
			"  loopx agent rotate-key --agent-id agent-a --signing-key new.pub --by lead --authority-reason 'laptop lost'",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			req.Goal = e.goal
			if keyFile == "" {
				return lease.Errorf(lease.CodeInvalidRequest, "--signing-key is required (the new public key file)").With("field", "signing_key").With("flag", "--signing-key")
			}
			data, err := os.ReadFile(keyFile)
			if err != nil {
				return lease.Errorf(lease.CodeInvalidRequest, "--signing-key: cannot read %s: %v", keyFile, err).With("field", "signing_key")
			}
			req.SigningKey = string(data)
			return e.run(func(s *loopx.Store) (loopx.Reply, error) { return s.RotateKey(req) })
		},
	}
	c.Flags().StringVar(&req.Agent, "agent-id", "", "the agent whose key is replaced")
	c.Flags().StringVar(&keyFile, "signing-key", "", "the new SSH public key file (FILE.pub)")
	c.Flags().StringVar(&req.By, "by", "", "who rotates another agent's key: an admin (in a store with admins), else an orchestrator with reassign authority")
	c.Flags().StringVar(&req.AuthorityReason, "authority-reason", "", "why the orchestrator rotates the key (recorded)")
	// --by names an agent here (on todo supersede, a todo): registered
	// before the rails walk, which then leaves it alone.
	_ = c.RegisterFlagCompletionFunc("by", e.completeIDs("by", "agent"))
	return c
}

// serverHookCmd is `loopx server-hook install|pre-receive`.
func serverHookCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "server-hook",
		Short: "The server-side check of the state ref (a bare repository's pre-receive hook)",
		Long: `server-hook makes a Git server enforce loopx's rules: its pre-receive hook
refuses a push to the state ref unless every new commit is a fast-forward,
re-verifies (its recorded request decided on its parent gives it exactly, as
` + "`loopx verify --history`" + ` checks), is dated within the store's clock-skew bound
of the server's clock and, in a store that requires signatures, is signed by
the key its acting agent registered. See docs/SERVER.md.`,
		Example: "  loopx server-hook install --repo /srv/git/project.git\n  loopx server-hook install --repo project.git --ref refs/loopx/state --ref refs/heads/loopx",
	}
	var refs, codeRefs []string
	var exe string
	var installDecide bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Write the pre-receive hook into a (bare) repository, chained after an existing hook",
		Long: `install writes loopx's block into the repository's pre-receive hook
(core.hooksPath respected). An existing hook is kept as
pre-receive.loopx-chained and runs first, with the same stdin; when it fails,
the push is refused there. Running install again changes nothing. The hook
calls this loopx by its absolute path (--loopx PATH names another one, e.g. the
path inside a Git server's container), else ` + "`loopx`" + ` on PATH; when none is found
it refuses the push. --ref names the state refs to check (default: the store's
ref, refs/loopx/state). --code-refs names the code refs whose pushes the code
fence judges (default refs/heads/*: every branch; --code-refs '' turns it off):
each commit a push brings that the server did not have is judged on the
server's state ref as it stands, at the server's clock, never by its own dates:
a path inside another agent's effective write scope is write_scope_conflict, a
Loopx-Lease whose todo has since been held by another agent is stale_epoch, and
in a store that requires signatures a commit into a leased scope must be signed
by its Loopx-Agent's registered key. Tags and other refs are not judged.`,
		Example: "  loopx server-hook install --repo /srv/git/project.git\n  loopx server-hook install --repo project.git --loopx /usr/local/bin/loopx",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if exe == "" {
				exe = hookExecutable()
			}
			var code []string
			if c.Flags().Changed("code-refs") {
				code = nonEmpty(codeRefs)
			}
			return e.run(func(s *loopx.Store) (loopx.Reply, error) {
				return audit.New(s).ServerHookInstall(refs, code, exe, installDecide)
			})
		},
	}
	install.Flags().StringArrayVar(&refs, "ref", nil, "a state ref to check (repeatable; default the store's ref)")
	install.Flags().StringArrayVar(&codeRefs, "code-refs", nil, "a pattern of code refs whose pushes the code fence judges (repeatable; default refs/heads/*; '' guards none)")
	install.Flags().StringVar(&exe, "loopx", "", "the loopx executable the hook runs (default: this one)")
	install.Flags().BoolVar(&installDecide, "decide", false, "let the hook decide requests pushed to it in order, under the server's fence (no lost races; see docs/REMOTE.md)")
	var checkRefs, checkCodeRefs []string
	var decide bool
	preReceive := &cobra.Command{
		Use:   "pre-receive [--ref REF]...",
		Short: "Check a push: git's pre-receive lines on stdin (what the installed hook runs)",
		Long: `pre-receive reads the "<old> <new> <ref>" lines git hands a pre-receive hook
and checks every new commit of the state refs (see ` + "`loopx server-hook --help`" + `).
Each refused commit is one line on stderr ("loopx server-hook: refused <sha> on
<ref>: <code>: <why>"; code signature_required, signature_invalid, clock_skew,
or corrupt_record with the verification's reason), which git shows the pusher;
then it exits non-zero and git refuses the whole push.`,
		Example: "  echo \"$old $new refs/loopx/state\" | loopx server-hook pre-receive --repo project.git",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if isTerminal(os.Stdin) {
				return usageError("pre-receive reads the lines git hands a pre-receive hook on stdin")
			}
			ups, err := audit.ParseReceiveUpdates(os.Stdin)
			if err != nil {
				return err
			}
			if decide && os.Getenv("LOOPX_LOCK_TIMEOUT") == "" {
				// Requests queue on the server's writer fence, decided
				// one at a time: wait as long as a client's transaction
				// may take, not the 10 s of a command that races.
				os.Setenv("LOOPX_LOCK_TIMEOUT", gitstore.DefaultRetry.Timeout.String())
			}
			s, err := e.open()
			if err != nil {
				return err
			}
			defer s.Close()
			req := audit.ServerHookRequest{Refs: checkRefs, Updates: ups, Decide: decide}
			if c.Flags().Changed("code-refs") {
				req.CodeRefs = nonEmpty(checkCodeRefs)
				req.CodeRefsOff = len(req.CodeRefs) == 0
			}
			res, err := audit.New(s).ServerHookPreReceive(req)
			if res != nil {
				// What a pushing loopx reads (git relays it as "remote: ...").
				for _, line := range res.Data.Decided {
					fmt.Fprintln(e.stderr, gitstore.DecidedPrefix+line)
				}
				if res.Data.Announce {
					fmt.Fprintln(e.stderr, gitstore.DeciderAnnouncement)
				}
			}
			if err != nil {
				le, ok := lease.AsError(err)
				refused, _ := le.Details["refused"].([]audit.ServerRefusal)
				if !ok || e.format != "text" || len(refused) == 0 {
					return err
				}
				// What the pusher sees: one line per refused commit, then
				// the verdict.
				for _, r := range refused {
					fmt.Fprintln(e.stderr, r.Line())
				}
				commits := map[string]bool{}
				for _, r := range refused {
					commits[r.Revision] = true
				}
				return lease.Errorf(le.Code, "push refused: %d commit(s) of %s do not hold", len(commits), strings.Join(uniqueRefs(refused), ", "))
			}
			if e.format == "text" {
				return nil // a hook that accepts says nothing
			}
			return e.print(res)
		},
	}
	preReceive.Flags().StringArrayVar(&checkRefs, "ref", nil, "a state ref to check (repeatable; default the store's ref)")
	preReceive.Flags().StringArrayVar(&checkCodeRefs, "code-refs", nil, "a pattern of code refs the code fence guards (repeatable; default refs/heads/*; '' none)")
	preReceive.Flags().BoolVar(&decide, "decide", false, "decide the requests pushed to request refs (refs/loopx/requests/...) here, and say so on accepted pushes to a state ref")
	c.AddCommand(install, preReceive)
	return c
}

// nonEmpty drops empty values (`--code-refs ”` turns the code fence off).
func nonEmpty(vs []string) []string {
	out := []string{}
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func uniqueRefs(rs []audit.ServerRefusal) []string {
	var out []string
	for _, r := range rs {
		if len(out) == 0 || out[len(out)-1] != r.Ref {
			out = append(out, r.Ref)
		}
	}
	return out
}
