package audit

// Signatures of state commits (contract section 7; the rule of who signs is
// lease.CommitSigner's, judged on the commit's parent). verify --history
// (and so the server hook) checks the signature of every state commit
// whose parent requires signatures: unsigned is signature_required, a key
// the rule does not accept or a signature that does not verify is
// signature_invalid.

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/signing"
)

// Problem kinds of a state commit's signature (verify --history's reason,
// and the contract code the server hook prints).
const (
	ProblemSignatureRequired = string(lease.CodeSignatureRequired)
	ProblemSignatureInvalid  = string(lease.CodeSignatureInvalid)
)

// checkSignature verifies the signature of state commit c against the rule
// of its parent (a *lease.HistoryError when it does not hold).
func (a *Auditor) checkSignature(c gitstore.CommitMeta, parent *gitstore.Snapshot, call lease.Call, o *lease.Outcome) error {
	rule, err := lease.CommitSigner(a.derived.View(parent), call, o)
	if err != nil || !rule.Required {
		return err
	}
	who := "a registered agent's key"
	if rule.Agent != "" {
		who = "agent " + rule.Agent + "'s registered key"
	}
	if a.git == nil {
		return historyProblem(ProblemSignatureRequired, "this repository keeps no signatures")
	}
	payload, sig, err := a.git.CommitSignature(c.Hash)
	if err != nil {
		return err
	}
	if sig == nil {
		if !rule.AnyKey && len(rule.Keys) == 0 {
			return historyProblem(ProblemSignatureRequired, "not signed, and nobody can sign it: %s", rule.Refusal)
		}
		return historyProblem(ProblemSignatureRequired, "the store requires signed state commits and this one is not signed (by %s)", who)
	}
	pub, err := gitstore.SSHSignatureKey(sig)
	if err != nil {
		return historyProblem(ProblemSignatureInvalid, "%v", strings.TrimPrefix(err.Error(), "gitstore: "))
	}
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	if !rule.Accepts(key) {
		want := strings.Join(signing.Fingerprints(rule.Keys), ", ")
		if want == "" {
			want = "none: " + rule.Refusal
		}
		return historyProblem(ProblemSignatureInvalid, "signed by %s %s, not by %s (%s)", pub.Type(), ssh.FingerprintSHA256(pub), who, want)
	}
	if err := gitstore.VerifySSH(payload, sig, pub); err != nil {
		if errors.Is(err, gitstore.ErrBadSignature) {
			return historyProblem(ProblemSignatureInvalid, "%s", strings.TrimPrefix(err.Error(), "gitstore: "))
		}
		return fmt.Errorf("verify signature of %s: %w", c.Hash, err)
	}
	return nil
}
