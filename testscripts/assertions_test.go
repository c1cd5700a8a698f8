package testscripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoVacuousAssertions: scripts run with (?m), so stdout '^$' (or
// stderr '^$') matches any output that ends in a newline and guards
// nothing; an empty output is asserted with `! stdout .`.
func TestNoVacuousAssertions(t *testing.T) {
	files, err := filepath.Glob("*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	vacuous := regexp.MustCompile(`^\s*(std(out|err))\s+(-count=\d+\s+)?('\^?\$?'|"\^?\$?"|''|\^\$)\s*$`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "-- ") {
				break // the files of the archive, not the script
			}
			if m := vacuous.FindStringSubmatch(line); m != nil {
				t.Errorf("%s:%d: %q matches any output; use `! %s .`", f, i+1, line, m[1])
			}
		}
	}
}
