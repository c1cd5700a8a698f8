package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestGenDocsManPagesAndCompletions: `loopx gen-docs --dir D` writes one man
// page per command a user can type, each naming every flag the command
// takes, and the four completion scripts.
func TestGenDocsManPagesAndCompletions(t *testing.T) {
	t.Setenv("LOOPX_FORMAT", "json")
	dir := t.TempDir()
	var out bytes.Buffer
	if code := Run([]string{"gen-docs", "--dir", dir}, &out, io.Discard); code != 0 {
		t.Fatalf("gen-docs exited %d: %s", code, out.String())
	}
	var res struct {
		OK    bool     `json:"ok"`
		Files []string `json:"files"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.OK {
		t.Fatalf("gen-docs printed %q (%v)", out.String(), err)
	}
	listed := map[string]bool{}
	for _, f := range res.Files {
		listed[f] = true
	}

	root := docTree()
	cmds := documented(root)
	if len(cmds) < 40 {
		t.Fatalf("only %d documented commands", len(cmds))
	}
	pages, err := filepath.Glob(filepath.Join(dir, "man", "man1", "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != len(cmds) {
		t.Errorf("%d man pages for %d commands", len(pages), len(cmds))
	}
	for _, c := range cmds {
		p := filepath.Join(dir, "man", "man1", manPageName(c))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: no man page: %v", c.CommandPath(), err)
			continue
		}
		if !listed[p] {
			t.Errorf("%s is not in gen-docs' list of files", p)
		}
		page := string(data)
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		if !strings.HasPrefix(page, ".nh\n.TH \"LOOPX\" \"1\"") || !strings.Contains(page, "\n"+name+` \- `) {
			t.Errorf("%s: not a man page of %s:\n%.300s", p, name, page)
		}
		var flags []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				flags = append(flags, f.Name)
			}
		})
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) { flags = append(flags, f.Name) })
		for _, f := range flags {
			if !strings.Contains(page, `\fB--`+f+`\fP`) {
				t.Errorf("%s: the man page does not name --%s", c.CommandPath(), f)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "man", "man1", "loopx-gen-docs.1")); err == nil {
		t.Errorf("the hidden gen-docs command has a man page")
	}

	for name, want := range map[string]string{
		"loopx.bash": "__start_loopx",
		"_loopx":     "#compdef loopx",
		"loopx.fish": "complete -c loopx",
		"loopx.ps1":  "Register-ArgumentCompleter",
	} {
		p := filepath.Join(dir, "completions", name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("no completion script %s: %v", name, err)
			continue
		}
		if !strings.Contains(string(data), want) || !listed[p] {
			t.Errorf("%s: lacks %q or is not listed", name, want)
		}
	}
}

// TestCLIReferenceUpToDate: docs/CLI.md is what the command tree generates,
// whatever the environment of the generator (flag defaults that come from
// LOOPX_* variables show their built-in value).
func TestCLIReferenceUpToDate(t *testing.T) {
	t.Setenv("LOOPX_REGISTRY", "/somewhere/registry.json")
	t.Setenv("LOOPX_REMOTE", "upstream")
	t.Setenv("LOOPX_OFFLINE", "1")
	const path = "../../../docs/CLI.md"
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	root := docTree()
	writeCLIReference(&want, root)
	if !bytes.Equal(have, want.Bytes()) {
		t.Fatalf("docs/CLI.md is out of date: run `%s`", cliReferenceCommand)
	}
	// It documents every command and every flag.
	doc := string(have)
	for _, c := range documented(root)[1:] {
		if !strings.Contains(doc, "\n### "+c.CommandPath()+"\n") {
			t.Errorf("docs/CLI.md has no section for %s", c.CommandPath())
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Name != "help" && !strings.Contains(doc, "`--"+f.Name+"`") {
				t.Errorf("docs/CLI.md does not name --%s of %s", f.Name, c.CommandPath())
			}
		})
	}
	// The required marks come from the rails' table.
	var acquire *cobra.Command
	walk(root, func(c *cobra.Command) {
		if cmdKey(c) == "task-lease acquire" {
			acquire = c
		}
	})
	if requiredNote(acquire, "ttl-seconds") != "required" || requiredNote(acquire, "owner") != "" {
		t.Errorf("requiredNote of task-lease acquire: ttl-seconds %q, owner %q", requiredNote(acquire, "ttl-seconds"), requiredNote(acquire, "owner"))
	}
}

// TestRoffText: help text reaches roff escaped, so no line of it is read as
// a request and no character is lost.
func TestRoffText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{`a \n backslash`, `a \en backslash`},
		{".TH at the start\n'quote too\nnot .here", "\\&.TH at the start\n\\&'quote too\nnot .here"},
		{"4f1c… and “quotes”", `4f1c\[u2026] and \[u201C]quotes\[u201D]`},
		{"trailing newlines\n\n", "trailing newlines"},
	} {
		if got := roffText(c.in); got != c.want {
			t.Errorf("roffText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
