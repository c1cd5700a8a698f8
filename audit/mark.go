package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/derived"
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
// MarkCatchUp commits above it (the commits made since the last log: each
// judged once, oldest first, the boards from models brought up to date
// along the way, as verify --history does); a store without a mark gets one
// by a log of a history of at most MarkCatchUp commits, or by a verify
// --history that finds the whole history valid. Above a mark that is too
// far behind (or was left by a ref moved back), each entry shown is
// verified on its own: a --limit 20 log decides at most the commits it
// could show, never the whole history. The mark is derived data: a verdict
// is a function of the commit (its parent is named by its hash) and of
// this loopx's rules, so the mark names the loopx that wrote it and is
// dropped by another. It is derived data like the store's indexes
// (internal/derived: an Index in the same side-file codec), whose catch-up
// judges commits.
//
// What a real clock must judge (a commit dated beyond the skew bound ahead
// of this machine's clock) is judged at every log, never kept.

// verifiedMark is the verified-up-to mark: the verdicts on every commit
// of the first-parent history up to the revision it is tagged with.
type verifiedMark struct {
	// Rules names the rules the verdicts were reached by (this build's
	// format and operation table): a mark of other rules is not used.
	Rules string `json:"rules"`
	// Invalid maps each commit at or below the mark that does not verify
	// to "<problem>: <message>"; Older lists those made before the store
	// recorded requests.
	Invalid map[string]string `json:"invalid"`
	Older   map[string]bool   `json:"older"`
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

// marks is the verified-up-to mark as derived data: one value (no key),
// caught up by judging the commits above it, rebuilt by judging the whole
// history, either only within the auditor's MarkCatchUp commits.
type marks struct {
	a    *Auditor
	file derived.SideFile[*verifiedMark]
}

var _ derived.Index[*verifiedMark] = marks{}

func (a *Auditor) marks() marks {
	return marks{a: a, file: derived.NewSideFile(a.repo, "loopx-cache/verified", "verified", 1,
		func(m *verifiedMark) []byte { data, _ := json.Marshal(m); return data },
		func(data []byte) (*verifiedMark, error) {
			var m verifiedMark
			if err := json.Unmarshal(data, &m); err != nil {
				return nil, err
			}
			if m.Rules != markRules() {
				return nil, errOtherRules
			}
			return &m, nil
		})}
}

var (
	errOtherRules = errors.New("a mark of other rules")
	errFarBehind  = errors.New("the mark is too far behind the head, or not on its history")
)

// Load reads the mark and the revision it reaches.
func (mk marks) Load(string) (*verifiedMark, gitstore.Hash, bool) { return mk.file.Load() }

// Save keeps the mark at rev (a cache: best effort).
func (mk marks) Save(_ string, rev gitstore.Hash, m *verifiedMark) {
	m.Rules = markRules()
	mk.file.Save(rev, m)
}

// CatchUp judges the commits from rev (zero: the root) up to the target's
// head, oldest first, and adds their verdicts to m; errFarBehind when they
// are more than MarkCatchUp, or rev is not on the head's history.
func (mk marks) CatchUp(m *verifiedMark, rev gitstore.Hash, to derived.Target, _ string) (*verifiedMark, int, error) {
	a := mk.a
	// The commits above the mark, newest first (to the root without one).
	var gap []gitstore.Hash
	reached := false
	err := a.repo.Log(to.Rev, func(c gitstore.CommitMeta) (bool, error) {
		if !rev.IsZero() && c.Hash == rev {
			reached = true
			return false, nil
		}
		gap = append(gap, c.Hash)
		return len(gap) <= a.MarkCatchUp, nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(gap) > a.MarkCatchUp || (!rev.IsZero() && !reached) {
		return nil, 0, errFarBehind
	}
	if m.Invalid == nil {
		m.Invalid = map[string]string{}
	}
	if m.Older == nil {
		m.Older = map[string]bool{}
	}
	boards := &historyBoards{a: a, models: map[string]*historyModel{}}
	for i := len(gap) - 1; i >= 0; i-- {
		c, err := records.CommitMeta(a.repo, gap[i])
		if err != nil {
			return nil, 0, err
		}
		kind, problem, err := a.judgeCommit(c, boards)
		if err != nil {
			return nil, 0, err
		}
		switch {
		case problem != "":
			m.Invalid[c.Hash.String()] = problem
		case kind == commitOlder:
			m.Older[c.Hash.String()] = true
		}
	}
	return m, len(gap), nil
}

// Rebuild judges the whole history of the target's head.
func (mk marks) Rebuild(to derived.Target, _ string) (*verifiedMark, error) {
	m, _, err := mk.CatchUp(&verifiedMark{}, gitstore.ZeroHash, to, "")
	return m, err
}

// logVerifier judges the commits one log shows.
type logVerifier struct {
	a    *Auditor
	mark *verifiedMark // caught up to the head (nil: judge each commit)
	// boards renders the boards of individually judged board commits.
	boards  *historyBoards
	realNow time.Time
	head    gitstore.Hash
}

// newLogVerifier brings the mark up to head when it can (see the file
// comment) and returns the verifier of a log at head.
func (a *Auditor) newLogVerifier(head gitstore.Hash) (*logVerifier, error) {
	lv := &logVerifier{a: a, boards: &historyBoards{a: a, models: map[string]*historyModel{}}, realNow: a.s.SystemNow(), head: head}
	mk := a.marks()
	to := derived.Target{Rev: head}
	m, rev, ok := mk.Load("")
	var err error
	switch {
	case ok && rev == head:
	case ok:
		m, _, err = mk.CatchUp(m, rev, to, "")
	default:
		m, err = mk.Rebuild(to, "")
	}
	if errors.Is(err, errFarBehind) {
		return lv, nil // too far behind, or not on this history: judge each entry
	}
	if err != nil {
		return nil, err
	}
	if !ok || rev != head {
		mk.Save("", head, m)
	}
	lv.mark = m
	return lv, nil
}

// judgeCommit verifies one commit: its kind, or why it does not verify.
func (a *Auditor) judgeCommit(c gitstore.CommitMeta, boards *historyBoards) (commitKind, string, error) {
	a.judged++
	kind, err := a.verifyCommit(c, boards)
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
		kind, p, err := lv.a.judgeCommit(c, lv.boards)
		if err != nil {
			return err
		}
		problem, older = p, kind == commitOlder
	}
	if problem == "" && !older {
		why, _, err := lv.a.futureDated(c, lv.realNow)
		if err != nil {
			return err
		}
		if why != "" {
			reset, err := lv.a.resetAbove(lv.head, c.Hash, lv.realNow)
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
func (a *Auditor) resetAbove(head, c gitstore.Hash, realNow time.Time) (bool, error) {
	found := false
	err := a.repo.Log(head, func(m gitstore.CommitMeta) (bool, error) {
		if m.Hash == c {
			return false, nil
		}
		if why, reset, err := a.futureDated(m, realNow); err != nil {
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
func (a *Auditor) markVerified(head gitstore.Hash, older map[string]bool) {
	a.marks().Save("", head, &verifiedMark{Invalid: map[string]string{}, Older: older})
}
