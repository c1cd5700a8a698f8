// Package layers holds the test of the house's import rule: every package
// of the module imports only the module's packages its row below allows,
// all of them on lower floors, so that imports only point down.
package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/loopx-dev/loopx"

// floors is the map of the house, top floor first: each package (its path
// in the module; "." is the root, loopx) and the module's packages its
// non-test code may import. A row names only rows below it; a package
// missing from the table fails the test, so a new room is placed on
// purpose (docs/ARCHITECTURE.md draws the same map).
var floors = []struct {
	pkg     string
	imports []string
}{
	// The top: the command line and what runs it.
	{"cmd/loopx", []string{"cmd/loopx/cli"}},
	{"loopxtest", []string{"cmd/loopx/cli", "gitstore", "lease"}},
	{"cmd/loopx/cli", []string{".", "agent", "audit", "doctor", "mcp", "web", "web/loopxsource", "gitstore", "lease"}},
	{"mcp", []string{".", "agent", "audit", "lease"}},
	// The web pages' adapter to a store (the pages themselves, web, know
	// nothing of loopx's packages: they serve a web.Source).
	{"web/loopxsource", []string{".", "audit", "web", "internal/records", "gitstore", "lease"}},
	// Above the root: the checks of a clone's setup (over the audit's hook
	// markers), the agent's loop, the audit, test fixtures and tools.
	{"doctor", []string{".", "audit", "internal/records", "internal/storeerr", "gitstore", "lease", "signing"}},
	{"agent", []string{".", "gitstore", "lease", "internal/retry", "internal/clock"}},
	{"audit", []string{".", "internal/derived", "internal/records", "internal/storeerr", "remote", "gitstore", "lease", "markdown", "signing"}},
	{"internal/fixture", []string{".", "gitstore", "lease"}},
	{"bench/scaleseed", []string{".", "gitstore", "lease"}},
	// The root: the Store, the operation glue, board delivery, results.
	{".", []string{"internal/derived", "internal/records", "internal/storeerr", "remote", "gitstore", "lease", "markdown", "signing", "internal/clock"}},
	// Below the root, behind what the root hands them.
	{"remote", []string{"internal/records", "internal/storeerr", "gitstore", "lease"}},
	{"internal/derived", []string{"internal/records", "gitstore", "lease", "markdown"}},
	{"internal/records", []string{"gitstore", "lease"}},
	{"internal/storeerr", []string{"gitstore", "lease"}},
	{"gitstore/storetest", []string{"gitstore"}},
	// The ground: the Git store, the board renderer, the pure domain.
	{"gitstore", []string{"internal/fault", "internal/retry", "internal/clock"}},
	{"markdown", []string{"lease"}},
	{"lease", nil},
	{"signing", nil},
	{"web", nil},
	{"internal/fault", nil},
	{"internal/soak", nil}, // the test tiers: used by tests only
	// The one retry policy and the one clock of every loop that waits.
	{"internal/retry", []string{"internal/clock"}},
	{"internal/clock", nil},
	{"bench/scalebench", nil},
	{"bench/gogitfloor", nil},
	{"bench/capplot", nil},
}

// TestImportsPointDown: each package's imports are allowed by its row, and
// each row allows only rows below it.
func TestImportsPointDown(t *testing.T) {
	floor := map[string]int{}
	for i, f := range floors {
		floor[f.pkg] = len(floors) - i
	}
	for _, f := range floors {
		for _, imp := range f.imports {
			if fl, ok := floor[imp]; !ok || fl >= floor[f.pkg] {
				t.Errorf("the rule lets %s import %s, which is not below it", f.pkg, imp)
			}
		}
	}
	found := moduleImports(t)
	for pkg, imports := range found {
		row := slices.IndexFunc(floors, func(f struct {
			pkg     string
			imports []string
		}) bool {
			return f.pkg == pkg
		})
		if row < 0 {
			t.Errorf("package %s is not on the map: give it a floor", pkg)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(floors[row].imports, imp) {
				t.Errorf("%s imports %s, which its floor does not allow", pkg, imp)
			}
		}
	}
	if len(found) < 10 {
		t.Fatalf("read only %d packages: is the module root found?", len(found))
	}
}

// moduleImports reads the module's imports of every package's non-test
// files: package path (relative to the module, "." for the root) → the
// module's packages it imports, relative too.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if imp == module {
				imp = "."
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				imp = rest
			} else {
				continue
			}
			if !slices.Contains(out[pkg], imp) {
				out[pkg] = append(out[pkg], imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
