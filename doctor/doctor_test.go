package doctor

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func env(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"LOOPX_SIGNING_KEY", "SSH_AUTH_SOCK", "LOOPX_AGENT_ID"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// clone makes a repository with origin at server and a store on it,
// published (or adopted) at now.
func clone(t *testing.T, dir, server string, now time.Time) loopx.Options {
	t.Helper()
	git(t, filepath.Dir(dir), "init", "-q", dir)
	git(t, dir, "remote", "add", "origin", server)
	o := loopx.Options{Dir: dir, Now: func() time.Time { return now }, SystemClock: func() time.Time { return now }}
	if _, err := loopx.Init(o, loopx.InitOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	return o
}

// listing is every file under dir with its size, mode and time.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %s %d %s", p, st.Mode(), st.Size(), st.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func check(t *testing.T, r Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", name, r.Checks)
	return Check{}
}

// Doctor writes nothing: not when the remote's head is one this clone has
// never seen (it is read into a temporary folder and dropped), and not
// the derived data a read would cache.
func TestDoctorWritesNothing(t *testing.T) {
	env(t)
	root := t.TempDir()
	server := filepath.Join(root, "server.git")
	git(t, root, "init", "-q", "--bare", server)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := clone(t, filepath.Join(root, "a"), server, now)
	s, err := loopx.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateGoal(lease.GoalCreateRequest{Goal: "g", HandoffMode: lease.HandoffSoftClaim}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Another clone moves the server on: clone a has not seen its head.
	later := now.Add(time.Minute)
	b := clone(t, filepath.Join(root, "b"), server, later)
	sb, err := loopx.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.AddTodo(lease.AddRequest{Goal: "g", Todo: "todo_from_b", Text: "from b"}); err != nil {
		t.Fatal(err)
	}
	sb.Close()

	a.Now = func() time.Time { return later }
	before := listing(t, filepath.Join(root, "a"))
	serverBefore := listing(t, server)
	r := Run(context.Background(), Options{Store: a, AgentID: "agent-a", Timeout: 20 * time.Second})
	if c := check(t, r, CheckRemote); !c.OK || !strings.Contains(c.Detail, "this clone's store") {
		t.Errorf("remote: %+v, want ok, this clone's store", c)
	}
	if c := check(t, r, CheckClock); !c.OK || !strings.Contains(c.Detail, "origin's head dated "+later.Format(time.RFC3339)) {
		t.Errorf("clock: %+v, want the server's head (unseen here) dated %s", c, later.Format(time.RFC3339))
	}
	after := listing(t, filepath.Join(root, "a"))
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("doctor wrote in the clone:\nbefore %d entries, after %d", len(before), len(after))
		for _, l := range after {
			if !contains(before, l) {
				t.Errorf("  new or changed: %s", l)
			}
		}
	}
	if strings.Join(serverBefore, "\n") != strings.Join(listing(t, server), "\n") {
		t.Errorf("doctor wrote on the server")
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// A remote that accepts the connection and never answers costs at most
// the timeout: doctor says so, and goes on with the other checks.
func TestDoctorBoundsTheRemote(t *testing.T) {
	env(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	root := t.TempDir()
	server := filepath.Join(root, "server.git")
	git(t, root, "init", "-q", "--bare", server)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := clone(t, filepath.Join(root, "a"), server, now)
	git(t, filepath.Join(root, "a"), "remote", "set-url", "origin", "git://"+ln.Addr().String()+"/server.git")

	start := time.Now()
	r := Run(context.Background(), Options{Store: a, AgentID: "agent-a", Timeout: 500 * time.Millisecond})
	took := time.Since(start)
	c := check(t, r, CheckRemote)
	if c.OK || !strings.Contains(c.Detail, "did not answer within 500ms") {
		t.Errorf("remote: %+v, want a problem: no answer within 500ms", c)
	}
	if took > 5*time.Second {
		t.Errorf("doctor took %s with a 500ms timeout", took)
	}
	if r.OK {
		t.Error("report ok with a problem")
	}
	check(t, r, CheckClock) // the checks after the remote still ran
}

func TestHookLoopx(t *testing.T) {
	for _, c := range []struct{ hook, want string }{
		{"#!/bin/sh\n# >>> loopx guard >>>\nloopx_bin=loopx\n", "loopx"},
		{"#!/bin/sh\n# >>> loopx guard >>>\nloopx_bin='/usr/local/bin/loopx'\n[ -x \"$loopx_bin\" ] || loopx_bin=loopx\n", "/usr/local/bin/loopx"},
		{"#!/bin/sh\n# >>> loopx guard >>>\nloopx_bin='/opt/it'\\''s/loopx'\n", "/opt/it's/loopx"},
		{"#!/bin/sh\nloopx_bin='/before/the/marker'\n# >>> loopx guard >>>\nloopx_bin='/after'\n", "/after"},
		{"#!/bin/sh\n# >>> loopx guard >>>\nexit 0\n", ""},
	} {
		if got := hookLoopx(c.hook, "# >>> loopx guard >>>"); got != c.want {
			t.Errorf("hookLoopx(%q) = %q, want %q", c.hook, got, c.want)
		}
	}
}

func TestShellQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"/usr/bin/loopx", "/opt/it's here/loopx", "a b", "''", "plain"} {
		if got := shellUnquote(shellQuote(s)); got != s {
			t.Errorf("shellUnquote(shellQuote(%q)) = %q", s, got)
		}
	}
}
