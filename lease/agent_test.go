package lease

import (
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"math/big"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// authorizedKey returns the authorized_keys line of a public key.
func authorizedKey(t *testing.T, k any) string {
	t.Helper()
	pub, err := ssh.NewPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

func edKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return authorizedKey(t, pub)
}

func rsaKey(t *testing.T, bits int) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return authorizedKey(t, &k.PublicKey)
}

// skEd25519Key is a FIDO security-key ed25519 public key (wire format: type,
// key, application).
func skEd25519Key(t *testing.T) string {
	t.Helper()
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	wire := ssh.Marshal(struct {
		Name, Key, App string
	}{ssh.KeyAlgoSKED25519, string(pub), "ssh:"})
	k, err := ssh.ParsePublicKey(wire)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

func TestNormalizeSigningKey(t *testing.T) {
	ed := edKey(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	dsaKey := authorizedKey(t, &dsa.PublicKey{Parameters: dsa.Parameters{P: big.NewInt(23), Q: big.NewInt(11), G: big.NewInt(4)}, Y: big.NewInt(8)})
	// A certificate of an ed25519 key, signed by a CA key.
	caPub, caPriv, _ := ed25519.GenerateKey(rand.Reader)
	_ = caPub
	ca, _ := ssh.NewSignerFromKey(caPriv)
	certPub, _, _ := ed25519.GenerateKey(rand.Reader)
	cp, _ := ssh.NewPublicKey(certPub)
	cert := &ssh.Certificate{Key: cp, CertType: ssh.UserCert, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	certLine := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cert)))
	cases := []struct {
		name, in, want, err string
	}{
		{"ed25519", ed, ed, ""},
		{"comment dropped", ed + " agent-a@laptop", ed, ""},
		{"blanks and newline", "  " + ed + " c\n", ed, ""},
		{"authorized_keys options dropped", `no-pty,from="10.0.0.1" ` + ed + " c", ed, ""},
		{"leading comment line", "# my key\n" + ed + "\n", ed, ""},
		{"ecdsa p256", authorizedKey(t, &ec.PublicKey), authorizedKey(t, &ec.PublicKey), ""},
		{"ecdsa p384", authorizedKey(t, &ec384.PublicKey), authorizedKey(t, &ec384.PublicKey), ""},
		{"rsa 2048", rsaKey(t, 2048), "", ""},
		{"sk ed25519", skEd25519Key(t), "", ""},
		{"rsa 1024 too short", rsaKey(t, 1024), "", "at least 2048 bits"},
		{"dsa refused", dsaKey, "", "not"}, // x/crypto may not even parse it
		{"certificate refused", certLine, "", "is a certificate"},
		{"empty", " \n", "", "no key given"},
		{"garbage", "hello world", "", "not an SSH public key"},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n", "", "not an SSH public key"},
		{"broken base64", "ssh-ed25519 AAAA!!!", "", "not an SSH public key"},
		{"two keys", ed + "\n" + edKey(t) + "\n", "", "more than one key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NormalizeSigningKey(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want == "" {
				want = strings.TrimSpace(c.in)
			}
			if got != want {
				t.Fatalf("= %q, want %q", got, want)
			}
		})
	}
}

func TestRegisterAgentSigningKey(t *testing.T) {
	keyA, keyB := edKey(t), edKey(t)
	cases := []struct {
		name  string
		setup func(f *gdFix)
		req   RegisterRequest
		want  string // stored key
		code  Code
		msg   string
	}{
		{"no key", nil, RegisterRequest{Goal: "g", Agent: "agent-b"}, "", "", ""},
		{"key stored in normal form", nil, RegisterRequest{Goal: "g", Agent: "agent-b", SigningKey: keyB + " b@laptop\n"}, keyB, "", ""},
		{"bad key is invalid_request naming the field", nil, RegisterRequest{Goal: "g", Agent: "agent-b", SigningKey: "ssh-ed25519 nope"}, "", CodeInvalidRequest, "signing_key: "},
		{"rsa too short", nil, RegisterRequest{Goal: "g", Agent: "agent-b", SigningKey: rsaKey(t, 1024)}, "", CodeInvalidRequest, "signing_key: RSA keys need at least 2048 bits"},
		{"bad key checked before the goal", nil, RegisterRequest{Goal: "nope", Agent: "agent-b", SigningKey: "x"}, "", CodeInvalidRequest, "signing_key"},
		{"another agent's key", func(f *gdFix) {
			f.files[AgentPath("h", "agent-a")] = Encode(&Agent{ID: "agent-a", Role: RoleAgent, Status: AgentUnregistered, RegisteredAt: gdT0, UpdatedAt: gdT0, SigningKey: keyA})
		}, RegisterRequest{Goal: "g", Agent: "agent-b", SigningKey: keyA}, "", CodeInvalidRequest, "registered for agent agent-a (goal h)"},
		{"the agent's own key in another goal", func(f *gdFix) {
			f.files[AgentPath("h", "agent-b")] = Encode(&Agent{ID: "agent-b", Role: RoleAgent, Status: AgentRegistered, RegisteredAt: gdT0, UpdatedAt: gdT0, SigningKey: keyB})
		}, RegisterRequest{Goal: "g", Agent: "agent-b", SigningKey: keyB}, keyB, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newGD()
			f.goal("g", "agent-a")
			f.goal("h")
			if c.setup != nil {
				c.setup(f)
			}
			v := NewView(f.files, "rev", gdT0)
			out, err := RegisterAgent(v, c.req, gdT0)
			if c.code != "" {
				e, ok := AsError(err)
				if !ok || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
					t.Fatalf("err = %v, want %s %q", err, c.code, c.msg)
				}
				if e.Details["field"] != "signing_key" {
					t.Fatalf("details %v do not name the field", e.Details)
				}
				if len(v.Changes()) != 0 {
					t.Fatal("a refused registration wrote something")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := out.Data.(AgentData).Agent
			if a.SigningKey != c.want {
				t.Fatalf("stored key %q, want %q", a.SigningKey, c.want)
			}
			// The record round-trips through the strict codec.
			data, ok, err := v.ReadFile(AgentPath("g", "agent-b"))
			if err != nil || !ok {
				t.Fatal(err)
			}
			var back Agent
			if err := DecodeAt(AgentPath("g", "agent-b"), data, &back); err != nil || back.SigningKey != c.want {
				t.Fatalf("decoded %q, %v", back.SigningKey, err)
			}
		})
	}
}

// TestAgentRecordSigningKeyValidated: a hand-edited record with a bad key
// is corrupt, like any invalid record.
func TestAgentRecordSigningKeyValidated(t *testing.T) {
	good := edKey(t)
	for name, c := range map[string]struct {
		key string
		ok  bool
	}{
		"none":         {"", true},
		"normal form":  {good, true},
		"with comment": {good + " c", false},
		"garbage":      {"ssh-ed25519 AAAA", false},
		"short rsa":    {rsaKey(t, 1024), false},
	} {
		a := &Agent{ID: "agent-a", Role: RoleAgent, Status: AgentRegistered, RegisteredAt: gdT0, UpdatedAt: gdT0, SigningKey: c.key}
		if err := a.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", name, err, c.ok)
		}
	}
}
