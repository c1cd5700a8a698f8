package gitstore

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitAlternates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"/a", []string{"/a"}},
		{"/a:/b", []string{"/a", "/b"}},
		{`"/a:b":/c`, []string{"/a:b", "/c"}},
		{`/a:"/b\"q"`, []string{"/a", `/b"q`}},
	} {
		if got := splitAlternates(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitAlternates(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// gitQ runs git with the object folders of a pre-receive hook's quarantine.
func gitQ(t *testing.T, dir, stdin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnvTest(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestQuarantineObjects: objects that exist only in the folders a
// pre-receive hook is given (GIT_OBJECT_DIRECTORY, with the repository's
// own folder in GIT_ALTERNATE_OBJECT_DIRECTORIES), loose or packed, are
// readable while those variables are set, and unreadable without them;
// writes never rely on them.
func TestQuarantineObjects(t *testing.T) {
	repo := newRepo(t)
	s := openT(t, repo, Options{})
	base := commitT(t, s, put("a.yaml", "a\n"))
	objects := filepath.Join(repo, ".git", "objects")
	// Outside the objects folder: go-git's fallback reader finds git's
	// own quarantine folders (objects/tmp_objdir-incoming-*) by name, and
	// this tests gitstore's reader.
	q := filepath.Join(t.TempDir(), "incoming")
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objects, "GIT_QUARANTINE_PATH=" + q}
	blob := gitQ(t, repo, "quarantined\n", env, "hash-object", "-w", "--stdin")
	tree := gitQ(t, repo, "100644 blob "+blob+"\tq.yaml\n", env, "mktree")
	commit := gitQ(t, repo, "", env, "commit-tree", tree, "-p", base.String(), "-m", "pushed")
	h := ParseHash(commit)

	// Without the variables the commit is not there.
	if _, err := s.Snapshot(h); err == nil {
		t.Fatal("read a quarantined commit without the hook's environment")
	}
	for _, packed := range []bool{false, true} {
		if packed {
			// As receive-pack keeps a big push: one pack in the quarantine.
			gitQ(t, repo, commit+"\n"+tree+"\n"+blob+"\n", env, "pack-objects", "-q", filepath.Join(q, "pack", "pack"))
			for _, o := range []string{commit, tree, blob} {
				if err := os.Remove(filepath.Join(q, o[:2], o[2:])); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		qs := openT(t, repo, Options{})
		sn, err := qs.Snapshot(h)
		if err != nil {
			t.Fatalf("packed=%v: %v", packed, err)
		}
		if got := readT(t, sn, "q.yaml"); got != "quarantined\n" {
			t.Fatalf("packed=%v: q.yaml = %q", packed, got)
		}
		if qs.odb.fallbackReads != 0 {
			t.Errorf("packed=%v: %d reads through go-git", packed, qs.odb.fallbackReads)
		}
		// A write of the same content lands in the repository itself.
		commitT(t, qs, put("copy.yaml", "quarantined\n"))
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			os.Unsetenv(k)
		}
		plain := openT(t, repo, Options{})
		if got := readT(t, snapT(t, plain), "copy.yaml"); got != "quarantined\n" {
			t.Fatalf("packed=%v: copy.yaml = %q", packed, got)
		}
	}
	fsckT(t, repo)
}
