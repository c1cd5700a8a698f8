// Package cli is the loopx command tree. It parses flags, calls one method of
// the loopx package and prints the result; it holds no rules.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// env holds the global flags and the process environment of one run.
type env struct {
	registry, repo, format, goal string
	remote                       string // --remote NAME (remote_cmds.go)
	offline                      bool   // --offline
	stdout, stderr               io.Writer
	// boardOnStdout: stdout carries a board (project-markdown --output -),
	// so an error goes to stderr, in the same format.
	boardOnStdout bool
	completing    bool // the run answers a shell's completion request
	config        Config
}

// usageError marks command-line mistakes (exit 2).
func usageError(format string, args ...any) *lease.Error {
	return lease.Errorf(lease.CodeUsage, format, args...)
}

// Main runs loopx with os.Args and returns the exit code.
func Main() int { return Run(os.Args[1:], os.Stdout, os.Stderr) }

// Config is what a program that embeds the command line may set beyond
// flags and environment. Nothing in the environment can set it: it is for
// test binaries.
type Config struct {
	// SystemClock replaces the real clock where real time must decide
	// (clock-reset, and verify --history's future-dated check; see
	// loopx.Options.SystemClock). A test suite fixes it; a hostile agent
	// cannot, LOOPX_NOW notwithstanding.
	SystemClock func() time.Time
}

// MainWith is Main with a Config.
func MainWith(c Config) int { return RunWith(c, os.Args[1:], os.Stdout, os.Stderr) }

// Run runs loopx with args and returns the exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	return RunWith(Config{}, args, stdout, stderr)
}

// RunWith is Run with a Config.
func RunWith(c Config, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, config: c}
	// Shell completion (cobra's hidden __complete) parses the flags of every
	// command on the line, groups included.
	e.completing = len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
	root := newRoot(e, args)
	if args == nil {
		args = []string{} // cobra would read os.Args
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	if code, ok := e.exitCode(err, args); ok { // run passes its command's status through
		return code
	}
	le := classify(err)
	if e.format == "" {
		e.format = formatFromArgs(args, e.stdout)
	}
	e.printError(le)
	return int(lease.ClassOf(le.Code))
}

// topCommands are the root's commands, each built only when it is needed:
// a run names one of them, and building the whole tree (every command's
// flags, the rails and completions of each) costs more than some commands
// take (TestTopCommandsNameTheTree keeps the names right).
func topCommands() []topCommand {
	return []topCommand{
		{"init", initCmd}, {"goal", goalCmd}, {"agent", agentCmd}, {"todo", todoCmd}, {"task-lease", leaseCmd},
		{"log", logCmd}, {"verify", verifyCmd}, {"gc", gcCmd}, {"demo", demoCmd}, {"version", versionCmd},
		{"guard", guardCmd}, {"sync", syncCmd}, {"apply", applyCmd}, {"clock-reset", clockResetCmd},
		{"status", statusCmd}, {"run", runCmd}, {"server-hook", serverHookCmd}, {"mcp", mcpCmd},
		{"admin", adminCmd}, {"web", webCmd}, {"doctor", doctorCmd}, {"gen-docs", genDocsCmd},
	}
}

type topCommand struct {
	name string
	make func(*env) *cobra.Command
}

// commandWord is the first word of args that is not a global flag or its
// value: the name of the top-level command a run asks for ("" when none).
func commandWord(root *cobra.Command, args []string) string {
	fs := root.PersistentFlags()
	for i := 0; i < len(args); i++ {
		a := args[i]
		var f *pflag.Flag
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			if f = fs.Lookup(name); f == nil || hasValue {
				continue
			}
		case strings.HasPrefix(a, "-") && len(a) == 2:
			if f = fs.ShorthandLookup(a[1:]); f == nil {
				continue
			}
		case strings.HasPrefix(a, "-"):
			continue
		default:
			return a
		}
		if f.NoOptDefVal == "" {
			i++ // the flag's value
		}
	}
	return ""
}

func newRoot(e *env, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "loopx",
		Short: "Divide work between agents with claims and fenced task leases kept in Git",
		Long: `loopx keeps todos, claims and task leases as YAML records on a Git ref
(refs/loopx/state by default). Every change is one compare-and-swap commit, so
Git history is the audit trail. Output is JSON when stdout is not a terminal.`,
		Example:       "  loopx init\n  loopx goal create --goal-id demo\n  loopx todo add --text 'Write the parser'",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&e.registry, "registry", os.Getenv("LOOPX_REGISTRY"), "registry file (JSON locator of the store; default $LOOPX_REGISTRY, else .loopx/registry.json)")
	pf.StringVar(&e.repo, "repo", "", "repository folder (default: the Git repository around the working directory)")
	pf.StringVar(&e.format, "format", "", "output format: text or json (default json when stdout is not a terminal; $LOOPX_FORMAT)")
	pf.StringVar(&e.goal, "goal-id", "", "goal id (default: registry default_goal, $LOOPX_GOAL, or the only active goal)")
	remoteFlags(e, pf)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v (see `%s --help`)", err, c.CommandPath())
	})
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error { return e.resolveFormat() }
	root.Flags().BoolP("version", "v", false, "print the loopx version and store format")
	// A run that names a command gets that command alone; help, shell
	// completion, gen-docs and a run naming none (a typo: suggestions)
	// get the whole tree.
	word := commandWord(root, args)
	only, top := -1, topCommands()
	if !e.completing && word != "gen-docs" {
		for i, c := range top {
			if c.name == word {
				only = i
			}
		}
	}
	for i, c := range top {
		if only < 0 || i == only {
			root.AddCommand(c.make(e))
		}
	}
	root.SetHelpCommand(helpCmd(root))
	root.InitDefaultCompletionCmd()
	e.installRails(root)
	return root
}

// resolveFormat applies the default output format and checks --format.
func (e *env) resolveFormat() error {
	if e.format == "" {
		e.format = defaultFormat(e.stdout)
	}
	if e.format != "text" && e.format != "json" {
		return usageError("--format %q: want text or json", e.format)
	}
	return nil
}

// defaultFormat is $LOOPX_FORMAT, else text on a terminal and JSON otherwise.
func defaultFormat(stdout io.Writer) string {
	if f := os.Getenv("LOOPX_FORMAT"); f != "" {
		return f
	}
	if stdoutIsTerminal(stdout) {
		return "text"
	}
	return "json"
}

// formatFromArgs finds --format when cobra failed before parsing flags
// (an unknown command), so the error still comes out in the asked format.
func formatFromArgs(args []string, stdout io.Writer) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--format="); ok && (v == "text" || v == "json") {
			return v
		}
		if a == "--format" && i+1 < len(args) && (args[i+1] == "text" || args[i+1] == "json") {
			return args[i+1]
		}
	}
	if f := defaultFormat(stdout); f == "text" || f == "json" {
		return f
	}
	return "json"
}

// options builds the store options from flags and environment.
func (e *env) options() (loopx.Options, error) {
	o := loopx.Options{Registry: e.registry, Dir: e.repo, DefaultGoal: os.Getenv("LOOPX_GOAL"), Remote: e.remote, Offline: e.offline,
		SigningKey: os.Getenv("LOOPX_SIGNING_KEY"), SSHAuthSock: os.Getenv("SSH_AUTH_SOCK"), SystemClock: e.config.SystemClock}
	if s := os.Getenv("LOOPX_NOW"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return o, usageError("LOOPX_NOW %q is not an RFC 3339 time", s)
		}
		o.Now = func() time.Time { return t }
	}
	if s := os.Getenv("LOOPX_LOCK_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return o, usageError("LOOPX_LOCK_TIMEOUT %q is not a duration", s)
		}
		o.FenceTimeout = d
	}
	o.FailProjection = os.Getenv("LOOPX_FAIL_PROJECTION") == "1"
	if os.Getenv("LOOPX_TX_STATS") == "1" {
		// How every transaction went, refusals and run's renewals
		// included (benchmarks of contention read it). A held lease
		// renews on its own goroutine: one line at a time.
		var mu sync.Mutex
		w := e.stderr
		o.TxStats = func(st loopx.TxStats) {
			data, _ := json.Marshal(st)
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "loopx: tx: %s\n", data)
		}
	}
	if marker := os.Getenv("LOOPX_TEST_PAUSE_AFTER_COMMIT"); marker != "" {
		// Test hook: the ref has moved; announce it and wait to be killed,
		// so a test can lose the response of an applied mutation.
		o.AfterCommit = func() {
			_ = os.WriteFile(marker, []byte("committed\n"), 0o644)
			time.Sleep(time.Minute)
		}
	}
	return o, nil
}

// open opens the store for a command.
func (e *env) open() (*loopx.Store, error) {
	o, err := e.options()
	if err != nil {
		return nil, err
	}
	return loopx.Open(o)
}

// run opens the store, calls fn and prints its result.
func (e *env) run(fn func(s *loopx.Store) (loopx.Reply, error)) error {
	s, err := e.open()
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := fn(s)
	if err != nil {
		return err
	}
	return e.print(res)
}

func (e *env) print(res loopx.Reply) error {
	if e.format == "json" {
		// Written as it is encoded (a 10,000-todo list is 3 MB), not
		// through json.Marshal, which would hold it, check it and copy it.
		if err := res.WriteJSON(e.stdout); err != nil {
			return err
		}
		_, err := io.WriteString(e.stdout, "\n")
		return err
	}
	printText(e.stdout, res, now())
	return nil
}

func (e *env) printError(le *lease.Error) {
	if e.format != "text" {
		obj := map[string]any{}
		for k, v := range le.Details {
			obj[k] = v
		}
		obj["code"] = le.Code
		obj["message"] = le.Message
		data, _ := json.Marshal(map[string]any{"ok": false, "error": obj})
		w := e.stdout
		if e.boardOnStdout {
			w = e.stderr
		}
		fmt.Fprintf(w, "%s\n", data)
		return
	}
	errorText(safeWriter{e.stderr}, le)
}

func stdoutIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
