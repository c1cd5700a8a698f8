package loopx

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/lease"
)

// benchKey writes an ed25519 private key (OpenSSH format) and returns its
// path and public key line.
func benchKey(b *testing.B, dir string) (string, string) {
	b.Helper()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(k, "bench")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "bench-key")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		b.Fatal(err)
	}
	sg, _ := ssh.NewSignerFromKey(k)
	return path, string(ssh.MarshalAuthorizedKey(sg.PublicKey()))
}

// bulkTodos adds n open todos to goal g in one commit (git fast-import):
// a store of n todos without n loopx commits.
func bulkTodos(b *testing.B, dir string, n int, at time.Time) {
	b.Helper()
	head := gitOutB(b, dir, "rev-parse", "refs/loopx/state")
	var in bytes.Buffer
	msg := "bulk todos (benchmark setup)\n"
	fmt.Fprintf(&in, "commit refs/loopx/state\ncommitter loopx <loopx@loopx.invalid> %d +0000\ndata %d\n%sfrom %s\n", at.Unix(), len(msg), msg, head)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("todo_bulk_%06d", i)
		rec := lease.Encode(&lease.Todo{ID: id, Text: "bulk " + id, Status: lease.TodoOpen, Priority: lease.DefaultPriority,
			CreatedBy: "agent-a", CreatedAt: at, UpdatedBy: "agent-a", UpdatedAt: at})
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", lease.TodoPath("g", id), len(rec), rec)
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--force")
	cmd.Dir = dir
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
}

func gitOutB(b *testing.B, dir string, args ...string) string {
	b.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		b.Fatalf("git %v: %v", args, err)
	}
	return string(bytes.TrimSpace(out))
}

// BenchmarkServerHook measures the server hook's cost per pushed commit
// (target: under 20 ms at 10,000 todos): a client in remote mode pushes
// each mutation to a bare server repository (no hook installed), and the
// check that the hook runs (ServerHookPreReceive on a freshly opened Store,
// as each hook process opens one) is timed on the update the push made.
// todo-add pushes a state and a board commit, renew a state commit; signed
// runs in a store that requires signatures.
func BenchmarkServerHook(b *testing.B) {
	todos := 10000
	if testing.Short() {
		todos = 1000
	}
	for _, signed := range []bool{false, true} {
		for _, op := range []string{"todo-add", "renew"} {
			b.Run(fmt.Sprintf("todos=%d/%s/signed=%v", todos, op, signed), func(b *testing.B) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				client := benchDir(b)
				keyPath, pub := benchKey(b, b.TempDir())
				opts := Options{Dir: client, Now: func() time.Time { return clock }, SigningKey: keyPath}
				if _, err := Init(opts, InitOptions{RequireSignatures: signed}); err != nil {
					b.Fatal(err)
				}
				s, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				for _, req := range []any{
					lease.GoalCreateRequest{Goal: "g"},
					lease.RegisterRequest{Goal: "g", Agent: "agent-a", SigningKey: pub},
				} {
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
				bulkTodos(b, client, todos, clock)
				server := filepath.Join(benchDir(b), "server.git")
				gitOutB(b, client, "init", "-q", "--bare", server)
				gitOutB(b, client, "remote", "add", "origin", server)
				gitOutB(b, client, "push", "-q", "origin", "refs/loopx/state")
				opts.Remote = "origin"
				if s, err = Open(opts); err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				apply := func(req any) {
					clock = clock.Add(time.Second)
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
				apply(lease.AcquireRequest{Goal: "g", Todo: "todo_bulk_000000", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 86400})
				version := int64(1)
				commits := 0
				hook := func() {
					sopts := Options{Dir: server, Now: func() time.Time { return clock }}
					old := gitstore.ParseHash(gitOutB(b, server, "rev-parse", "refs/loopx/state"))
					b.StopTimer()
					if op == "renew" {
						v := version
						apply(lease.RenewRequest{Goal: "g", Todo: "todo_bulk_000000", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &v, TTLSeconds: 86400})
						version++
					} else {
						apply(lease.AddRequest{Goal: "g", Actor: "agent-a", Text: fmt.Sprintf("added %d", commits)})
					}
					newHead := gitstore.ParseHash(gitOutB(b, server, "rev-parse", "refs/loopx/state"))
					b.StartTimer()
					srv, err := Open(sopts)
					if err != nil {
						b.Fatal(err)
					}
					res, err := srv.ServerHookPreReceive(ServerHookRequest{Updates: []ReceiveUpdate{{Old: old, New: newHead, Ref: DefaultRef}}})
					if err != nil {
						b.Fatalf("the hook refused an honest push: %v", err)
					}
					srv.Close()
					commits += res.Data.Checked
				}
				hook() // the server's first board render (its model cache is empty)
				commits = 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					hook()
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(commits), "ms/commit")
			})
		}
	}
}

// BenchmarkSigning measures what signing adds to a mutation: todo adds
// (state and board commits; only the state commit is signed) and renews,
// in a store that does not require signatures with no key, and in one
// that requires them with the agent's key in a file.
func BenchmarkSigning(b *testing.B) {
	for _, op := range []string{"todo-add", "renew"} {
		for _, signed := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/signed=%v", op, signed), func(b *testing.B) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				dir := benchDir(b)
				keyPath, pub := benchKey(b, b.TempDir())
				opts := Options{Dir: dir, Now: func() time.Time { return clock }}
				if signed {
					opts.SigningKey = keyPath
				} else {
					pub = ""
				}
				if _, err := Init(opts, InitOptions{RequireSignatures: signed}); err != nil {
					b.Fatal(err)
				}
				s, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				for _, req := range []any{
					lease.GoalCreateRequest{Goal: "g"},
					lease.RegisterRequest{Goal: "g", Agent: "agent-a", SigningKey: pub},
					lease.AddRequest{Goal: "g", Actor: "agent-a", Todo: "todo_bench", Text: "bench"},
					lease.AcquireRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 86400},
				} {
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
				version := int64(1)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					clock = clock.Add(time.Second)
					var req any = lease.AddRequest{Goal: "g", Actor: "agent-a", Todo: fmt.Sprintf("todo_add_%07d", i), Text: "added"}
					if op == "renew" {
						v := version
						req = lease.RenewRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "k", ExpectedVersion: &v, TTLSeconds: 86400}
						version++
					}
					if _, err := s.Apply(lease.CallOf(req)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSignCommit isolates what signing adds to one decision: the
// signer rule (lease.CommitSigner on the head) and an ed25519 signature of
// a commit object, the key resolved once per Store as in a mutation.
func BenchmarkSignCommit(b *testing.B) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := benchDir(b)
	keyPath, pub := benchKey(b, b.TempDir())
	opts := Options{Dir: dir, Now: func() time.Time { return clock }, SigningKey: keyPath}
	if _, err := Init(opts, InitOptions{RequireSignatures: true}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, req := range []any{
		lease.GoalCreateRequest{Goal: "g"},
		lease.RegisterRequest{Goal: "g", Agent: "agent-a", SigningKey: pub},
	} {
		if _, err := s.Apply(lease.CallOf(req)); err != nil {
			b.Fatal(err)
		}
	}
	head, _ := s.git.Head()
	sn, err := s.repo.Snapshot(head)
	if err != nil {
		b.Fatal(err)
	}
	call := lease.CallOf(lease.RenewRequest{Goal: "g", Todo: "todo_x", Owner: "agent-a", IdempotencyKey: "k", TTLSeconds: 60})
	out := &lease.Outcome{Operation: lease.OpLeaseRenew, Goal: "g", Todo: "todo_x", Actor: "agent-a"}
	payload := bytes.Repeat([]byte("tree 0123456789012345678901234567890123456789\n"), 14)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sign, err := s.commitSigner(sn, call, out)
		if err != nil || sign == nil {
			b.Fatalf("no signer: %v", err)
		}
		if _, err := sign(payload); err != nil {
			b.Fatal(err)
		}
	}
}
