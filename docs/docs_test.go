// Package docs holds loopx's documentation; its tests check that the
// documents stand alone and agree with the code.
package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loopx-dev/loopx/lease"
)

// documents are the README and every Markdown file under docs/, as paths
// relative to the repository root.
func documents(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	md, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(md) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	for _, f := range md {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(f, ".."+string(filepath.Separator))))
	}
	return files
}

// mdLink finds Markdown links and images: [text](target) and ![alt](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocsStayInRepository: the README and docs/ are self-contained: no
// pointer to the product notes kept beside the repository (outside it), and
// every relative link names a file inside the repository that exists.
func TestDocsStayInRepository(t *testing.T) {
	outside := ".." + "/shared" // spelled in two so this file does not name it
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range documents(t) {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if strings.Contains(text, outside) || strings.Contains(text, "shared/"+"CONTRACT") {
			t.Errorf("%s points at %s, which is not in the repository", doc, outside)
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if filepath.IsAbs(target) {
				t.Errorf("%s links to the absolute path %s", doc, target)
				continue
			}
			p := filepath.Join(root, filepath.Dir(doc), filepath.FromSlash(target))
			rel, err := filepath.Rel(root, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s links to %s, outside the repository", doc, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which does not exist", doc, m[1])
			}
		}
	}
}

// constStrings returns the string constants declared in a Go file of the
// repository, by name.
func constStrings(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", file), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						out[name.Name] = v
					}
				}
			}
		}
		return true
	})
	return out
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReferenceListsEveryErrorCode: every error code the code defines has a
// row in REFERENCE.md's table, with the exit code its class gives.
func TestReferenceListsEveryErrorCode(t *testing.T) {
	ref := readDoc(t, "REFERENCE.md")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(ref, -1) {
		documented[m[1]] = m[2]
	}
	n := 0
	for name, code := range constStrings(t, "lease/errors.go") {
		if !strings.HasPrefix(name, "Code") {
			continue
		}
		n++
		exit, ok := documented[code]
		if !ok {
			t.Errorf("error code %s (lease.%s) is not in the table of docs/REFERENCE.md", code, name)
			continue
		}
		if want := fmt.Sprint(int(lease.ClassOf(lease.Code(code)))); exit != want {
			t.Errorf("docs/REFERENCE.md gives %s exit %s; its class is %s", code, exit, want)
		}
	}
	if n < 40 {
		t.Fatalf("found only %d error codes in lease/errors.go", n)
	}
}

// TestReferenceIdentifierRules: the identifier grammars and ranges in
// REFERENCE.md are the ones the code enforces.
func TestReferenceIdentifierRules(t *testing.T) {
	ref := readDoc(t, "REFERENCE.md")
	ids := constStrings(t, "lease/ids.go")
	for _, name := range []string{"goalIDPattern", "todoIDPattern", "keyPattern"} {
		p, ok := ids[name]
		if !ok {
			t.Fatalf("lease/ids.go has no %s", name)
		}
		if !strings.Contains(ref, "`"+p+"`") {
			t.Errorf("docs/REFERENCE.md does not give %s, %s", name, p)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("1..%d seconds", lease.MaxTTLSeconds),
		fmt.Sprintf("1..%d minutes", lease.MaxClaimTTLMinutes),
	} {
		if !strings.Contains(ref, want) {
			t.Errorf("docs/REFERENCE.md does not say %q", want)
		}
	}
}

// TestReadmeOpensWithTheTwoCommands: the README's first code block is the
// demo and the test suite, the two commands a newcomer runs first.
func TestReadmeOpensWithTheTwoCommands(t *testing.T) {
	readme := readDoc(t, filepath.Join("..", "README.md"))
	_, rest, ok := strings.Cut(readme, "```sh\n")
	if !ok {
		t.Fatal("README.md has no sh code block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if want := []string{"go run ./cmd/loopx demo", "go test ./..."}; strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md opens with %q, want %q", cmds, want)
	}
	if i := strings.Index(readme, "```sh\n"); strings.Count(readme[:i], "\n## ") > 0 {
		t.Errorf("README.md's first code block comes after a section heading")
	}
}
