package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/web"
	"github.com/loopx-dev/loopx/web/loopxsource"
)

func webCmd(e *env) *cobra.Command {
	var addr string
	var listenAny bool
	c := &cobra.Command{
		Use:   "web",
		Short: "Serve a live, read-only view of the store in the browser (on 127.0.0.1)",
		Long: `web serves the store as web pages: each goal's board (todos by status, who
holds each claim and lease, epochs, scopes and a live countdown to expiry; stale
holders and blocked todos with why), a lease timeline per goal, a todo's history
(every commit that touched it, marked verified or not, signed by whom, with the
request it recorded) and an agent's status (what it holds, what is ready for it).
Pages follow the state ref as it moves, without a reload: locally through file
notifications, with a remote (not --offline) by polling the server's head.

It is read-only (GET only; nothing in it can change the store) and listens on
the loopback interface: --addr defaults to a free port on 127.0.0.1, and a
non-loopback address is refused unless --listen-any is given. It prints the URL
to open, and runs until interrupted (Ctrl-C, SIGTERM).`,
		Example: "  loopx web\n  loopx web --addr 127.0.0.1:8377 --goal-id parser",
		Args:    noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkWebAddr(addr, listenAny); err != nil {
				return err
			}
			st, err := e.open()
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.ListGoals(); err != nil { // no store: say so now, not on every page
				return err
			}
			git, err := gitstore.Open(e.repoDir(), gitstore.Options{Ref: st.Ref()})
			if err != nil {
				return lease.Errorf(lease.CodeStoreIO, "open the repository: %v", err)
			}
			defer git.Close()
			remote := st.Remote()
			if e.offline {
				remote = ""
			}
			srv, err := web.New(loopxsource.New(st, git, remote), web.Options{ListenAny: listenAny})
			if err != nil {
				return err
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return lease.Errorf(lease.CodeInvalidRequest, "listen on %s: %v", addr, err)
			}
			collectForLongRun() // a server lives long
			url := "http://" + ln.Addr().String() + "/"
			if e.goal != "" {
				url += "goals/" + neturl.PathEscape(e.goal)
			}
			if e.format == "json" {
				data, _ := json.Marshal(map[string]any{"ok": true, "operation": "web", "url": url, "addr": ln.Addr().String(), "read_only": true})
				fmt.Fprintf(e.stdout, "%s\n", data)
			} else {
				fmt.Fprintf(e.stdout, "loopx web: serving %s (read-only; Ctrl-C stops)\n", url)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			done := make(chan error, 1)
			go func() { done <- hs.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
			}
			srv.Close() // ends the event streams, so shutdown need not wait for them
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on (host:port; port 0 picks a free one)")
	c.Flags().BoolVar(&listenAny, "listen-any", false, "allow a non-loopback --addr and any Host header (the pages are then readable by whoever reaches the address)")
	return c
}

// checkWebAddr refuses a malformed --addr, and one that is not a loopback
// address without --listen-any: a usage error (exit 2), since nothing was
// decided on the store and the fix is on the command line.
func checkWebAddr(addr string, listenAny bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("--addr %q: want host:port (e.g. 127.0.0.1:8377): %v", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageError("--addr %q: bad port %q", addr, port)
	}
	if listenAny || web.LoopbackHost(host) {
		return nil
	}
	return usageError("--addr %q is not a loopback address: loopx web serves 127.0.0.1, localhost or [::1] unless --listen-any is given", addr)
}

// repoDir is the repository the store lives in, located as loopx.Open
// locates it: the registry's repo (relative to the registry file), else
// --repo, else the working directory.
func (e *env) repoDir() string {
	if e.registry != "" {
		var reg struct {
			Repo string `json:"repo"`
		}
		if data, err := os.ReadFile(e.registry); err == nil && json.Unmarshal(data, &reg) == nil {
			if reg.Repo == "" {
				reg.Repo = "."
			}
			if filepath.IsAbs(reg.Repo) {
				return reg.Repo
			}
			return filepath.Join(filepath.Dir(e.registry), reg.Repo)
		}
	}
	if e.repo != "" {
		return e.repo
	}
	return "."
}
