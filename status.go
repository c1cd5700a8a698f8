package loopx

import (
	"context"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Status reports who holds what in a goal: the claims and leases in force,
// soonest expiry first, the holders no longer in force that were not taken
// over yet, and the todos ready now for agent ("" for anybody). See
// lease.Status for the judgements.
func (s *Store) Status(goal, agent string) (*Result[lease.StatusData], error) {
	return Read(s, lease.OpStatus, func(v *lease.View, now time.Time) (lease.StatusData, error) {
		g, err := s.goalOf(v, goal)
		if err != nil {
			return lease.StatusData{}, err
		}
		return outcomeOf[lease.StatusData](func() (*lease.Outcome, error) { return lease.Status(v, g, agent, now) })
	})
}

// How a waiting agent sees the store move (package agent).

// ProbeHead reads the head decisions are made on, without fetching: the
// local ref, or with a remote the server's (ls-remote: one ref
// advertisement, no pack).
func (s *Store) ProbeHead(ctx context.Context) (gitstore.Hash, error) {
	if s.remote.Online() {
		return s.remote.ProbeHead(ctx)
	}
	return s.git.Head()
}

// PollsRemote reports whether the head is the server's.
func (s *Store) PollsRemote() bool { return s.remote.Online() }

// WatchRef notifies changes of the local ref.
func (s *Store) WatchRef() gitstore.Watcher { return s.git.WatchRef() }

// NextExpiry returns how long until the soonest expiry of a claim or lease
// in force in goal, judged on the head a waiting request last decided on
// (the local ref; with a remote, the server's head as last fetched), so a
// wait needs no extra round trip to learn it. ok is false when nothing in
// force expires or the head cannot be read (the wait then relies on ref
// changes and polling alone).
func (s *Store) NextExpiry(goal string) (d time.Duration, ok bool) {
	var head gitstore.Hash
	var err error
	if s.remote.Online() {
		head, err = s.remote.LastSeenHead()
	} else {
		head, err = s.git.Head()
	}
	if err != nil || head.IsZero() {
		return 0, false
	}
	sn, err := s.git.Snapshot(head)
	if err != nil {
		return 0, false
	}
	v := s.viewOf(sn)
	now := lease.Now(s.opts.now(), sn.Time())
	g, err := s.goalOf(v, goal)
	if err != nil {
		return 0, false
	}
	st, err := outcomeOf[lease.StatusData](func() (*lease.Outcome, error) { return lease.Status(v, g, "", now) })
	if err != nil {
		return 0, false
	}
	next := st.NextExpiry
	if next == nil {
		return 0, false
	}
	return next.Sub(now), true
}

// LastKnownHead is, for a store whose authority is a server, the server's
// head as last fetched (the tracking ref; the local ref, which mirrors it,
// when it was never fetched here) and when it was fetched (zero: not
// known). ok is false for a store without a server: its head is local and
// always known. What reads that must not block on the network use when the
// server cannot be reached (the guard).
func (s *Store) LastKnownHead() (head gitstore.Hash, fetchedAt time.Time, ok bool, err error) {
	if !s.remote.Online() {
		return gitstore.ZeroHash, time.Time{}, false, nil
	}
	head, err = s.remote.LastSeenHead()
	if err == nil && head.IsZero() {
		head, err = s.git.Head()
	}
	return head, s.remote.LastFetched(), true, err
}
