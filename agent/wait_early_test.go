package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/internal/clock"
	"github.com/loopx-dev/loopx/lease"
)

// readyStore is a waitStore whose ready --claim finds nothing, and whose
// Ready says why: the test sets the todos that are not ready.
type readyStore struct {
	*waitStore
	rmu      sync.Mutex
	notReady []lease.NotReady
}

func (s *readyStore) ReadyClaim(lease.ReadyClaimRequest) (*loopx.Result[lease.TodoResult], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, s.clk.Now())
	no := false
	return &loopx.Result[lease.TodoResult]{Envelope: loopx.Envelope{Status: lease.StatusNoChange}, Data: lease.TodoResult{Claimed: &no}}, nil
}

func (s *readyStore) Ready(goal, agent string) (*loopx.Result[loopx.ReadyList], error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return &loopx.Result[loopx.ReadyList]{Data: loopx.ReadyList{GoalID: "g", AgentID: "agent-b", Todos: []lease.TodoView{}, NotReady: s.notReady}}, nil
}

func (s *readyStore) set(nr ...lease.NotReady) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.notReady = nr
}

func notReady(todo string, kinds ...string) lease.NotReady {
	n := lease.NotReady{TodoID: todo, Priority: "P2"}
	for _, k := range kinds {
		n.Reasons = append(n.Reasons, lease.NotReadyReason{Kind: k, Agent: "agent-a"})
	}
	return n
}

// A ready --claim wait tells what it waits for each time it sleeps, and
// ends early, with its answer (nothing claimed), once nothing can become
// ready: here the todo agent-a held is completed 1s in (the head moves),
// and the one left excludes agent-b.
func TestReadyWaitEndsWhenNothingCanBecomeReady(t *testing.T) {
	s := &readyStore{waitStore: newWaitStore(clock.NewFake(holdT0), false, true)}
	s.set(notReady("todo_held", lease.NotReadyHeld), notReady("todo_other", lease.NotReadyExcluded))
	var notices []WaitNotice
	var nmu sync.Mutex
	r := &waitRun{t: t, s: s.waitStore, done: make(chan error, 1)}
	poll := testPoll
	var res *loopx.Result[lease.TodoResult]
	go func() {
		var err error
		res, err = ReadyClaimWait(context.Background(), s, lease.ReadyClaimRequest{Goal: "g", Actor: "agent-b"},
			WaitOptions{Timeout: time.Minute, Stats: &r.stats, Poll: &poll, Notify: func(n WaitNotice) {
				nmu.Lock()
				notices = append(notices, n)
				nmu.Unlock()
			}})
		r.done <- err
	}()
	r.timer(time.Minute)
	r.timer(time.Second)
	r.running()
	s.set(notReady("todo_other", lease.NotReadyExcluded))
	s.release() // the head moves
	s.watch.c <- struct{}{}
	r.timer(10 * time.Millisecond)
	s.clk.Step(10 * time.Millisecond)
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if res == nil || !nothingClaimed(res) {
		t.Fatalf("answer %+v, want nothing claimed", res)
	}
	if st := r.stats; st.Attempts != 2 || !st.EndedEarly || st.WaitedMS != 10 {
		t.Fatalf("stats %+v", st)
	}
	nmu.Lock()
	defer nmu.Unlock()
	if len(notices) != 2 || notices[0].Final || len(notices[0].NotReady) != 2 || !notices[1].Final ||
		notices[1].Agent != "agent-b" || !notices[0].Deadline.Equal(holdT0.Add(time.Minute)) {
		t.Fatalf("notices %+v", notices)
	}
}

// Nothing open at all (every todo closed): the first answer is the last.
func TestReadyWaitWithNothingOpenDecidesOnce(t *testing.T) {
	s := &readyStore{waitStore: newWaitStore(clock.NewFake(holdT0), false, true)}
	var st WaitStats
	var res *loopx.Result[lease.TodoResult]
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = ReadyClaimWait(context.Background(), s, lease.ReadyClaimRequest{Goal: "g", Actor: "agent-b"},
			WaitOptions{Timeout: time.Hour, Stats: &st})
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("the wait did not end")
	}
	if err != nil || !nothingClaimed(res) || st.Attempts != 1 || !st.EndedEarly || st.WaitedMS != 0 {
		t.Fatalf("res %+v, err %v, stats %+v", res, err, st)
	}
}

func TestBarred(t *testing.T) {
	for _, c := range []struct {
		n    lease.NotReady
		want bool
	}{
		{notReady("t", lease.NotReadyExcluded), true},
		{notReady("t", lease.NotReadyBound), true},
		{notReady("t", lease.NotReadyHeld, lease.NotReadyExcluded), true},
		{notReady("t", lease.NotReadyHeld), false},
		{notReady("t", lease.NotReadyClaimed), false},
		{notReady("t", lease.NotReadyDependencies), false},
		{notReady("t", lease.NotReadyScope), false},
	} {
		if got := barred(c.n); got != c.want {
			t.Errorf("barred(%+v) = %v", c.n.Reasons, got)
		}
	}
}
