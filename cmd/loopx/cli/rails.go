package cli

// The command line's safety rails (contract section 3: usage is exit 2, at
// any level). installRails walks the whole command tree once it is built, so
// a command added later gets every rail without code of its own:
//
//   - A group (a command with subcommands and no action of its own) refuses
//     an unknown subcommand, and a missing one, with the usage error,
//     suggesting the nearest names ("did you mean complete?"). The group
//     reads its arguments itself, so `loopx todo compelte --todo-id T` is
//     about the subcommand, never "unknown flag --todo-id".
//   - `loopx help X Y` is a usage error when X Y names no command.
//   - A flag the command would ignore is a usage error: the flagNeeds and
//     ignoredFlags tables below.
//   - A missing required flag is a usage error (exit 2) that keeps the
//     contract code of its field (invalid_todo_id for --todo-id: identifier
//     errors name their field), in a message that names the flag: the
//     requiredFlags table. The Go API and JSON requests (loopx apply, MCP)
//     have their own wording and exit 1: there the request was decided; on
//     the command line the user typed flags, so the message speaks of flags.
//   - Errors cobra raises itself (flag parsing, argument checks) are usage
//     errors; errors a command's action returns keep their own code.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopx-dev/loopx/lease"
)

// flagNeed says that flag has an effect on command cmd only together with
// flag needs (set, or for a bool true; with value, set to that value).
type flagNeed struct {
	cmd, flag, needs, value string
}

// flagNeeds are the flags that a command would otherwise ignore silently.
// cmd is the command path without "loopx ".
var flagNeeds = []flagNeed{
	{cmd: "todo ready", flag: "claim-ttl-minutes", needs: "claim"},
	{cmd: "todo ready", flag: "task-lease-idempotency-key", needs: "claim"},
	{cmd: "todo ready", flag: "ttl-seconds", needs: "task-lease-idempotency-key"},
	{cmd: "todo claim", flag: "ttl-seconds", needs: "task-lease-idempotency-key"},
	{cmd: "agent register", flag: "requires-reason", needs: "role", value: lease.RoleOrchestrator},
	{cmd: "verify", flag: "since", needs: "history"},
	{cmd: "verify", flag: "published", needs: "history"},
	{cmd: "todo ready", flag: "wait", needs: "claim"},
	{cmd: "todo list", flag: "offset", needs: "limit"},
	{cmd: "todo ready", flag: "offset", needs: "limit"},
}

// ignoredFlags are global flags that a command does not use: it works on
// the whole store (every goal), or on no store at all.
var ignoredFlags = []struct {
	cmd   string
	flags []string
}{
	{"goal list", []string{"goal-id"}},
	{"verify", []string{"goal-id"}},
	{"gc", []string{"goal-id"}},
	{"doctor", []string{"goal-id"}},
	{"sync", []string{"goal-id"}},
	{"apply", []string{"goal-id"}},
	{"clock-reset", []string{"goal-id"}},
	{"admin add", []string{"goal-id"}},
	{"admin remove", []string{"goal-id"}},
	{"admin list", []string{"goal-id"}},
	{"status", []string{}},
	{"guard install", []string{"goal-id"}},
	{"guard check", []string{"goal-id"}},
	{"server-hook install", []string{"goal-id", "remote", "offline"}},
	{"server-hook pre-receive", []string{"goal-id", "remote", "offline"}},
	{"version", []string{"goal-id", "registry", "repo", "remote", "offline"}},
	{"demo", []string{"goal-id", "registry", "repo", "remote", "offline"}},
	{"gen-docs", []string{"goal-id", "registry", "repo", "remote", "offline"}},
}

// requiredFlag says that command cmd cannot run without flag (when when is
// set: without flag while flag when is given). A missing one is refused with
// exit 2 (usage) and code, the contract code of the field, in the message
// "--FLAG is required[ with --WHEN][ (hint)]", details flag (and field, the
// request's field, for an invalid_request). or names a flag that sets the
// same field (clock-reset --by is --agent-id): given, the row is satisfied.
type requiredFlag struct {
	cmd, flag  string
	code       lease.Code
	hint, when string
	field      string
	or         string
}

const ttlHint = "1..86400"

// requiredFlags are the flags that no default can stand in for: whether one
// is missing is known from the command line alone. (An acting agent or a goal
// that the store may supply, the only registered agent or the only active
// goal, is not here: leaving it out is decided on the store's records, and a
// refusal then exits 1.) The rows of a command are in the order the domain
// checks the fields, so the first missing one is the one reported.
var requiredFlags = []requiredFlag{
	{cmd: "goal create", flag: "goal-id", code: lease.CodeInvalidGoalID, hint: "the new goal's id"},
	{cmd: "goal archive", flag: "goal-id", code: lease.CodeInvalidGoalID, hint: "the goal to archive is never inferred"},
	{cmd: "goal unarchive", flag: "goal-id", code: lease.CodeInvalidGoalID, hint: "the goal to unarchive is never inferred"},
	{cmd: "agent register", flag: "agent-id", code: lease.CodeInvalidAgentID},
	{cmd: "admin add", flag: "admin-id", code: lease.CodeInvalidAgentID},
	{cmd: "admin remove", flag: "admin-id", code: lease.CodeInvalidAgentID},
	{cmd: "admin remove", flag: "by", code: lease.CodeInvalidAgentID, hint: "an admin"},
	{cmd: "agent unregister", flag: "agent-id", code: lease.CodeInvalidAgentID},
	{cmd: "agent rotate-key", flag: "signing-key", code: lease.CodeInvalidRequest, hint: "the new public key file", field: "signing_key"},
	{cmd: "agent rotate-key", flag: "agent-id", code: lease.CodeInvalidAgentID, hint: "the agent whose key is replaced"},
	{cmd: "todo add", flag: "text", code: lease.CodeInvalidRequest, hint: "what is to be done", field: "text"},
	{cmd: "todo show", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "todo claim", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "todo claim", flag: "ttl-seconds", code: lease.CodeInvalidTTL, hint: ttlHint, when: "task-lease-idempotency-key"},
	{cmd: "todo ready", flag: "ttl-seconds", code: lease.CodeInvalidTTL, hint: ttlHint, when: "task-lease-idempotency-key"},
	{cmd: "todo update", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "todo complete", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "todo supersede", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "todo supersede", flag: "reason", code: lease.CodeInvalidRequest, hint: "why it is closed; recorded", field: "reason"},
	{cmd: "task-lease acquire", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "task-lease acquire", flag: "idempotency-key", code: lease.CodeInvalidIdempotencyKey, hint: "the key of this execution"},
	{cmd: "task-lease acquire", flag: "ttl-seconds", code: lease.CodeInvalidTTL, hint: ttlHint},
	{cmd: "task-lease renew", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "task-lease renew", flag: "idempotency-key", code: lease.CodeInvalidIdempotencyKey, hint: "the key of the current execution"},
	{cmd: "task-lease renew", flag: "ttl-seconds", code: lease.CodeInvalidTTL, hint: ttlHint},
	{cmd: "task-lease renew", flag: "expected-version", code: lease.CodeVersionRequired, hint: versionHint},
	{cmd: "task-lease transfer", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "task-lease transfer", flag: "idempotency-key", code: lease.CodeInvalidIdempotencyKey, hint: "the key of the current execution"},
	{cmd: "task-lease transfer", flag: "new-owner", code: lease.CodeInvalidAgentID, hint: "the receiving agent"},
	{cmd: "task-lease transfer", flag: "new-idempotency-key", code: lease.CodeInvalidIdempotencyKey, hint: "the receiver's execution key"},
	{cmd: "task-lease transfer", flag: "ttl-seconds", code: lease.CodeInvalidTTL, hint: ttlHint},
	{cmd: "task-lease transfer", flag: "expected-version", code: lease.CodeVersionRequired, hint: versionHint},
	{cmd: "task-lease release", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "task-lease release", flag: "idempotency-key", code: lease.CodeInvalidIdempotencyKey, hint: "the key of the current execution"},
	{cmd: "task-lease release", flag: "expected-version", code: lease.CodeVersionRequired, hint: versionHint},
	{cmd: "task-lease inspect", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "run", flag: "todo-id", code: lease.CodeInvalidTodoID},
	{cmd: "run", flag: "ttl-seconds", code: lease.CodeInvalidTTL, hint: ttlHint},
	{cmd: "clock-reset", flag: "agent-id", or: "by", code: lease.CodeInvalidAgentID, hint: "who recovers the store"},
	{cmd: "clock-reset", flag: "reason", code: lease.CodeInvalidRequest, hint: "recorded in the commit", field: "reason"},
}

const versionHint = "the current lease version, from task-lease inspect"

func init() {
	// The lease proof of update, complete and supersede is a pair.
	for _, cmd := range []string{"todo update", "todo complete", "todo supersede"} {
		requiredFlags = append(requiredFlags,
			requiredFlag{cmd: cmd, flag: "task-lease-expected-version", code: lease.CodeLeaseFenceRequired,
				hint: "the lease proof needs both", when: "task-lease-idempotency-key"},
			requiredFlag{cmd: cmd, flag: "task-lease-idempotency-key", code: lease.CodeLeaseFenceRequired,
				hint: "the lease proof needs both", when: "task-lease-expected-version"})
	}
}

// cmdKey is a command's path without the root's name: "todo ready".
func cmdKey(c *cobra.Command) string {
	path := c.CommandPath()
	if c.HasParent() {
		return strings.TrimPrefix(path, c.Root().Name()+" ")
	}
	return ""
}

// present reports whether a flag was given (a bool flag: given as true).
func present(f *pflag.Flag) bool {
	if f == nil || !f.Changed {
		return false
	}
	if f.Value.Type() == "bool" {
		return f.Value.String() == "true"
	}
	return true
}

// missing reports whether a required flag is absent: not given, or given as
// an empty string (`--todo-id "$T"` with T unset).
func missing(f *pflag.Flag) bool {
	return !present(f) || (f.Value.Type() == "string" && f.Value.String() == "")
}

// checkFlags applies the flag tables to command c after its flags are parsed.
func checkFlags(c *cobra.Command) error {
	key := cmdKey(c)
	fs := c.Flags()
	for _, r := range flagNeeds {
		if r.cmd != key || !present(fs.Lookup(r.flag)) {
			continue
		}
		n := fs.Lookup(r.needs)
		if r.value != "" {
			if n != nil && n.Value.String() == r.value {
				continue
			}
			return usageError("--%s has no effect without --%s %s (see `%s --help`)", r.flag, r.needs, r.value, c.CommandPath()).
				With("flag", r.flag).With("needs", r.needs+"="+r.value)
		}
		if !present(n) {
			return usageError("--%s has no effect without --%s (see `%s --help`)", r.flag, r.needs, c.CommandPath()).
				With("flag", r.flag).With("needs", r.needs)
		}
	}
	for _, r := range ignoredFlags {
		if r.cmd != key {
			continue
		}
		for _, name := range r.flags {
			if present(fs.Lookup(name)) {
				return usageError("`%s` does not use --%s: drop it", c.CommandPath(), name).With("flag", name)
			}
		}
	}
	for _, r := range requiredFlags {
		if r.cmd != key || !missing(fs.Lookup(r.flag)) {
			continue
		}
		if r.when != "" && !present(fs.Lookup(r.when)) {
			continue
		}
		if r.or != "" && !missing(fs.Lookup(r.or)) {
			continue
		}
		msg := "--" + r.flag + " is required"
		if r.or != "" {
			msg = "--" + r.flag + " (or --" + r.or + ") is required"
		}
		if r.when != "" {
			msg += " with --" + r.when
		}
		if r.hint != "" {
			msg += " (" + r.hint + ")"
		}
		le := lease.Errorf(r.code, "%s", msg).With("flag", r.flag)
		if r.field != "" {
			le = le.With("field", r.field)
		}
		// The field's code, the usage exit: the command line lacks a flag.
		return &exitStatus{code: int(lease.Usage), err: le}
	}
	return nil
}

// actionError marks an error returned by a command's own action (RunE), as
// opposed to one cobra raised while reading the command line.
type actionError struct{ err error }

func (a *actionError) Error() string { return a.err.Error() }
func (a *actionError) Unwrap() error { return a.err }

// classify turns the error of a run into the contract's error: loopx errors
// keep their code; other errors of an action are invalid_request; anything
// cobra raised (unknown flag, bad value, wrong arguments) is usage.
func classify(err error) *lease.Error {
	if le, ok := lease.AsError(err); ok {
		return le
	}
	var ae *actionError
	if errors.As(err, &ae) {
		// An error of a command's own action that carries no contract
		// code was not a decided refusal (only those exit 1): reading or
		// writing files, the terminal. Retrying may help.
		return lease.Errorf(lease.CodeStoreIO, "%s", ae.err.Error())
	}
	return lease.Errorf(lease.CodeUsage, "%s", err.Error())
}

// installRails installs the rails on c and every command under it.
func (e *env) installRails(c *cobra.Command) {
	for _, sub := range c.Commands() {
		e.installRails(sub)
	}
	registerCompletions(e, c)
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.DisableFlagParsing = !e.completing
		c.SuggestionsMinimumDistance = 2
		c.RunE = e.groupRun
		return
	}
	if run := c.RunE; run != nil {
		c.RunE = func(c *cobra.Command, args []string) error {
			if err := run(c, args); err != nil {
				if _, ok := lease.AsError(err); ok {
					return err
				}
				return &actionError{err}
			}
			return nil
		}
	}
	preE, pre := c.PreRunE, c.PreRun
	c.PreRunE = func(c *cobra.Command, args []string) error {
		if err := checkFlags(c); err != nil {
			return err
		}
		if preE != nil {
			return preE(c, args)
		}
		if pre != nil {
			pre(c, args)
		}
		return nil
	}
	c.PreRun = nil
}

// scanArgs splits a group's raw arguments the way its flags would be parsed:
// the positional arguments, and the flags that c does not know.
func scanArgs(fs *pflag.FlagSet, args []string) (positional, unknown []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(positional, args[i+1:]...), unknown
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			f := fs.Lookup(name)
			if f == nil {
				unknown = append(unknown, "--"+name)
				continue
			}
			if !hasValue && f.NoOptDefVal == "" {
				i++ // its value
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			f := fs.ShorthandLookup(a[1:2])
			if f == nil {
				unknown = append(unknown, a[:2])
				continue
			}
			if len(a) == 2 && f.NoOptDefVal == "" {
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	return positional, unknown
}

// subcommandNames lists the subcommands a user may type.
func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return names
}

// isSubcommand reports whether name names a subcommand of c.
func isSubcommand(c *cobra.Command, name string) bool {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return true
		}
	}
	return false
}

// unknownCommand is the usage error for a word that names no subcommand of c.
func unknownCommand(c *cobra.Command, word, what string) error {
	suggestions := c.SuggestionsFor(word)
	msg := fmt.Sprintf("unknown %s %q for %q", what, word, c.CommandPath())
	if len(suggestions) > 0 {
		msg += "; did you mean " + strings.Join(suggestions, " or ") + "?"
	} else {
		msg += "; one of: " + strings.Join(subcommandNames(c), ", ")
	}
	le := usageError("%s (see `%s --help`)", msg, c.CommandPath()).With("command", c.CommandPath()).With("argument", word)
	if len(suggestions) > 0 {
		le = le.With("suggestions", suggestions)
	}
	return le
}

// groupRun is the action of every group: it only runs for a word that names
// no subcommand, a flag the group does not know, or no subcommand at all
// (cobra descends into a subcommand that matches).
func (e *env) groupRun(c *cobra.Command, args []string) error {
	fs := c.Flags()
	positional, unknown := scanArgs(fs, args)
	if len(positional) > 0 && !isSubcommand(c, positional[0]) {
		e.format = "" // Run reads --format from the raw arguments
		return unknownCommand(c, positional[0], "command")
	}
	if len(unknown) > 0 {
		e.format = ""
		return usageError("unknown flag: %s (see `%s --help`)", unknown[0], c.CommandPath())
	}
	if err := fs.Parse(args); err != nil {
		e.format = ""
		return usageError("%v (see `%s --help`)", err, c.CommandPath())
	}
	if err := e.resolveFormat(); err != nil {
		return err
	}
	if present(fs.Lookup("help")) {
		return c.Help()
	}
	if present(fs.Lookup("version")) {
		return e.printVersion()
	}
	what := "a subcommand"
	if !c.HasParent() {
		what = "a command"
	}
	return usageError("%s needs %s: %s (see `%s --help`)", c.CommandPath(), what,
		strings.Join(subcommandNames(c), ", "), c.CommandPath()).With("command", c.CommandPath())
}

// helpCmd is `loopx help [command...]`: the help of a command, or the usage
// error when the words name no command.
func helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help prints the help of a command: loopx help todo ready.",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return usageError("unknown help topic %q: %v", strings.Join(args, " "), err)
			}
			if len(rest) > 0 {
				if target.HasSubCommands() {
					return unknownCommand(target, rest[0], "help topic")
				}
				return usageError("unknown help topic %q: %q takes no subcommand (see `%s --help`)",
					strings.Join(args, " "), target.CommandPath(), target.CommandPath()).With("argument", rest[0])
			}
			return target.Help()
		},
	}
}

// tableFlags lists the (command, flag) pairs the flag tables name, for tests.
func tableFlags() (rows [][2]string) {
	for _, r := range flagNeeds {
		rows = append(rows, [2]string{r.cmd, r.flag}, [2]string{r.cmd, r.needs})
	}
	for _, r := range ignoredFlags {
		for _, f := range r.flags {
			rows = append(rows, [2]string{r.cmd, f})
		}
	}
	for _, r := range requiredFlags {
		rows = append(rows, [2]string{r.cmd, r.flag})
		if r.when != "" {
			rows = append(rows, [2]string{r.cmd, r.when})
		}
		if r.or != "" {
			rows = append(rows, [2]string{r.cmd, r.or})
		}
	}
	return slices.Compact(rows)
}
