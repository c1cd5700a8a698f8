package loopx

// Signed state commits (contract section 7; the rule of who signs is
// lease.CommitSigner's). A mutation signs its state commit the way git signs
// with gpg.format=ssh, with the key found as git finds it
// (signing.Resolve): $LOOPX_SIGNING_KEY (Options.SigningKey), else git's
// user.signingKey when gpg.format is ssh, else the ssh-agent's copy of the
// key the commit needs.
//
//   - In a store that requires signatures, a commit that no available key
//     may sign is refused with signature_required before anything is
//     written (the acting agent has no registered key, or no key that the
//     rule accepts is found).
//   - In any other store loopx signs when it can: when the acting agent has
//     a registered key that is found, or when LOOPX_SIGNING_KEY names a key
//     (and the agent has no other registered key). git's configuration and
//     the ssh-agent are consulted only when the agent has a registered key,
//     so a store without keys pays nothing. Failing to sign there is not
//     an error: nobody checks.
//   - Board commits are never signed (they are exact renderings; see
//     lease/signature.go).
//
// verify --history (and so the server hook) checks the signature of every
// state commit whose parent requires signatures (package audit).

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/storeerr"
	"github.com/loopx-dev/loopx/lease"
	"github.com/loopx-dev/loopx/signing"
)

// keyRing finds the keys a Store signs with (Options.SigningKey, git's
// configuration, the ssh-agent) and caches them, by the key wanted; the
// copies of a Store share it.
type keyRing struct {
	signingKey, authSock string          // Options.SigningKey, Options.SSHAuthSock
	git                  *gitstore.Store // git's configuration (nil: none)

	mu      sync.Mutex
	keys    map[string]*signing.Key
	errs    map[string]error
	gitRead bool
	gitKey  string // user.signingKey when gpg.format is ssh
}

func (r *keyRing) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		k.Close()
	}
	r.keys = nil
}

// signer returns the Sign function of a state commit that rule says who
// may sign (nil: unsigned), or signature_required when the store requires
// a signature that no available key can make.
func (r *keyRing) signer(rule lease.SignerRule) (func([]byte) ([]byte, error), error) {
	if !rule.Required && len(rule.Keys) == 0 && strings.TrimSpace(r.signingKey) == "" {
		return nil, nil
	}
	if rule.Required && !rule.AnyKey && len(rule.Keys) == 0 {
		return nil, signatureRequired(rule, rule.Refusal)
	}
	wants := rule.Keys
	if rule.AnyKey || len(wants) == 0 {
		wants = []string{""}
	}
	var last error
	for _, want := range wants {
		k, err := r.key(want)
		if err == nil {
			return gitstore.SSHSign(k), nil
		}
		last = err
	}
	if !rule.Required {
		return nil, nil
	}
	return nil, signatureRequired(rule, strings.TrimPrefix(last.Error(), "signing: "))
}

func signatureRequired(rule lease.SignerRule, why string) error {
	who := "a registered agent's key"
	if rule.Agent != "" {
		who = "agent " + rule.Agent + "'s registered key"
	}
	e := lease.Errorf(lease.CodeSignatureRequired, "this store requires signed state commits, signed by %s: %s", who, why)
	if rule.Agent != "" {
		e.With("agent_id", rule.Agent)
	}
	if fps := signing.Fingerprints(rule.Keys); len(fps) > 0 {
		e.With("signing_keys", fps)
	}
	return e
}

// key resolves (once per keyRing) the signer of want ("" for any
// configured key).
func (r *keyRing) key(want string) (*signing.Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.keys[want]; ok {
		return k, nil
	}
	if err, ok := r.errs[want]; ok {
		return nil, err
	}
	cfg := signing.Config{SigningKey: r.signingKey, AuthSock: r.authSock}
	if strings.TrimSpace(cfg.SigningKey) == "" {
		cfg.GitSigningKey = r.gitSigningKey()
	}
	if want != "" {
		pub, err := signing.ParsePublicKey(want)
		if err != nil {
			return nil, err
		}
		cfg.Want = pub
	}
	k, err := signing.Resolve(cfg)
	if r.keys == nil {
		r.keys, r.errs = map[string]*signing.Key{}, map[string]error{}
	}
	if err != nil {
		r.errs[want] = err
		return nil, err
	}
	r.keys[want] = k
	return k, nil
}

// SigningKey resolves the key this Store signs a state commit with when
// key want (authorized_keys format; "" for any configured key) may sign
// it, as a mutation resolves it ($LOOPX_SIGNING_KEY, else git's
// user.signingKey when gpg.format is ssh, else the ssh-agent's copy of
// want): the read of `loopx doctor`. The key is the Store's, closed with
// it; Key.Source says where it was found.
func (s *Store) SigningKey(want string) (*signing.Key, error) { return s.keys.key(want) }

// gitSigningKey is git's user.signingKey, read once, when gpg.format is
// ssh (git reads it as an SSH key only then).
func (r *keyRing) gitSigningKey() string {
	g := r.git
	if r.gitRead || g == nil {
		return r.gitKey
	}
	r.gitRead = true
	if f, err := g.ConfigValue("gpg.format"); err != nil || !strings.EqualFold(f, "ssh") {
		return ""
	}
	r.gitKey, _ = g.ConfigValue("user.signingkey")
	return r.gitKey
}

// CodeSigningEnv returns base (a command's environment) with the git
// configuration under which the command's commits are SSH-signed as `git
// commit -S` signs them, when the store requires signatures (contract
// section 9: commits into leased scopes are signed with the agent's
// registered key; `loopx run` gives it to the command it runs):
// gpg.format=ssh, commit.gpgSign=true and, when $LOOPX_SIGNING_KEY names
// the key, user.signingKey set to it (a private key file, or a public key
// the ssh-agent holds: git passes either to ssh-keygen -Y sign). Otherwise
// git's own user.signingKey stays in force. The settings are passed as
// GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n after any the
// environment already has, so they win over the configuration files and
// change nothing on disk. A store that does not require signatures leaves
// base as it is.
func (s *Store) CodeSigningEnv(base []string) ([]string, error) {
	head, err := s.git.Head()
	if err != nil || head.IsZero() {
		return base, storeerr.Map(err)
	}
	sn, err := s.git.Snapshot(head)
	if err != nil {
		return base, storeerr.Map(err)
	}
	m, err := s.viewOf(sn).Meta()
	if err != nil || m == nil || !m.RequireSignatures {
		return base, storeerr.Map(err)
	}
	set := [][2]string{{"gpg.format", "ssh"}, {"commit.gpgSign", "true"}}
	if k := strings.TrimSpace(s.opts.SigningKey); k != "" {
		set = append(set, [2]string{"user.signingKey", k})
	}
	n := 0
	out := make([]string, 0, len(base)+2*len(set)+1)
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
			continue
		}
		out = append(out, kv)
	}
	for i, kv := range set {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, kv[1]))
	}
	return append(out, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(set))), nil
}
