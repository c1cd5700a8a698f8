package cli

// `loopx gen-docs` (hidden) writes what is generated from the command tree:
// a man page per command and the bash, zsh, fish and PowerShell completion
// scripts (--dir, for release archives), and the command and flag reference
// docs/CLI.md (--cli-reference; a test fails when it is out of date).
// Regenerate the reference after changing a command or a flag:
//
//	go run ./cmd/loopx gen-docs --cli-reference docs/CLI.md
//
// or `go generate ./cmd/loopx/cli`.

//go:generate go run .. gen-docs --cli-reference ../../../docs/CLI.md

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func genDocsCmd(e *env) *cobra.Command {
	var dir, cliRef, date string
	c := &cobra.Command{
		Use:    "gen-docs",
		Short:  "Write the man pages and shell completions (--dir) and the command reference (--cli-reference)",
		Hidden: true,
		Long: `gen-docs writes what is generated from loopx's command tree: with --dir DIR,
DIR/man/man1/*.1 (one man page per command) and DIR/completions (loopx.bash,
_loopx for zsh, loopx.fish, loopx.ps1); with --cli-reference FILE, the command
and flag reference in Markdown (docs/CLI.md). Man pages are dated --date (a
release passes its commit's date), else $SOURCE_DATE_EPOCH, else today.`,
		Example: "  go run ./cmd/loopx gen-docs --dir build\n  go run ./cmd/loopx gen-docs --cli-reference docs/CLI.md",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" && cliRef == "" {
				return usageError("gen-docs needs --dir DIR, --cli-reference FILE or both (see `%s --help`)", c.CommandPath())
			}
			var files []string
			if dir != "" {
				var when *time.Time
				if date != "" {
					t, err := time.Parse(time.RFC3339, date)
					if err != nil {
						return usageError("--date %q is not an RFC 3339 time", date)
					}
					when = &t
				}
				written, err := writeManAndCompletions(docTree(), dir, when)
				if err != nil {
					return err
				}
				files = append(files, written...)
			}
			if cliRef != "" {
				var buf bytes.Buffer
				writeCLIReference(&buf, docTree())
				if err := os.WriteFile(cliRef, buf.Bytes(), 0o644); err != nil {
					return err
				}
				files = append(files, cliRef)
			}
			if e.format == "json" {
				data, err := json.Marshal(map[string]any{"ok": true, "operation": "gen-docs", "files": files})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(e.stdout, "%s\n", data)
				return err
			}
			for _, f := range files {
				fmt.Fprintln(e.stdout, f)
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "write DIR/man/man1/*.1 and DIR/completions/*")
	c.Flags().StringVar(&date, "date", "", "the date of the man pages, RFC 3339 (default $SOURCE_DATE_EPOCH, else now)")
	c.Flags().StringVar(&cliRef, "cli-reference", "", "write the Markdown command reference to FILE (docs/CLI.md)")
	return c
}

// envDefaults are the global flags whose default is read from the
// environment when the tree is built; generated documents show the
// built-in default instead, whatever the environment of the generator.
var envDefaults = map[string]string{"registry": "", "remote": "", "offline": "false"}

// docTree builds the command tree that the documents describe.
func docTree() *cobra.Command {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard}, nil)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if v, ok := envDefaults[f.Name]; ok {
			f.DefValue = v
		}
	})
	walk(root, func(c *cobra.Command) { c.DisableAutoGenTag = true })
	return root
}

// walk calls fn for c and every command under it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// documented lists the commands a reader can type, in tree order: every
// available command except help.
func documented(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c != root && (!c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand()) {
			return
		}
		out = append(out, c)
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	return out
}

// writeManAndCompletions writes the man pages and completion scripts under
// dir and returns the files written.
func writeManAndCompletions(root *cobra.Command, dir string, date *time.Time) ([]string, error) {
	manDir := filepath.Join(dir, "man", "man1")
	compDir := filepath.Join(dir, "completions")
	for _, d := range []string{manDir, compDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	header := manHeader{title: "LOOPX", section: "1", source: "loopx " + Version, manual: "loopx manual", date: manDate(date)}
	files, err := writeManPages(root, manDir, header)
	if err != nil {
		return nil, err
	}
	scripts := []struct {
		name string
		gen  func(io.Writer) error
	}{
		{"loopx.bash", func(w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{"_loopx", root.GenZshCompletion},
		{"loopx.fish", func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
		{"loopx.ps1", root.GenPowerShellCompletionWithDesc},
	}
	for _, s := range scripts {
		var buf bytes.Buffer
		if err := s.gen(&buf); err != nil {
			return nil, err
		}
		p := filepath.Join(compDir, s.name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// manDate is the man pages' date: date when given, else
// $SOURCE_DATE_EPOCH (reproducible builds), else now.
func manDate(date *time.Time) time.Time {
	if date != nil {
		return date.UTC()
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC()
}

// manPageName is the file of c's man page: loopx-task-lease-acquire.1.
func manPageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
}

// cliReferenceCommand is how docs/CLI.md is regenerated.
const cliReferenceCommand = "go run ./cmd/loopx gen-docs --cli-reference docs/CLI.md"

// writeCLIReference writes the Markdown reference of every command and flag.
func writeCLIReference(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "# loopx command reference\n\n")
	fmt.Fprintf(w, "<!-- Generated from the command tree by `%s`. Do not edit: change the command's help and regenerate. -->\n\n", cliReferenceCommand)
	fmt.Fprintf(w, "Every command and its flags, as `loopx CMD --help` prints them. What the commands print, the\n"+
		"error codes, the exit codes and the identifier rules are in [REFERENCE.md](REFERENCE.md).\n"+
		"A flag marked *required* is a usage error (exit 2) when it is missing; its error keeps the\n"+
		"code of its field (`invalid_todo_id` for `--todo-id`).\n\n")
	cmds := documented(root)
	fmt.Fprintf(w, "## Global flags\n\nAccepted by every command, before or after its name.\n\n")
	writeFlagTable(w, root, root.PersistentFlags())
	fmt.Fprintf(w, "Flags of `loopx` itself:\n\n")
	writeFlagTable(w, root, root.LocalNonPersistentFlags())
	fmt.Fprintf(w, "## Commands\n\n")
	for _, c := range cmds[1:] {
		depth := strings.Count(cmdKey(c), " ")
		fmt.Fprintf(w, "%s- [%s](#%s)\n", strings.Repeat("  ", depth), c.CommandPath(), anchor(c.CommandPath()))
	}
	fmt.Fprintln(w)
	for _, c := range cmds[1:] {
		fmt.Fprintf(w, "### %s\n\n%s.\n\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."))
		fmt.Fprintf(w, "```\n%s\n```\n\n", usageLine(c))
		if c.Long != "" {
			fmt.Fprintf(w, "```text\n%s\n```\n\n", strings.TrimSpace(c.Long))
		}
		if c.HasAvailableSubCommands() {
			fmt.Fprintf(w, "Subcommands:")
			for i, sub := range c.Commands() {
				if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
					continue
				}
				sep := ","
				if i == 0 {
					sep = ""
				}
				fmt.Fprintf(w, "%s [%s](#%s)", sep, sub.Name(), anchor(sub.CommandPath()))
			}
			fmt.Fprintf(w, ".\n\n")
		}
		if local := c.LocalNonPersistentFlags(); local.HasAvailableFlags() {
			writeFlagTable(w, c, local)
		}
		if c.Example != "" {
			fmt.Fprintf(w, "Examples:\n\n```sh\n%s\n```\n\n", strings.TrimRight(dedent(c.Example), "\n"))
		}
	}
}

// usageLine is c's synopsis without the trailing "[flags]" noise of groups.
func usageLine(c *cobra.Command) string {
	if c.HasAvailableSubCommands() && c.Runnable() && c.Use == c.Name() {
		return c.CommandPath() + " COMMAND [flags]"
	}
	return c.UseLine()
}

// flagDoc is what the generated documents say of a flag: the name of its
// value ("" for a switch), its usage and its default ("" when that is the
// zero value); ok is false for a flag they leave out (hidden, deprecated).
func flagDoc(f *pflag.Flag) (varname, usage, def string, ok bool) {
	if f.Hidden || f.Deprecated != "" {
		return "", "", "", false
	}
	varname, usage = pflag.UnquoteUsage(f)
	if f.Value.Type() == "bool" {
		varname = ""
	}
	switch def = f.DefValue; def {
	case "", "false", "0", "[]", "0s":
		def = ""
	}
	return varname, usage, def, true
}

// writeFlagTable writes one row per visible flag of fs.
func writeFlagTable(w io.Writer, c *cobra.Command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "| flag | value | default | meaning |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		varname, usage, def, ok := flagDoc(f)
		if !ok || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		if def != "" {
			def = "`" + def + "`"
		}
		if req := requiredNote(c, f.Name); req != "" {
			usage = "**" + req + ".** " + usage
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, cell(varname), def, cell(usage))
	})
	fmt.Fprintln(w)
}

// requiredNote says whether the rails require flag on c ("required", or
// "required with --X").
func requiredNote(c *cobra.Command, flag string) string {
	key := cmdKey(c)
	var notes []string
	for _, r := range requiredFlags {
		if r.cmd != key || r.flag != flag {
			continue
		}
		if r.or != "" {
			return "required (or --" + r.or + ")"
		}
		if r.when == "" {
			return "required"
		}
		notes = append(notes, "--"+r.when)
	}
	if len(notes) > 0 {
		return "required with " + strings.Join(notes, " or ")
	}
	return ""
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// anchor is the GitHub heading anchor of a command path.
func anchor(path string) string {
	return strings.ReplaceAll(strings.ToLower(path), " ", "-")
}

// dedent removes the two-space indent cobra examples carry.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}
