// Package audit is what checks the store's history and the work done
// under its leases, above the Store (it reads through the Store's Repo and
// derived data, decides nothing of its own, and writes only caches):
//
//   - verify --history (history.go): every commit re-decided on its parent,
//     every board re-rendered, signatures checked (signature.go);
//   - the audit trail (log.go) that verifies what it shows, with the
//     verified-up-to mark beside the store (mark.go);
//   - the server's pre-receive check (serverhook.go): the same
//     verification run on a push;
//   - the write-scope guard at commit time and at push time (guard.go).
//     The code fence of contract section 9 (lease/codefence.go judging
//     gitstore.ChangedFiles) belongs here, beside it.
package audit

import (
	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
)

// DefaultMarkCatchUp bounds the commits a log judges to bring the
// verified-up-to mark up to the head.
const DefaultMarkCatchUp = 512

// Auditor checks one open store.
type Auditor struct {
	s       *loopx.Store
	repo    gitstore.Repo
	git     *gitstore.Store // nil for a store without a Git repository
	derived *derived.Cache
	// MarkCatchUp bounds the commits a log judges to bring the
	// verified-up-to mark up to the head (mark.go).
	MarkCatchUp int
	// judged counts the commits verified for logs (tests hold a log's cost
	// to what it shows).
	judged int
}

// New is the auditor of s.
func New(s *loopx.Store) *Auditor {
	return &Auditor{s: s, repo: s.Repo(), git: s.Git(), derived: s.Derived(), MarkCatchUp: DefaultMarkCatchUp}
}
