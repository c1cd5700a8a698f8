package loopx

import (
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// memFix is an in-memory store for tests: one repository with goal "g" and
// the given agents, Stores opened on it as separate processes would, and a
// clock that moves one second per request.
type memFix struct {
	t     *testing.T
	repo  *gitstore.MemRepo
	clock time.Time
	s     *Store // the first Store
}

func newMemFix(t *testing.T, agents ...string) *memFix {
	f := &memFix{t: t, repo: gitstore.NewMemRepo(gitstore.DefaultRetry), clock: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)}
	f.s = f.open()
	f.do(f.s, lease.InitRequest{FormatVersion: lease.FormatVersion})
	f.do(f.s, lease.GoalCreateRequest{Goal: "g"})
	for _, a := range agents {
		f.do(f.s, lease.RegisterRequest{Goal: "g", Agent: a})
	}
	return f
}

// open returns another Store on the repository (another process).
func (f *memFix) open() *Store {
	return OpenRepo(f.repo, Options{Now: func() time.Time { return f.clock }})
}

// do applies req through s a second later, and fails the test on an error.
func (f *memFix) do(s *Store, req any) *Result[any] {
	f.t.Helper()
	f.clock = f.clock.Add(time.Second)
	res, err := s.Apply(lease.CallOf(req))
	if err != nil {
		f.t.Fatalf("%T: %v", req, err)
	}
	return res
}
