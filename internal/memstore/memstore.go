// Package memstore is an in-memory store for tests: one repository
// (gitstore.MemRepo) with goal "g" and the given agents, Stores opened on
// it as separate processes would open theirs, and a clock that moves one
// second per request.
package memstore

import (
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Fix is one in-memory store.
type Fix struct {
	T     testing.TB
	Repo  *gitstore.MemRepo
	Clock time.Time
	// Opts are the options every Store is opened with (Now: Clock).
	Opts loopx.Options
	S    *loopx.Store // the first Store
}

// New makes the store: format initialized, goal "g", the agents
// registered; opts configure every Store opened on it.
func New(t testing.TB, opts loopx.Options, agents ...string) *Fix {
	f := &Fix{T: t, Repo: gitstore.NewMemRepo(gitstore.DefaultRetry), Clock: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), Opts: opts}
	f.Opts.Now = func() time.Time { return f.Clock }
	f.S = f.Open()
	f.Do(f.S, lease.InitRequest{FormatVersion: lease.FormatVersion})
	f.Do(f.S, lease.GoalCreateRequest{Goal: "g"})
	for _, a := range agents {
		f.Do(f.S, lease.RegisterRequest{Goal: "g", Agent: a})
	}
	return f
}

// Open returns another Store on the repository (another process).
func (f *Fix) Open() *loopx.Store { return loopx.OpenRepo(f.Repo, f.Opts) }

// Do applies req through s a second later, and fails the test on an error.
func (f *Fix) Do(s *loopx.Store, req any) *loopx.Result[any] {
	f.T.Helper()
	f.Clock = f.Clock.Add(time.Second)
	res, err := s.Apply(lease.CallOf(req))
	if err != nil {
		f.T.Fatalf("%T: %v", req, err)
	}
	return res
}
