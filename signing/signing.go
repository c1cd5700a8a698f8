// Package signing finds the SSH key that loopx signs commits with, the way
// git finds it for gpg.format=ssh, and turns it into an ssh.Signer:
//
//   - LOOPX_SIGNING_KEY: the path of a private key without a passphrase
//     (or of a public key, whose private half an ssh-agent holds);
//   - else git's user.signingKey: a literal public key ("key::ssh-ed25519
//     AAAA..." or, as git still accepts, "ssh-ed25519 AAAA..."), whose
//     private half an ssh-agent holds; or a path, to a private key without a
//     passphrase or to a public key (then an ssh-agent signs; a private key
//     with a passphrase is signed by the agent too when it holds it);
//   - else, when the caller knows which key it wants (the acting agent's
//     registered key), the ssh-agent's copy of that key.
//
// The ssh-agent is the one SSH_AUTH_SOCK names. A path starting with "~/"
// is taken from the home folder. Nothing here knows of loopx's agents or
// records: Config carries what the caller read from the environment and
// from git's configuration.
package signing

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

var (
	// ErrNoKey is returned by Resolve when no signing key is configured.
	ErrNoKey = errors.New("no signing key: set LOOPX_SIGNING_KEY to a private key file, or git config user.signingKey, or load the key into ssh-agent")
	// ErrKeyMismatch is returned (wrapped) by Resolve when the configured
	// key is not the one the caller wants.
	ErrKeyMismatch = errors.New("the signing key is not the wanted key")
	// ErrNotInAgent is returned (wrapped) when the ssh-agent does not hold
	// the key asked for, or no ssh-agent is reachable.
	ErrNotInAgent = errors.New("key not in ssh-agent")
)

// Config is where Resolve looks for a key.
type Config struct {
	// SigningKey is $LOOPX_SIGNING_KEY.
	SigningKey string
	// GitSigningKey is `git config user.signingKey`.
	GitSigningKey string
	// AuthSock is $SSH_AUTH_SOCK.
	AuthSock string
	// Home expands "~/" (default: os.UserHomeDir).
	Home string
	// Want, when set, is the public key the signer must have: Resolve
	// refuses any other (ErrKeyMismatch), and with no key configured asks
	// the ssh-agent for this one.
	Want ssh.PublicKey
}

// Key is a resolved signer. Close releases its ssh-agent connection, if any.
type Key struct {
	ssh.Signer
	// Source says where the key came from: "LOOPX_SIGNING_KEY",
	// "user.signingKey" or "ssh-agent", with " (ssh-agent)" appended when
	// the configured public key is signed with by the agent.
	Source string
	close  func() error
}

// Close releases the key's ssh-agent connection (a no-op for a key file).
func (k *Key) Close() error {
	if k == nil || k.close == nil {
		return nil
	}
	return k.close()
}

// Resolve finds the signing key (see the package comment).
func Resolve(c Config) (*Key, error) {
	var k *Key
	var err error
	switch {
	case strings.TrimSpace(c.SigningKey) != "":
		k, err = c.fromPath("LOOPX_SIGNING_KEY", strings.TrimSpace(c.SigningKey))
	case strings.TrimSpace(c.GitSigningKey) != "":
		v := strings.TrimSpace(c.GitSigningKey)
		if lit, ok := literalKey(v); ok {
			pub, perr := ParsePublicKey(lit)
			if perr != nil {
				return nil, fmt.Errorf("signing: git config user.signingKey: %w", perr)
			}
			k, err = c.fromAgent("user.signingKey (ssh-agent)", pub)
		} else {
			k, err = c.fromPath("user.signingKey", v)
		}
	case c.Want != nil && c.AuthSock != "":
		k, err = c.fromAgent("ssh-agent", c.Want)
	default:
		return nil, ErrNoKey
	}
	if err != nil {
		return nil, err
	}
	if c.Want != nil && !SameKey(k.PublicKey(), c.Want) {
		got := k.PublicKey()
		k.Close()
		return nil, fmt.Errorf("signing: %w: %s is %s %s, want %s %s", ErrKeyMismatch, k.Source,
			got.Type(), ssh.FingerprintSHA256(got), c.Want.Type(), ssh.FingerprintSHA256(c.Want))
	}
	return k, nil
}

// literalKey reports whether a user.signingKey value is a public key itself
// rather than a path, as git decides: "key::" followed by the key, or a
// value starting with "ssh-" (git's older literal form).
func literalKey(v string) (string, bool) {
	if rest, ok := strings.CutPrefix(v, "key::"); ok {
		return rest, true
	}
	if strings.HasPrefix(v, "ssh-") {
		return v, true
	}
	return "", false
}

// SameKey reports whether a and b are the same public key.
func SameKey(a, b ssh.PublicKey) bool {
	return a != nil && b != nil && a.Type() == b.Type() && string(a.Marshal()) == string(b.Marshal())
}

// ParsePublicKey parses one public key in authorized_keys format
// ("ssh-ed25519 AAAA... comment").
func ParsePublicKey(text string) (ssh.PublicKey, error) {
	pub, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(text)))
	if err != nil {
		return nil, fmt.Errorf("not an SSH public key in authorized_keys format: %v", err)
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return nil, errors.New("more than one public key")
	}
	return pub, nil
}

// Fingerprints names each parseable public key of keys (authorized_keys
// lines) as "<type> SHA256:<fingerprint>", as refusals and verdicts show
// them.
func Fingerprints(keys []string) []string {
	var out []string
	for _, k := range keys {
		if pub, err := ParsePublicKey(k); err == nil {
			out = append(out, pub.Type()+" "+ssh.FingerprintSHA256(pub))
		}
	}
	return out
}

// FromFile loads an unencrypted private key file (OpenSSH's format, or
// PEM PKCS#1, PKCS#8, SEC 1).
func FromFile(path string) (ssh.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	s, err := ssh.ParsePrivateKey(data)
	if err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, fmt.Errorf("signing: %s has a passphrase: load it into ssh-agent and name its public key instead", path)
		}
		return nil, fmt.Errorf("signing: %s: not a private key: %v", path, err)
	}
	return s, nil
}

// fromPath loads the key a path names: a private key without a passphrase
// signs itself; a public key (or a private key with a passphrase, through
// its public half) is signed with by the ssh-agent.
func (c Config) fromPath(source, path string) (*Key, error) {
	path = c.expand(path)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing: %s: %w", source, err)
	}
	if pub, perr := ParsePublicKey(string(data)); perr == nil {
		return c.fromAgent(source+" (ssh-agent)", pub)
	}
	s, err := ssh.ParsePrivateKey(data)
	if err == nil {
		return &Key{Signer: s, Source: source}, nil
	}
	var pm *ssh.PassphraseMissingError
	if !errors.As(err, &pm) {
		return nil, fmt.Errorf("signing: %s: %s is neither a private nor a public SSH key: %v", source, path, err)
	}
	pub := pm.PublicKey
	if pub == nil {
		if pdata, rerr := os.ReadFile(path + ".pub"); rerr == nil {
			pub, _ = ParsePublicKey(string(pdata))
		}
	}
	if pub == nil {
		return nil, fmt.Errorf("signing: %s: %s has a passphrase: load it into ssh-agent", source, path)
	}
	k, err := c.fromAgent(source+" (ssh-agent)", pub)
	if err != nil {
		return nil, fmt.Errorf("%w (%s has a passphrase: load it into ssh-agent)", err, path)
	}
	return k, nil
}

func (c Config) expand(path string) string {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path
	}
	home := c.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, rest)
}

// fromAgent asks the ssh-agent at c.AuthSock for the signer of pub.
func (c Config) fromAgent(source string, pub ssh.PublicKey) (*Key, error) {
	if c.AuthSock == "" {
		return nil, fmt.Errorf("signing: %s: %w: SSH_AUTH_SOCK is not set", source, ErrNotInAgent)
	}
	a, err := DialAgent(c.AuthSock)
	if err != nil {
		return nil, fmt.Errorf("signing: %s: %w", source, err)
	}
	s, err := a.Signer(pub)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("signing: %s: %w", source, err)
	}
	return &Key{Signer: s, Source: source, close: a.Close}, nil
}

// Agent is a connection to an ssh-agent.
type Agent struct {
	conn   net.Conn
	client agent.ExtendedAgent
}

// DialAgent connects to the ssh-agent listening on the socket sock.
func DialAgent(sock string) (*Agent, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach ssh-agent at %s: %v", ErrNotInAgent, sock, err)
	}
	return &Agent{conn: conn, client: agent.NewClient(conn)}, nil
}

// Signer returns the agent's signer for pub (ErrNotInAgent when the agent
// does not hold it).
func (a *Agent) Signer(pub ssh.PublicKey) (ssh.Signer, error) {
	signers, err := a.client.Signers()
	if err != nil {
		return nil, fmt.Errorf("%w: listing the agent's keys: %v", ErrNotInAgent, err)
	}
	for _, s := range signers {
		if SameKey(s.PublicKey(), pub) {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: the agent does not hold %s %s", ErrNotInAgent, pub.Type(), ssh.FingerprintSHA256(pub))
}

// Close closes the connection.
func (a *Agent) Close() error { return a.conn.Close() }
