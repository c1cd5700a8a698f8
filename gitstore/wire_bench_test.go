package gitstore

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRemoteWire measures one acquire/release cycle (two transactions
// through the Remote authority: a lease file written, then removed) against
// a bare repository on 127.0.0.1 reached by path (file), `git daemon`
// (git://) and `git http-backend` behind net/http/cgi (http). (docs/REMOTE.md
// has the figures beside those of go-git's in-process transports, which
// loopx used before.)
//
// "command": each transaction with a fresh authority, as each loopx
// command is a process: the server's head is listed first (no objects to
// fetch: this clone made them), then the push. "api": one authority for
// all, as a long-lived Go API user: the head just pushed is the next
// decision's guess, so a transaction is the push alone.
//
//	go test -run XXX -bench BenchmarkRemoteWire -benchtime 30x ./gitstore/
func BenchmarkRemoteWire(b *testing.B) {
	for _, kind := range []string{"file", "daemon", "http"} {
		for _, mode := range []string{"command", "api"} {
			b.Run(kind+"/"+mode, func(b *testing.B) { benchWire(b, kind, mode) })
		}
	}
}

func benchWire(b *testing.B, kind, mode string) {
	base := b.TempDir()
	serveBare(b, base, "state")
	var url string
	switch kind {
	case "file":
		url = base + "/state.git"
	case "daemon":
		url = fmt.Sprintf("git://127.0.0.1:%d/state.git", gitDaemon(b, base))
	case "http":
		url = httpGitServer(b, base, "", "").url + "/state.git"
	}
	s := remoteClient(b, url)
	ctx := context.Background()
	pushCommit(b, s, ZeroHash, put("goal.yaml", "id: g\n"))
	shared := &Remote{Name: "origin"}
	authority := func() *Remote {
		if mode == "api" {
			return shared
		}
		return &Remote{Name: "origin"}
	}
	step := func(i int, acquire bool) {
		_, err := s.Bind(authority(), DefaultRetry).Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
			ch := del("leases/todo_1.yaml")
			if acquire {
				ch = put("leases/todo_1.yaml", fmt.Sprintf("owner: agent\nversion: %d\n", i))
			}
			return &Proposal{Changes: []Change{ch}, Info: CommitInfo{Message: fmt.Sprint("cycle ", i)}}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	before := cpuTime()
	for i := 0; i < b.N; i++ {
		step(i, true)
		step(i, false)
	}
	b.StopTimer()
	// CPU time of this process and of the processes it waited for (the
	// client's git and, for file and http, the server's git too; a git
	// daemon's handlers are its own children), which a loaded machine
	// does not inflate the way it inflates wall time.
	b.ReportMetric(float64(cpuTime()-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}
