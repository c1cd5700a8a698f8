package gitstore

// Signed commits, the way git makes them with gpg.format=ssh: `git commit
// -S` runs `ssh-keygen -Y sign -n git` (an SSH signature, namespace "git",
// hash sha512) over the commit object as it would be without a signature,
// and inserts the armored signature as a "gpgsig" header at the end of the
// header lines (after "committer"), each line after the first prefixed by a
// space. The signature format itself is github.com/hiddeco/sshsig's; this
// file only places it in commits and takes it out again, so that
// `git verify-commit` accepts what gitstore signs, and gitstore verifies
// what git signs.
//
// gitstore knows nothing of who may sign: VerifySSH checks a signature
// against the one public key its caller allows.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// SSHSignatureNamespace is the namespace git signs commits in.
const SSHSignatureNamespace = "git"

// SSHSignatureHash is the hash `ssh-keygen -Y sign` (and so git) uses.
const SSHSignatureHash = sshsig.HashSHA512

// signatureHeader is the commit header holding the signature (SHA-1
// repositories; gitstore supports no other).
const signatureHeader = "gpgsig"

var (
	// ErrUnsigned is returned (wrapped) by VerifySSH for a missing
	// signature.
	ErrUnsigned = errors.New("not signed")
	// ErrBadSignature is returned (wrapped, with the reason) by VerifySSH
	// for a signature that is malformed, by another key, in another
	// namespace, or not of the payload.
	ErrBadSignature = errors.New("bad signature")
)

// SSHSign returns a CommitInfo.Sign function that signs with signer as
// `git commit -S` does with gpg.format=ssh (namespace "git", sha512), and
// armors the signature as ssh-keygen does.
func SSHSign(signer ssh.Signer) func(payload []byte) ([]byte, error) {
	return func(payload []byte) ([]byte, error) {
		sig, err := sshsig.Sign(bytes.NewReader(payload), signer, SSHSignatureHash, SSHSignatureNamespace)
		if err != nil {
			return nil, err
		}
		return armorSSH(sig), nil
	}
}

// armorSSH armors a signature exactly as ssh-keygen does: base64 in lines
// of 70 characters between the BEGIN and END lines (sshsig.Armor uses PEM's
// 64, which git and ssh-keygen accept too, but then a commit that gitstore
// signs would not be byte for byte the one git makes).
func armorSSH(sig *sshsig.Signature) []byte {
	enc := base64.StdEncoding.EncodeToString(sig.Marshal())
	var b bytes.Buffer
	b.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70])
		b.WriteByte('\n')
		enc = enc[70:]
	}
	b.WriteString(enc)
	b.WriteString("\n-----END SSH SIGNATURE-----\n")
	return b.Bytes()
}

// VerifySSH checks that signature (armored, as in a gpgsig header) is an SSH
// signature of payload in namespace "git" made by allowed. A nil or empty
// signature is ErrUnsigned; anything else wrong is ErrBadSignature.
func VerifySSH(payload, signature []byte, allowed ssh.PublicKey) error {
	if len(bytes.TrimSpace(signature)) == 0 {
		return fmt.Errorf("gitstore: %w", ErrUnsigned)
	}
	if allowed == nil {
		return fmt.Errorf("gitstore: %w: no key to verify with", ErrBadSignature)
	}
	sig, err := sshsig.Unarmor(signature)
	if err != nil {
		return fmt.Errorf("gitstore: %w: not an SSH signature: %v", ErrBadSignature, err)
	}
	if sig.Namespace != SSHSignatureNamespace {
		return fmt.Errorf("gitstore: %w: namespace %q, want %q", ErrBadSignature, sig.Namespace, SSHSignatureNamespace)
	}
	if err := sig.HashAlgorithm.Supported(); err != nil {
		return fmt.Errorf("gitstore: %w: %v", ErrBadSignature, err)
	}
	if ssh.FingerprintSHA256(sig.PublicKey) != ssh.FingerprintSHA256(allowed) {
		return fmt.Errorf("gitstore: %w: signed by %s %s, want %s %s", ErrBadSignature,
			sig.PublicKey.Type(), ssh.FingerprintSHA256(sig.PublicKey), allowed.Type(), ssh.FingerprintSHA256(allowed))
	}
	if err := sshsig.Verify(bytes.NewReader(payload), sig, allowed, sig.HashAlgorithm, SSHSignatureNamespace); err != nil {
		return fmt.Errorf("gitstore: %w: %v", ErrBadSignature, err)
	}
	return nil
}

// SSHSignatureKey returns the public key an armored SSH signature says it
// was made with, without verifying anything: it tells a caller which
// allowed key to look up.
func SSHSignatureKey(signature []byte) (ssh.PublicKey, error) {
	sig, err := sshsig.Unarmor(signature)
	if err != nil {
		return nil, fmt.Errorf("gitstore: %w: not an SSH signature: %v", ErrBadSignature, err)
	}
	return sig.PublicKey, nil
}

// CommitSignature returns what commit h's signature covers (the commit
// object without its gpgsig header) and the armored signature, nil when the
// commit is unsigned (payload is then the whole commit).
func (s *Store) CommitSignature(h Hash) (payload, signature []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errClosed
	}
	typ, data, err := s.odb.read(h)
	if err != nil {
		return nil, nil, err
	}
	if typ != plumbing.CommitObject {
		return nil, nil, fmt.Errorf("gitstore: object %s is a %s, not a commit", h, typ)
	}
	payload, signature = splitSignature(data)
	return payload, signature, nil
}

// insertSignature returns commit (an object without a signature) with
// armored as its gpgsig header, placed as git places it: at the end of the
// header lines.
func insertSignature(commit, armored []byte) ([]byte, error) {
	sig := strings.TrimSuffix(string(armored), "\n")
	if strings.TrimSpace(sig) == "" || strings.ContainsAny(sig, "\x00\r") {
		return nil, errors.New("gitstore: sign commit: empty or malformed signature")
	}
	end := bytes.Index(commit, []byte("\n\n"))
	if end < 0 {
		end = len(commit) - 1
	}
	var b bytes.Buffer
	b.Grow(len(commit) + len(sig) + 16)
	b.Write(commit[:end+1])
	b.WriteString(signatureHeader + " " + strings.ReplaceAll(sig, "\n", "\n ") + "\n")
	b.Write(commit[end+1:])
	return b.Bytes(), nil
}

// splitSignature takes the gpgsig header (and its continuation lines) out
// of a commit object, as git's parse_signed_commit does: payload is every
// other byte, signature the header's value with the continuation spaces
// removed (nil when there is none).
func splitSignature(data []byte) (payload, signature []byte) {
	var p, sig bytes.Buffer
	inSig := false
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		line := data
		if nl >= 0 {
			line = data[:nl+1]
		}
		data = data[len(line):]
		if len(bytes.TrimRight(line, "\n")) == 0 {
			// The end of the headers: the message follows untouched.
			p.Write(line)
			p.Write(data)
			break
		}
		if rest, ok := bytes.CutPrefix(line, []byte(signatureHeader+" ")); ok {
			sig.Write(rest)
			inSig = true
			continue
		}
		if inSig && line[0] == ' ' {
			sig.Write(line[1:])
			continue
		}
		inSig = false
		p.Write(line)
	}
	if sig.Len() == 0 {
		return p.Bytes(), nil
	}
	return p.Bytes(), sig.Bytes()
}
