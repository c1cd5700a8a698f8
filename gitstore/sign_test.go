package gitstore

import (
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
)

// testKey makes an SSH key pair in dir (ssh-keygen when it is on the PATH,
// else crypto/ed25519 for the ed25519 type) and returns the private key's
// path, the public key and a signer.
func testKey(t testing.TB, dir, name, typ string) (string, ssh.PublicKey, ssh.Signer) {
	t.Helper()
	priv := filepath.Join(dir, name)
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		args := []string{"-q", "-t", typ, "-N", "", "-C", name, "-f", priv}
		if typ == "rsa" {
			args = append(args, "-b", "2048")
		}
		if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	} else {
		if typ != "ed25519" {
			t.Skipf("ssh-keygen is not on the PATH (needed for %s keys)", typ)
		}
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		block, err := ssh.MarshalPrivateKey(k, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(priv, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		sg, _ := ssh.NewSignerFromKey(k)
		if err := os.WriteFile(priv+".pub", ssh.MarshalAuthorizedKey(sg.PublicKey()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(priv)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return priv, signer.PublicKey(), signer
}

// requireSSHKeygen skips a test that needs git to sign or verify SSH
// signatures, which git does by running ssh-keygen.
func requireSSHKeygen(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not on the PATH: git cannot sign or verify SSH signatures")
	}
}

// allowedSigners writes a gpg.ssh.allowedSignersFile naming pub for
// every identity.
func allowedSigners(t testing.TB, dir string, pubs ...ssh.PublicKey) string {
	t.Helper()
	var b strings.Builder
	for _, p := range pubs {
		fmt.Fprintf(&b, "* namespaces=\"git\" %s", ssh.MarshalAuthorizedKey(p))
	}
	f := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// verifyCommitGit runs `git verify-commit` with an allowed-signers file.
func verifyCommitGit(dir, allowed, rev string) (string, error) {
	cmd := exec.Command("git", "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "-v", rev)
	cmd.Dir = dir
	cmd.Env = gitEnvTest()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func signedCommitT(t testing.TB, s *Store, parent Hash, sign func([]byte) ([]byte, error), when time.Time) Hash {
	t.Helper()
	unlock, err := s.Lock(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	h, err := s.Commit(parent, []Change{put("goals/g/a.yaml", "a: 1\n")}, CommitInfo{
		Message: "signed by gitstore\n\nLoopx-Operation: test\n", AuthorName: "agent-a", AuthorEmail: "agent-a@loopx.invalid",
		When: when, Sign: sign,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSignedCommitVerifiesWithGit: a commit gitstore signs (ed25519, ecdsa
// and rsa keys) is accepted by `git verify-commit` with an allowed-signers
// file, and by VerifySSH on CommitSignature's payload; the gpgsig header
// sits right after the committer line; fsck is clean.
func TestSignedCommitVerifiesWithGit(t *testing.T) {
	t.Parallel()
	requireSSHKeygen(t)
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			dir := newRepo(t)
			_, pub, signer := testKey(t, t.TempDir(), "k", typ)
			s := openT(t, dir, Options{})
			h := signedCommitT(t, s, ZeroHash, SSHSign(signer), time.Unix(1767225600, 0).UTC())
			allowed := allowedSigners(t, t.TempDir(), pub)
			out, err := verifyCommitGit(dir, allowed, h.String())
			if err != nil {
				t.Fatalf("git verify-commit refused gitstore's signature: %v\n%s", err, out)
			}
			if !strings.Contains(out, `Good "git" signature`) {
				t.Fatalf("git verify-commit said: %s", out)
			}
			raw := runGitT(t, dir, "cat-file", "commit", h.String())
			lines := strings.Split(raw, "\n")
			if !strings.HasPrefix(lines[1], "author ") || !strings.HasPrefix(lines[2], "committer ") ||
				lines[3] != "gpgsig -----BEGIN SSH SIGNATURE-----" || !strings.HasPrefix(lines[4], " ") {
				t.Fatalf("unexpected commit layout:\n%s", raw)
			}
			payload, sig, err := s.CommitSignature(h)
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifySSH(payload, sig, pub); err != nil {
				t.Fatalf("VerifySSH: %v", err)
			}
			if bytes.Contains(payload, []byte("gpgsig")) || !bytes.HasPrefix(sig, []byte("-----BEGIN SSH SIGNATURE-----\n")) {
				t.Fatalf("payload/signature split wrong:\n%s\n--\n%s", payload, sig)
			}
			k, err := SSHSignatureKey(sig)
			if err != nil || ssh.FingerprintSHA256(k) != ssh.FingerprintSHA256(pub) {
				t.Fatalf("SSHSignatureKey = %v, %v", k, err)
			}
			// The signed commit reads like any other.
			sn, err := s.Snapshot(h)
			if err != nil || !sn.Time().Equal(time.Unix(1767225600, 0)) {
				t.Fatalf("snapshot of the signed commit: %v %v", sn.Time(), err)
			}
			if got := readT(t, sn, "goals/g/a.yaml"); got != "a: 1\n" {
				t.Fatalf("read %q", got)
			}
			fsckT(t, dir)
		})
	}
}

// TestGitSignedCommitVerifiesWithGitstore: a commit made by `git commit -S`
// with gpg.format=ssh verifies with VerifySSH on CommitSignature's payload;
// another key is ErrBadSignature; an unsigned commit has no signature and
// is ErrUnsigned.
func TestGitSignedCommitVerifiesWithGitstore(t *testing.T) {
	t.Parallel()
	requireSSHKeygen(t)
	dir := newRepo(t)
	kd := t.TempDir()
	priv, pub, _ := testKey(t, kd, "k", "ed25519")
	_, otherPub, _ := testKey(t, kd, "other", "ed25519")
	unsigned := runGitT(t, dir, "rev-parse", "HEAD")
	runGitT(t, dir, "-c", "gpg.format=ssh", "-c", "user.signingKey="+priv, "commit", "-q", "-S", "--allow-empty", "-m", "signed by git", "-m", "body")
	head := runGitT(t, dir, "rev-parse", "HEAD")
	s := openT(t, dir, Options{})

	payload, sig, err := s.CommitSignature(ParseHash(head))
	if err != nil {
		t.Fatal(err)
	}
	if sig == nil {
		t.Fatal("no signature found in git's signed commit")
	}
	if err := VerifySSH(payload, sig, pub); err != nil {
		t.Fatalf("VerifySSH of git's signature: %v", err)
	}
	// The payload is exactly what git says it signed.
	if want := runGitT(t, dir, "cat-file", "commit", head); !strings.Contains(want, "gpgsig") ||
		string(payload) != stripGpgsig(want)+"\n" {
		t.Fatalf("payload:\n%q\nwant git's commit without gpgsig:\n%q", payload, stripGpgsig(want)+"\n")
	}
	if err := VerifySSH(payload, sig, otherPub); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("another key: %v, want ErrBadSignature", err)
	}
	payload, sig, err = s.CommitSignature(ParseHash(unsigned))
	if err != nil || sig != nil {
		t.Fatalf("unsigned commit: sig %q, %v", sig, err)
	}
	if raw := runGitT(t, dir, "cat-file", "commit", unsigned); string(payload) != raw+"\n" {
		t.Fatalf("unsigned payload %q != the commit %q", payload, raw)
	}
	if err := VerifySSH(payload, sig, pub); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("unsigned: %v, want ErrUnsigned", err)
	}
}

// stripGpgsig removes the gpgsig header and its continuation lines.
func stripGpgsig(commit string) string {
	var out []string
	in := false
	for _, l := range strings.Split(commit, "\n") {
		switch {
		case strings.HasPrefix(l, "gpgsig "):
			in = true
		case in && strings.HasPrefix(l, " "):
		default:
			in = false
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSignedCommitIsGitsByteForByte: ed25519 signatures are deterministic,
// so gitstore's signed commit and the one `git commit-tree -S` makes of the
// same tree, parent, identities, times and message are the same object.
func TestSignedCommitIsGitsByteForByte(t *testing.T) {
	t.Parallel()
	requireSSHKeygen(t)
	dir := newRepo(t)
	priv, _, signer := testKey(t, t.TempDir(), "k", "ed25519")
	s := openT(t, dir, Options{})
	when := time.Unix(1767225600, 0).UTC()
	h := signedCommitT(t, s, ZeroHash, SSHSign(signer), when)
	tree := runGitT(t, dir, "rev-parse", h.String()+"^{tree}")
	cmd := exec.Command("git", "-c", "gpg.format=ssh", "-c", "user.signingKey="+priv,
		"commit-tree", "-S", "-m", "signed by gitstore\n\nLoopx-Operation: test", tree)
	cmd.Dir = dir
	date := "1767225600 +0000"
	cmd.Env = append(gitEnvTest(), "GIT_AUTHOR_NAME=agent-a", "GIT_AUTHOR_EMAIL=agent-a@loopx.invalid",
		"GIT_COMMITTER_NAME=agent-a", "GIT_COMMITTER_EMAIL=agent-a@loopx.invalid",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git commit-tree -S: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != h.String() {
		t.Fatalf("git made %s, gitstore %s:\n%s\n--\n%s", got, h, runGitT(t, dir, "cat-file", "commit", got), runGitT(t, dir, "cat-file", "commit", h.String()))
	}
}

// TestTamperedSignedCommitFails: changing any byte that the signature covers
// (the message, the tree) makes both git and VerifySSH refuse it.
func TestTamperedSignedCommitFails(t *testing.T) {
	t.Parallel()
	requireSSHKeygen(t)
	dir := newRepo(t)
	_, pub, signer := testKey(t, t.TempDir(), "k", "ed25519")
	s := openT(t, dir, Options{})
	h := signedCommitT(t, s, ZeroHash, SSHSign(signer), time.Unix(1767225600, 0).UTC())
	allowed := allowedSigners(t, t.TempDir(), pub)
	raw := runGitT(t, dir, "cat-file", "commit", h.String()) + "\n"
	emptyTree := "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	for name, forged := range map[string]string{
		"message": strings.Replace(raw, "signed by gitstore", "signed by someone else", 1),
		"tree":    strings.Replace(raw, "tree "+raw[5:45], "tree "+emptyTree, 1),
		"author":  strings.Replace(raw, "author agent-a", "author agent-b", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if forged == raw {
				t.Fatal("nothing tampered")
			}
			if name == "tree" {
				runGitT(t, dir, "hash-object", "-t", "tree", "-w", "/dev/null")
			}
			fh, err := tryGit(dir, forged, "hash-object", "-t", "commit", "-w", "--stdin")
			if err != nil {
				t.Fatal(err)
			}
			if out, err := verifyCommitGit(dir, allowed, fh); err == nil {
				t.Fatalf("git verify-commit accepted the forged commit:\n%s", out)
			}
			payload, sig, err := s.CommitSignature(ParseHash(fh))
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifySSH(payload, sig, pub); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("VerifySSH of the forged commit: %v, want ErrBadSignature", err)
			}
		})
	}
	// A mangled signature is a bad signature, not a crash.
	payload, sig, _ := s.CommitSignature(h)
	for _, bad := range [][]byte{[]byte("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"), []byte("junk"), bytes.Replace(sig, []byte("SSH SIGNATURE"), []byte("PGP SIGNATURE"), 2)} {
		if err := VerifySSH(payload, bad, pub); !errors.Is(err, ErrBadSignature) {
			t.Errorf("VerifySSH(%q) = %v, want ErrBadSignature", bad, err)
		}
	}
}

// TestSignFailureWritesNothing: a Sign function that fails fails the commit;
// the ref does not move.
func TestSignFailureWritesNothing(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	unlock, err := s.Lock(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	boom := errors.New("agent refused")
	_, err = s.Commit(ZeroHash, []Change{put("a", "1")}, CommitInfo{Message: "m", Sign: func([]byte) ([]byte, error) { return nil, boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Commit = %v, want the signer's error", err)
	}
	for _, bad := range []string{"", "\n", "sig\x00"} {
		_, err = s.Commit(ZeroHash, []Change{put("a", "1")}, CommitInfo{Message: "m", Sign: func([]byte) ([]byte, error) { return []byte(bad), nil }})
		if err == nil {
			t.Fatalf("Commit with signature %q succeeded", bad)
		}
	}
	if h, err := s.Head(); err != nil || !h.IsZero() {
		t.Fatalf("head = %s, %v; want no ref", h, err)
	}
}

func TestSplitSignature(t *testing.T) {
	t.Parallel()
	base := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor a <a> 1 +0000\ncommitter a <a> 1 +0000\n"
	cases := []struct {
		name, commit, payload, sig string
	}{
		{"unsigned", base + "\nmsg\n", base + "\nmsg\n", ""},
		{"signed", base + "gpgsig -----BEGIN X-----\n line\n \n -----END X-----\n\nmsg\n gpgsig y\n",
			base + "\nmsg\n gpgsig y\n", "-----BEGIN X-----\nline\n\n-----END X-----\n"},
		{"header after the signature", base + "gpgsig s1\n s2\nencoding UTF-8\n\nmsg\n",
			base + "encoding UTF-8\n\nmsg\n", "s1\ns2\n"},
		{"gpgsig-sha256 is another header", base + "gpgsig-sha256 x\n y\n\nmsg\n", base + "gpgsig-sha256 x\n y\n\nmsg\n", ""},
		{"no message", base + "gpgsig s\n", base, "s\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, s := splitSignature([]byte(c.commit))
			if string(p) != c.payload || string(s) != c.sig {
				t.Fatalf("= %q, %q; want %q, %q", p, s, c.payload, c.sig)
			}
			if c.sig != "" && c.name == "signed" {
				// insertSignature is its inverse.
				back, err := insertSignature(p, s)
				if err != nil || string(back) != c.commit {
					t.Fatalf("insertSignature = %q, %v; want %q", back, err, c.commit)
				}
			}
		})
	}
}

// BenchmarkSignedCommit measures what signing adds to building a commit
// (one changed file in a tree of 100 files; objects not written) and to a
// whole Commit (fsyncs included), with an ed25519 key in memory.
func BenchmarkSignedCommit(b *testing.B) {
	_, _, signer := testKey(b, b.TempDir(), "k", "ed25519")
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		var sign func([]byte) ([]byte, error)
		if signed {
			name, sign = "signed", SSHSign(signer)
		}
		b.Run("build/"+name, func(b *testing.B) {
			s := benchStore(b, 100, false)
			head, err := s.Head()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.mu.Lock()
				_, err := s.buildCommit(newPendingObjects(), head, []Change{put("items/00001.yaml", fmt.Sprintf("n: %d\n", i))},
					CommitInfo{Message: "bench", When: time.Unix(1767225600, 0), Sign: sign})
				s.mu.Unlock()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("commit/"+name, func(b *testing.B) {
			s := benchStore(b, 100, false)
			unlock, err := s.Lock(b.Context(), true)
			if err != nil {
				b.Fatal(err)
			}
			defer unlock()
			head, err := s.Head()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				head, err = s.Commit(head, []Change{put("items/00001.yaml", fmt.Sprintf("n: %d\n", i))},
					CommitInfo{Message: "bench", Sign: sign})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
