package cli

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx/lease"
)

// Version is the loopx version. A release build sets it at link time:
//
//	go build -ldflags "-X github.com/loopx-dev/loopx/cmd/loopx/cli.Version=v1.2.3" ./cmd/loopx
//
// Left empty, it is filled at start-up from the build information the Go
// toolchain records in every binary (buildVersion): `go install
// github.com/loopx-dev/loopx/cmd/loopx@v1.2.3` gives v1.2.3.
var Version string

func init() {
	if Version == "" {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			bi = nil
		}
		Version = buildVersion(bi)
	}
}

// modulePath is loopx's module, whose version the binary reports.
const modulePath = "github.com/loopx-dev/loopx"

// devVersion marks a build that says nothing about where it came from.
const devVersion = "devel"

// buildVersion turns a binary's build information into loopx's version:
//
//   - loopx is the main module (go install, go build): its version, which the
//     go command takes from the module proxy (v1.2.3, or a pseudo-version)
//     or, in a Git checkout, from the VCS (a pseudo-version, "+dirty" when
//     the tree had changes);
//   - a build that recorded "(devel)" (no module version): "devel", plus
//     the first 12 digits of vcs.revision and ".dirty" when vcs.modified
//     says the tree had changes: devel+0123456789ab.dirty;
//   - loopx is a dependency of another program (one that embeds the command
//     tree, or a test binary of a module that uses loopxtest): the version
//     that program requires, or the replacement's; "devel" for a
//     replacement by a directory;
//   - no build information: "devel".
func buildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return devVersion
	}
	if bi.Main.Path != modulePath {
		for _, d := range bi.Deps {
			if d.Path != modulePath {
				continue
			}
			if d.Replace != nil {
				d = d.Replace
			}
			if d.Version == "" || d.Version == "(devel)" {
				return devVersion
			}
			return d.Version
		}
		return devVersion
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return devVersion
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := devVersion + "+" + rev
	if modified {
		v += ".dirty"
	}
	return v
}

func versionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "Print the loopx version and store format", Args: noArgs,
		Long: `version prints the loopx version and the store format this loopx reads and
writes. A release build carries the release's version; a binary from
go install ...@VERSION carries VERSION; a build from a Git checkout carries the
commit it was built from.`,
		Example: "  loopx version\n  loopx --version --format text",
		RunE:    func(c *cobra.Command, args []string) error { return e.printVersion() },
	}
}

// printVersion prints the version (`loopx version`, `loopx --version`, `-v`).
func (e *env) printVersion() error {
	if e.format == "json" {
		data, err := json.Marshal(map[string]any{"ok": true, "operation": "version", "version": Version, "store_format": lease.FormatVersion})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", data)
		return err
	}
	_, err := fmt.Fprintf(e.stdout, "loopx %s (store format %d)\n", Version, lease.FormatVersion)
	return err
}
