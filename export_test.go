package loopx

import (
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// RecordCacheLen is how many decoded records the Store's record cache holds.
func (s *Store) RecordCacheLen() int { return s.derived.Records().Len() }

// SetUnrecorded leaves the request out of state commits (what recording
// costs: BenchmarkRecordRequest).
func (s *Store) SetUnrecorded(u bool) { s.unrecorded = u }

// CommitSigner is the Sign function of a state commit as a decision on sn
// finds it: the signer rule judged on sn, the key resolved (signed.go).
func (s *Store) CommitSigner(sn *gitstore.Snapshot, call lease.Call, o *lease.Outcome) (func([]byte) ([]byte, error), error) {
	rule, err := lease.CommitSigner(s.viewOf(sn), call, o)
	if err != nil {
		return nil, err
	}
	return s.keys.signer(rule)
}
