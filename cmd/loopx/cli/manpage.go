package cli

// Man pages in roff, one per command a user can type (gen-docs --dir).
// Written here rather than with cobra/doc: that package renders the help
// text through a Markdown converter (go-md2man and blackfriday), and those
// packages' initialisation ran in every loopx process, for every command
// (~0.4 ms of a 15 ms acquire), though only gen-docs uses them; loopx's help
// text is plain text, which roff needs only escaped.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// manHeader is the .TH line's fields.
type manHeader struct {
	title, section, source, manual string
	date                           time.Time
}

// writeManPages writes the man page of every documented command of root
// into dir and returns the files written.
func writeManPages(root *cobra.Command, dir string, h manHeader) ([]string, error) {
	var files []string
	for _, c := range documented(root) {
		p := filepath.Join(dir, manPageName(c))
		if err := os.WriteFile(p, manPage(c, h), 0o644); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// manPage renders c's page: name, synopsis, description, options (its own,
// then the inherited), example and the related commands.
func manPage(c *cobra.Command, h manHeader) []byte {
	var b bytes.Buffer
	dashed := strings.ReplaceAll(c.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".nh\n.TH %q %q %q %q %q\n\n", h.title, h.section, h.date.Format("Jan 2006"), h.source, h.manual)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n\n", dashed, roffText(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n\\fB%s\\fP\n\n", roffText(c.UseLine()))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n\n", roffParagraphs(desc))
	manFlags(&b, "OPTIONS", c.NonInheritedFlags())
	manFlags(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLE\n.EX\n%s\n.EE\n\n", roffText(c.Example))
	}
	var see []string
	if c.HasParent() {
		see = append(see, strings.ReplaceAll(c.Parent().CommandPath(), " ", "-"))
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			see = append(see, strings.ReplaceAll(sub.CommandPath(), " ", "-"))
		}
	}
	if len(see) > 0 {
		for i, s := range see {
			see[i] = "\\fB" + s + "(" + h.section + ")\\fP"
		}
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ", "))
	}
	return b.Bytes()
}

// manFlags writes a section of fs's flags (none: no section).
func manFlags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	var items []string
	fs.VisitAll(func(f *pflag.Flag) {
		varname, usage, def, ok := flagDoc(f)
		if !ok {
			return
		}
		name := "\\fB--" + f.Name + "\\fP"
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "\\fB-" + f.Shorthand + "\\fP, " + name
		}
		if varname != "" {
			name += "=" + roffText(varname)
		}
		if def != "" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		items = append(items, ".PP\n"+name+"\n.RS 4\n"+roffText(usage)+"\n.RE\n")
	})
	if len(items) > 0 {
		fmt.Fprintf(b, ".SH %s\n%s\n", title, strings.Join(items, ""))
	}
}

// roffParagraphs escapes text, its blank lines made paragraph breaks.
func roffParagraphs(text string) string {
	paras := strings.Split(strings.TrimSpace(text), "\n\n")
	for i, p := range paras {
		paras[i] = roffText(p)
	}
	return strings.Join(paras, "\n\n.PP\n")
}

// roffText escapes text for roff: backslashes, characters beyond ASCII
// (as \[uXXXX]), and a line that would start with a control character (.
// or ').
func roffText(text string) string {
	var b strings.Builder
	for _, r := range strings.TrimRight(text, "\n") {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r > 127:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
