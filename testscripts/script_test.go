// Package testscripts runs the loopx command line against txtar scripts, one
// behaviour per file, with the kit other projects use (loopxtest): each
// script starts in a fresh folder with its own HOME, a fixed clock
// (LOOPX_NOW), JSON output and fixed Git dates, and has the kit's commands
// (jq, exits, path, envfile).
package testscripts

import (
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/loopx-dev/loopx/cmd/loopx/cli"
	"github.com/loopx-dev/loopx/loopxtest"
)

func TestMain(m *testing.M) {
	progs := loopxtest.Programs()
	progs["loopx"] = func() { os.Exit(cli.MainWith(cli.Config{SystemClock: systemClock})) }
	testscript.Main(m, progs)
}

// systemClock is the real clock of this suite's loopx: fixed, so scripts
// stay reproducible. It is LOOPX_TEST_SYSTEM_CLOCK when a script sets it
// (to show what a fake LOOPX_NOW cannot do: rewind a store's clock, hide a
// commit dated ahead), else LOOPX_NOW, as if the machine's clock said what
// the script's fixed clock says. Only this test binary reads the variable;
// the loopx command ignores it.
func systemClock() time.Time {
	for _, v := range []string{"LOOPX_TEST_SYSTEM_CLOCK", "LOOPX_NOW"} {
		if t, err := time.Parse(time.RFC3339, os.Getenv(v)); err == nil {
			return t
		}
	}
	return time.Now()
}

func TestScripts(t *testing.T) {
	testscript.Run(t, Params())
}

// Params are the testscript parameters of loopx's suite: the kit's, on the
// scripts of this folder, each starting in an empty folder (scripts make
// their repositories with `loopx init`, and some test what loopx does
// outside one), with this suite's own commands added.
func Params() testscript.Params {
	p := loopxtest.Params(loopxtest.Options{Dir: ".", EmptyWork: true})
	for name, cmd := range suiteCmds {
		p.Cmds[name] = cmd
	}
	return p
}

// suiteCmds are the commands only this suite's scripts use, on top of the
// kit's (loopxtest.Cmds): add one here, or to the kit if other projects'
// scripts want it too.
var suiteCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}
