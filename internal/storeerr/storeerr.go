// Package storeerr turns the failures of the Git store into the contract's
// errors (their codes and exit classes), and reads back the refusals a
// loopx server hook gives a push: the line format both ends of a push share.
package storeerr

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// Map turns store errors into contract errors. Only a decision is exit
// 1: a refusal that the same request meets again (a missing repository, a
// remote that is not configured or refuses, a repository format loopx
// cannot handle). Everything else passes (exit 3: retry with the same
// arguments): a busy fence or ref lock, a lost compare-and-swap, an
// unreachable remote, and every failure to read or write the repository,
// classified (gitstore.ErrIO) or not: an error nobody classified is not a
// decision either, so it is store_io with its message, never
// invalid_request.
func Map(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := lease.AsError(err); ok {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "gitstore: ")
	var lockErr *gitstore.RefLockError
	switch {
	case errors.Is(err, gitstore.ErrNotRepository):
		return lease.Errorf(lease.CodeStoreNotInitialized, "not inside a Git repository: run `loopx init`")
	case errors.Is(err, gitstore.ErrNoRemote), errors.Is(err, gitstore.ErrInvalidRef):
		return lease.Errorf(lease.CodeInvalidRequest, "%s", msg)
	case errors.Is(err, gitstore.ErrUnsupportedRepository):
		return lease.Errorf(lease.CodeStoreFormatUnsupported, "%s: loopx needs a SHA-1 repository with the files ref backend", msg)
	case errors.Is(err, gitstore.ErrRemoteRejected):
		e := lease.Errorf(lease.CodeRemoteRejected, "%s", msg)
		if refused := ParseRefusals(err.Error()); len(refused) > 0 {
			// A loopx server hook said why: its first code is the reason.
			e.With("reason", refused[0].Code).With("refused", refused)
		}
		return e
	case errors.Is(err, gitstore.ErrRemoteUnavailable):
		return lease.Errorf(lease.CodeRemoteUnavailable, "%s: retry with the same arguments", msg)
	case errors.As(err, &lockErr):
		return lease.Errorf(lease.CodeStoreBusy, "%s", strings.TrimPrefix(lockErr.Error(), "gitstore: ")).
			With("path", lockErr.Path).With("age_seconds", int64(lockErr.Age.Seconds()))
	case errors.Is(err, gitstore.ErrServerLocked):
		return lease.Errorf(lease.CodeStoreBusy, "%s: retry with the same arguments", msg).With("remote", true)
	case errors.Is(err, gitstore.ErrBusy):
		return lease.Errorf(lease.CodeStoreBusy, "the store's writer fence is busy: retry with the same arguments")
	case errors.Is(err, gitstore.ErrConflict):
		return lease.Errorf(lease.CodeStoreConflict, "the state ref kept changing during the write: retry with the same arguments")
	case errors.Is(err, gitstore.ErrIO), gitstore.IsOSError(err):
		return lease.Errorf(lease.CodeStoreIO, "%s: retry with the same arguments once the cause is fixed", msg)
	}
	return lease.Errorf(lease.CodeStoreIO, "%s: retry with the same arguments", msg)
}

// Refusal is one commit a loopx server hook refused.
type Refusal struct {
	Revision string `json:"revision"`
	Ref      string `json:"ref"`
	// Code is the contract code: signature_required, signature_invalid,
	// clock_skew, or corrupt_record with the history Reason.
	Code    string `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

// refusalPrefix starts every line the hook prints for a refused commit.
const refusalPrefix = "loopx server-hook: refused "

// Line is the refusal as the hook prints it (one line).
func (r Refusal) Line() string {
	code := r.Code
	if r.Reason != "" && r.Reason != r.Code {
		code += " (" + r.Reason + ")"
	}
	return fmt.Sprintf("%s%s on %s: %s: %s", refusalPrefix, r.Revision, r.Ref, code, oneLine(r.Message, 400))
}

// oneLine folds a message onto one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " / ")), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// hookVerdict starts the hook's last line after its refusals, as the
// client sees it among the server's lines ("; "-joined): the error of the
// hook's own loopx in text mode.
const hookVerdict = "; loopx: "

// refusalLine matches a refusal line inside a client's remote_rejected
// message (the server's lines joined).
var refusalLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(refusalPrefix) + `([0-9a-f]{40}) on (\S+): ([a-z_]+)(?: \(([a-z_]+)\))?: `)
})

// ParseRefusals reads the refusals of a loopx server hook out of a
// remote_rejected message (nil when it holds none).
func ParseRefusals(msg string) []Refusal {
	var out []Refusal
	locs := refusalLine().FindAllStringSubmatchIndex(msg, -1)
	for i, m := range locs {
		end := len(msg)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		text := strings.TrimSuffix(msg[m[1]:end], ": "+gitstore.ErrRemoteRejected.Error())
		if k := strings.Index(text, hookVerdict); k >= 0 {
			// The hook's own last line ("loopx: CODE: push refused: ...")
			// follows the last refusal: it is no part of it.
			text = text[:k]
		} else if i+1 == len(locs) {
			// The parenthesis around the server's lines closes after the
			// last one.
			text = strings.TrimSuffix(strings.TrimSpace(text), ")")
		}
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))
		r := Refusal{Revision: msg[m[2]:m[3]], Ref: msg[m[4]:m[5]], Code: msg[m[6]:m[7]], Message: text}
		if m[8] >= 0 {
			r.Reason = msg[m[8]:m[9]]
		}
		out = append(out, r)
	}
	return out
}
