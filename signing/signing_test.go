package signing

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx/gitstore"
)

// newKey writes an ed25519 key pair (OpenSSH format) at dir/name and
// dir/name.pub; passphrase "" leaves it unencrypted.
func newKey(t *testing.T, dir, name, passphrase string) (string, ssh.PublicKey) {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(k, name)
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(k, name, []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := ssh.NewSignerFromKey(k)
	if err := os.WriteFile(p+".pub", ssh.MarshalAuthorizedKey(s.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, s.PublicKey()
}

func authorized(pub ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

// startAgent runs a real ssh-agent on a socket of its own (skipping the test
// when ssh-agent or ssh-add is missing), adds the given private keys, and
// stops it at the end of the test.
func startAgent(t *testing.T, keys ...string) string {
	t.Helper()
	for _, bin := range []string{"ssh-agent", "ssh-add"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not on the PATH", bin)
		}
	}
	dir, err := os.MkdirTemp("", "loopx-agent-") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	go func() { // drain what it prints
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not create its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add %s: %v: %s", k, err, out)
		}
	}
	return sock
}

// signsAs checks that k signs like pub.
func signsAs(t *testing.T, k *Key, pub ssh.PublicKey) {
	t.Helper()
	payload := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nmsg\n")
	sig, err := gitstore.SSHSign(k)(payload)
	if err != nil {
		t.Fatalf("sign with %s: %v", k.Source, err)
	}
	if err := gitstore.VerifySSH(payload, sig, pub); err != nil {
		t.Fatalf("signature by %s does not verify: %v", k.Source, err)
	}
}

func TestResolveKeyFiles(t *testing.T) {
	dir := t.TempDir()
	priv, pub := newKey(t, dir, "id_a", "")
	locked, _ := newKey(t, dir, "id_locked", "secret")
	if err := os.WriteFile(filepath.Join(dir, "junk"), []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		c      Config
		source string
		err    string
	}{
		{"LOOPX_SIGNING_KEY private key", Config{SigningKey: priv}, "LOOPX_SIGNING_KEY", ""},
		{"LOOPX_SIGNING_KEY beats user.signingKey", Config{SigningKey: priv, GitSigningKey: "/nonexistent"}, "LOOPX_SIGNING_KEY", ""},
		{"user.signingKey path", Config{GitSigningKey: priv}, "user.signingKey", ""},
		{"user.signingKey ~/ path", Config{GitSigningKey: "~/id_a", Home: dir}, "user.signingKey", ""},
		{"wanted key matches", Config{SigningKey: priv, Want: pub}, "LOOPX_SIGNING_KEY", ""},
		{"nothing configured", Config{}, "", "no signing key"},
		{"a wanted key but no agent", Config{Want: pub}, "", "no signing key"},
		{"missing file", Config{SigningKey: filepath.Join(dir, "nope")}, "", "no such file"},
		{"not a key", Config{SigningKey: filepath.Join(dir, "junk")}, "", "neither a private nor a public SSH key"},
		{"passphrase, no agent", Config{SigningKey: locked}, "", "SSH_AUTH_SOCK is not set"},
		{"public key, no agent", Config{GitSigningKey: priv + ".pub"}, "", "SSH_AUTH_SOCK is not set"},
		{"literal key, no agent", Config{GitSigningKey: "key::" + authorized(pub)}, "", "SSH_AUTH_SOCK is not set"},
		{"bad literal key", Config{GitSigningKey: "key::ssh-ed25519 AAAnope"}, "", "not an SSH public key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := Resolve(c.c)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			if k.Source != c.source {
				t.Fatalf("source %q, want %q", k.Source, c.source)
			}
			signsAs(t, k, pub)
		})
	}
	// A configured key that is not the wanted one is refused.
	_, other := newKey(t, dir, "id_b", "")
	if _, err := Resolve(Config{SigningKey: priv, Want: other}); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("mismatch: %v, want ErrKeyMismatch", err)
	}
	if _, err := Resolve(Config{}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v, want ErrNoKey", err)
	}
}

// TestResolveThroughSSHAgent: with a real ssh-agent holding the private
// keys, a literal public key, a public key file, a passphrase-protected key
// file and a wanted key all sign through the agent; a key it lacks is
// ErrNotInAgent. The signatures verify, and a commit signed through the
// agent by gitstore passes `git verify-commit`.
func TestResolveThroughSSHAgent(t *testing.T) {
	dir := t.TempDir()
	priv, pub := newKey(t, dir, "id_a", "")
	locked, lockedPub := newKey(t, dir, "id_locked", "secret")
	_, absent := newKey(t, dir, "id_absent", "")
	// ssh-add cannot read a key with a passphrase without a prompt: add
	// an unencrypted copy of it.
	lockedPlain, err := os.ReadFile(locked)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ssh.ParseRawPrivateKeyWithPassphrase(lockedPlain, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := ssh.MarshalPrivateKey(raw, "copy")
	copyPath := filepath.Join(dir, "id_locked_copy")
	if err := os.WriteFile(copyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := startAgent(t, priv, copyPath)

	cases := []struct {
		name   string
		c      Config
		pub    ssh.PublicKey
		source string
	}{
		{"literal key::", Config{GitSigningKey: "key::" + authorized(pub)}, pub, "user.signingKey (ssh-agent)"},
		{"literal ssh-", Config{GitSigningKey: authorized(pub) + " comment"}, pub, "user.signingKey (ssh-agent)"},
		{"public key file", Config{GitSigningKey: priv + ".pub"}, pub, "user.signingKey (ssh-agent)"},
		{"LOOPX_SIGNING_KEY public key file", Config{SigningKey: priv + ".pub"}, pub, "LOOPX_SIGNING_KEY (ssh-agent)"},
		{"passphrase-protected file", Config{GitSigningKey: locked}, lockedPub, "user.signingKey (ssh-agent)"},
		{"wanted key, nothing configured", Config{Want: lockedPub}, lockedPub, "ssh-agent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.c.AuthSock = sock
			k, err := Resolve(c.c)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			if k.Source != c.source {
				t.Fatalf("source %q, want %q", k.Source, c.source)
			}
			signsAs(t, k, c.pub)
		})
	}
	for name, c := range map[string]Config{
		"literal key": {GitSigningKey: "key::" + authorized(absent)},
		"wanted key":  {Want: absent},
		"dead socket": {GitSigningKey: "key::" + authorized(pub), AuthSock: filepath.Join(dir, "no-socket")},
	} {
		if c.AuthSock == "" {
			c.AuthSock = sock
		}
		if _, err := Resolve(c); !errors.Is(err, ErrNotInAgent) {
			t.Errorf("%s: %v, want ErrNotInAgent", name, err)
		}
	}

	// A commit signed through the agent is accepted by git verify-commit.
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	k, err := Resolve(Config{GitSigningKey: "key::" + authorized(pub), AuthSock: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	s, err := gitstore.Open(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unlock, err := s.Lock(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Commit(gitstore.ZeroHash, []gitstore.Change{{Path: "a", Data: []byte("1\n")}},
		gitstore.CommitInfo{Message: "through the agent", Sign: gitstore.SSHSign(k)})
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(dir, "allowed")
	if err := os.WriteFile(allowed, []byte(fmt.Sprintf("* %s\n", authorized(pub))), 0o644); err != nil {
		t.Fatal(err)
	}
	out := git("-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "-v", h.String())
	if !bytes.Contains([]byte(out), []byte(`Good "git" signature`)) {
		t.Fatalf("git verify-commit: %s", out)
	}
}
