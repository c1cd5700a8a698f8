package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// bigFiles is MemFiles with content hashes (HashedFiles, PathHasher) whose
// records named in big are refused for their size before being read, as
// gitstore's reader does: Read and Walk with Oversize(path), ReadHash
// (which knows no path) with an *OversizeError.
type bigFiles struct {
	MemFiles
	big map[string]bool
}

func hashOf(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func (f bigFiles) Read(p string) ([]byte, bool, error) {
	if f.big[p] {
		return nil, false, Oversize(p, 300<<20)
	}
	return f.MemFiles.Read(p)
}

func (f bigFiles) Walk(dir string, fn func(string, []byte) error) error {
	return f.MemFiles.Walk(dir, func(p string, data []byte) error {
		if f.big[p] {
			return Oversize(p, 300<<20)
		}
		return fn(p, data)
	})
}

func (f bigFiles) WalkHashes(dir string, fn func(path, hash string) error) error {
	return f.MemFiles.Walk(dir, func(p string, data []byte) error { return fn(p, hashOf(data)) })
}

func (f bigFiles) ReadHash(hash string) ([]byte, error) {
	for p, data := range f.MemFiles {
		if hashOf(data) == hash {
			if f.big[p] {
				return nil, Oversize("", 300<<20)
			}
			return data, nil
		}
	}
	return nil, errors.New("no such blob")
}

func (f bigFiles) HashOf(p string) (string, bool, error) {
	data, ok := f.MemFiles[p]
	if !ok {
		return "", false, nil
	}
	return hashOf(data), true, nil
}

// TestOversizeRecordNamed: a record the files refuse for its size is
// corrupt_record naming its path and its size, whichever way it is read
// (by path, in a scan by content hash, through the record cache), and
// verify reports it among the other problems instead of stopping.
func TestOversizeRecordNamed(t *testing.T) {
	f := newTC(t, HandoffSoftClaim, "todo_small", "todo_big")
	f.putLease("todo_big", "a", "k", 1, 1, tcMin(10))
	bigTodo, bigLease := TodoPath(tcGoal, "todo_big"), LeasePath(tcGoal, "todo_big")
	check := func(what string, err error, path string) {
		t.Helper()
		e, ok := AsError(err)
		if !ok || e.Code != CodeCorruptRecord || e.Details["path"] != path ||
			!strings.Contains(e.Message, "record is 314572800 bytes, over the 1048576-byte (1 MiB) limit") {
			t.Fatalf("%s: %v, want corrupt_record naming %s", what, err, path)
		}
	}
	for _, cached := range []bool{false, true} {
		files := bigFiles{MemFiles: f.files, big: map[string]bool{bigTodo: true, bigLease: true}}
		v := NewView(files, "rev", tcT0)
		if cached {
			v.UseCache(NewRecordCache(nil))
		}
		_, err := v.Todo(tcGoal, "todo_big")
		check("todo read by path", err, bigTodo)
		_, err = v.Todos(tcGoal)
		check("todo scan", err, bigTodo)
		_, err = v.Lease(tcGoal, "todo_big")
		check("lease read", err, bigLease)
		_, err = ListTodos(v, tcGoal, "", "", tcMin(1))
		check("todo list", err, bigTodo)
		problems, err := Verify(v)
		if err != nil {
			t.Fatalf("verify stopped: %v", err)
		}
		found := map[string]bool{}
		for _, p := range problems {
			if p.Code == CodeCorruptRecord && strings.Contains(p.Message, "over the 1048576-byte") {
				found[p.Path] = true
			}
		}
		if !found[bigTodo] || !found[bigLease] {
			t.Fatalf("verify (cached %v) did not report both records: %+v", cached, problems)
		}
		if _, err := v.Todo(tcGoal, "todo_small"); err != nil {
			t.Fatalf("the small todo: %v", err)
		}
	}
}
