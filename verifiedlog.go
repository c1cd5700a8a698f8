package loopx

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
)

// The log tells the truth (contract section 7): every entry `loopx log`
// shows is marked by whether its commit verifies, as verify --history
// verifies it, and a commit that does not is never attributed to the actor
// it names (not by --agent-id, not in its subject).
//
// Verifying means deciding the commit's recorded request again on its
// parent, so it is not free. The verified-up-to mark keeps, beside the
// store (<common dir>/loopx-cache/verified), the newest commit up to which
// every commit of the first-parent history has been judged, with the ones
// that do not verify: a log below the mark only looks verdicts up. A log
// first brings the mark up to the head when the head is at most
// markCatchUp commits above it (the commits made since the last log: each
// judged once, oldest first, the boards from models brought up to date
// along the way, as verify --history does); a store without a mark gets one
// by a log of a history of at most markCatchUp commits, or by a verify
// --history that finds the whole history valid. Above a mark that is too
// far behind (or was left by a ref moved back), each entry shown is
// verified on its own: a --limit 20 log decides at most the commits it
// could show, never the whole history. The mark is derived data: a verdict
// is a function of the commit (its parent is named by its hash) and of
// this loopx's rules, so the mark names the loopx that wrote it and is
// dropped by another.
//
// What a real clock must judge (a commit dated beyond the skew bound ahead
// of this machine's clock) is judged at every log, never kept.

// markCatchUp bounds the commits a log judges to bring the mark up to the
// head (a variable for tests).
var markCatchUp = 512

// verifiedMarkName is the mark's side file.
const verifiedMarkName = "loopx-cache/verified"

// verifiedMark is the verified-up-to mark.
type verifiedMark struct {
	// Rules names the rules the verdicts were reached by (this build's
	// format and operation table): a mark of other rules is not used.
	Rules string `json:"rules"`
	UpTo  string `json:"up_to"`
	// Invalid maps each commit at or below UpTo that does not verify to
	// "<problem>: <message>"; Older lists those made before the store
	// recorded requests.
	Invalid map[string]string `json:"invalid"`
	Older   map[string]bool   `json:"older"`
	Sum     string            `json:"sum"`
}

// markRules identifies the verdicts of this build.
func markRules() string {
	var names []byte
	for _, op := range lease.Operations() {
		names = append(names, op.Schema...)
		names = append(names, ' ')
	}
	sum := sha256.Sum256(append(names, byte('0'+lease.FormatVersion)))
	return hex.EncodeToString(sum[:8])
}

func (m *verifiedMark) checksum() string {
	c := *m
	c.Sum = ""
	data, _ := json.Marshal(c)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (s *Store) loadVerifiedMark() *verifiedMark {
	data, err := s.repo.ReadSideFile(verifiedMarkName)
	if err != nil || data == nil {
		return nil
	}
	var m verifiedMark
	if json.Unmarshal(data, &m) != nil || m.Rules != markRules() || m.Sum != m.checksum() || gitstore.ParseHash(m.UpTo).IsZero() {
		return nil
	}
	return &m
}

func (s *Store) saveVerifiedMark(m *verifiedMark) {
	m.Rules = markRules()
	m.Sum = m.checksum()
	data, err := json.Marshal(m)
	if err == nil {
		_ = s.repo.WriteSideFile(verifiedMarkName, data, false) // a cache: best effort
	}
}

// logVerifier judges the commits one log shows.
type logVerifier struct {
	s    *Store
	mark *verifiedMark // caught up to the head (nil: judge each commit)
	// boards renders the boards of individually judged board commits.
	boards  *historyBoards
	realNow time.Time
	head    gitstore.Hash
}

// newLogVerifier brings the mark up to head when it can (see the file
// comment) and returns the verifier of a log at head.
func (s *Store) newLogVerifier(head gitstore.Hash) (*logVerifier, error) {
	lv := &logVerifier{s: s, boards: &historyBoards{s: s, models: map[string]*historyModel{}}, realNow: s.opts.systemNow(), head: head}
	m := s.loadVerifiedMark()
	// The commits above the mark, newest first (to the root without one).
	var gap []gitstore.Hash
	reached := false
	var stop gitstore.Hash
	if m != nil {
		stop = gitstore.ParseHash(m.UpTo)
	}
	err := s.repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if m != nil && c.Hash == stop {
			reached = true
			return false, nil
		}
		gap = append(gap, c.Hash)
		return len(gap) <= markCatchUp, nil
	})
	if err != nil {
		return nil, err
	}
	if len(gap) > markCatchUp || (m != nil && !reached) {
		return lv, nil // too far behind, or not on this history: judge each entry
	}
	if m == nil {
		m = &verifiedMark{}
	}
	if m.Invalid == nil {
		m.Invalid = map[string]string{}
	}
	if m.Older == nil {
		m.Older = map[string]bool{}
	}
	if len(gap) > 0 {
		boards := &historyBoards{s: s, models: map[string]*historyModel{}}
		for i := len(gap) - 1; i >= 0; i-- {
			c, err := records.CommitMeta(s.repo, gap[i])
			if err != nil {
				return nil, err
			}
			kind, problem, err := s.judgeCommit(c, boards)
			if err != nil {
				return nil, err
			}
			switch {
			case problem != "":
				m.Invalid[c.Hash.String()] = problem
			case kind == commitOlder:
				m.Older[c.Hash.String()] = true
			}
		}
		m.UpTo = head.String()
		s.saveVerifiedMark(m)
	}
	lv.mark = m
	return lv, nil
}

// judgeCommit verifies one commit: its kind, or why it does not verify.
func (s *Store) judgeCommit(c gitstore.CommitMeta, boards *historyBoards) (commitKind, string, error) {
	s.judged++
	kind, err := s.verifyCommit(c, boards)
	if err != nil {
		he, ok := err.(*lease.HistoryError)
		if !ok {
			return 0, "", err
		}
		return 0, he.Kind + ": " + he.Message, nil
	}
	return kind, "", nil
}

// judge sets the integrity of entry le of commit c: from the mark, or by
// verifying c; and the real clock's verdict, every time.
func (lv *logVerifier) judge(c gitstore.CommitMeta, le *LogEntry) error {
	var problem string
	older := false
	if lv.mark != nil {
		problem, older = lv.mark.Invalid[c.Hash.String()], lv.mark.Older[c.Hash.String()]
	} else {
		kind, p, err := lv.s.judgeCommit(c, lv.boards)
		if err != nil {
			return err
		}
		problem, older = p, kind == commitOlder
	}
	if problem == "" && !older {
		why, _, err := lv.s.futureDated(c, lv.realNow)
		if err != nil {
			return err
		}
		if why != "" {
			reset, err := lv.s.resetAbove(lv.head, c.Hash, lv.realNow)
			if err != nil {
				return err
			}
			if !reset {
				problem = lease.ProblemFutureDated + ": " + why
			}
		}
	}
	switch {
	case problem != "":
		le.Integrity, le.Problem = IntegrityInvalid, problem
		le.Actor, le.Subject = "", ""
		le.PreviousHolder, le.NewOwner, le.TargetAgent = "", "", ""
	case older:
		le.Integrity = IntegrityOlder
	default:
		le.Integrity = IntegrityVerified
	}
	return nil
}

// resetAbove reports whether a clock-reset dated within the bound of
// realNow lies on head's first-parent history above commit c (which it
// then acknowledges, as verify --history does). Only a future-dated entry,
// which is rare, asks.
func (s *Store) resetAbove(head, c gitstore.Hash, realNow time.Time) (bool, error) {
	found := false
	err := s.repo.Log(head, func(m gitstore.CommitMeta) (bool, error) {
		if m.Hash == c {
			return false, nil
		}
		if why, reset, err := s.futureDated(m, realNow); err != nil {
			return false, err
		} else if reset && why == "" {
			found = true
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// markVerified records that the whole history up to head verified (verify
// --history found no problem), for later logs.
func (s *Store) markVerified(head gitstore.Hash, older map[string]bool) {
	s.saveVerifiedMark(&verifiedMark{UpTo: head.String(), Invalid: map[string]string{}, Older: older})
}
