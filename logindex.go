package loopx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/records"
	"github.com/loopx-dev/loopx/lease"
)

// The per-todo index of the audit trail, beside the store.
//
// `loopx log --todo-id T --limit N` walks first-parent history until it has
// N entries of T: on a long history, thousands of commits of other todos.
// The index keeps, per todo, the names of its latest state commits (its
// Loopx-Todo trailer; up to logIndexKeep, newest first), in 256 side files
// <common dir>/loopx-cache/log-<bb> (bb: the first byte of the todo's
// SHA-256), each tagged with the head it reflects and checksummed. A query
// reads one file, brings it up to date by walking from the head down to
// its tag (a tag that is not on the head's history, say after the ref was
// moved back, makes the walk go to the root: a rebuild), then reads only
// the commits the index names, each parsed and filtered as the walk would
// have; if those are not enough and the index dropped older ones, the walk
// goes on from the oldest. The answer is the walk's (TestLogIndexMatchesWalk);
// a query with --since walks, as before.

// logIndexKeep is how many commits per todo the index names: a log's
// default limit is DefaultLogLimit (50). (A variable for tests.)
var logIndexKeep = 64

// logIndexName is the side file of the index bucket of todo.
func logIndexName(todo string) string {
	sum := sha256.Sum256([]byte(todo))
	return "loopx-cache/log-" + hex.EncodeToString(sum[:1])
}

// logIndex is one bucket: per todo, its commits newest first, as of head.
type logIndex struct {
	head  gitstore.Hash
	todos map[string][]gitstore.Hash
}

// loadLogIndex reads a bucket (nil when missing or damaged).
func (s *Store) loadLogIndex(name string) *logIndex {
	data, err := s.repo.ReadSideFile(name)
	if err != nil || len(data) < 41+65 { // the head line and the checksum
		return nil
	}
	body, sum := data[:len(data)-65], data[len(data)-65:]
	want := sha256.Sum256(body)
	if sum[0] != '#' || string(sum[1:]) != hex.EncodeToString(want[:]) {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	ix := &logIndex{head: gitstore.ParseHash(lines[0]), todos: map[string][]gitstore.Hash{}}
	if ix.head.IsZero() {
		return nil
	}
	for _, line := range lines[1:] {
		todo, list, ok := strings.Cut(line, "\t")
		if !ok || !lease.ValidTodoID(todo) {
			return nil
		}
		var hs []gitstore.Hash
		for _, h := range strings.Split(list, ",") {
			if hh := gitstore.ParseHash(h); !hh.IsZero() {
				hs = append(hs, hh)
			} else {
				return nil
			}
		}
		ix.todos[todo] = hs
	}
	return ix
}

// saveLogIndex writes a bucket (best effort: a cache).
func (s *Store) saveLogIndex(name string, ix *logIndex) {
	var b bytes.Buffer
	b.WriteString(ix.head.String())
	b.WriteByte('\n')
	for todo, hs := range ix.todos {
		b.WriteString(todo)
		b.WriteByte('\t')
		for i, h := range hs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(h.String())
		}
		b.WriteByte('\n')
	}
	sum := sha256.Sum256(b.Bytes())
	b.WriteByte('#')
	b.WriteString(hex.EncodeToString(sum[:]))
	_ = s.repo.WriteSideFile(name, b.Bytes(), false)
}

// logIndexAt returns the bucket of todo brought up to head, saving it when
// it moved.
func (s *Store) logIndexAt(head gitstore.Hash, todo string) (*logIndex, error) {
	name := logIndexName(todo)
	old := s.loadLogIndex(name)
	if old != nil && old.head == head {
		return old, nil
	}
	// Walk from the head down to the tag, collecting the commits of this
	// bucket's todos, newest first.
	fresh := map[string][]gitstore.Hash{}
	reached := false
	err := s.repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if old != nil && c.Hash == old.head {
			reached = true
			return false, nil
		}
		if e, _ := lease.ParseMessage(c.Message); e.Todo != "" && logIndexName(e.Todo) == name {
			if len(fresh[e.Todo]) < logIndexKeep {
				fresh[e.Todo] = append(fresh[e.Todo], c.Hash)
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	ix := &logIndex{head: head, todos: fresh}
	if reached {
		for t, hs := range old.todos {
			n := min(len(hs), logIndexKeep-len(fresh[t]))
			if n > 0 {
				ix.todos[t] = append(ix.todos[t], hs[:n]...)
			}
		}
	}
	s.saveLogIndex(name, ix)
	return ix, nil
}

// indexedLog answers q (a todo, no --since) from the index: the entries
// the walk from head would give. ok is false when the index cannot serve
// the query.
func (s *Store) indexedLog(head gitstore.Hash, q LogQuery, lv *logVerifier) (entries []LogEntry, ok bool, err error) {
	if q.Todo == "" || !q.Since.IsZero() || q.Limit > logIndexKeep || !lease.ValidTodoID(q.Todo) {
		return nil, false, nil
	}
	entries = []LogEntry{}
	if err := s.todoCommits(head, q.Todo, s.collect(q, lv, &entries)); err != nil {
		return nil, false, err
	}
	return entries, true, nil
}

// todoCommits calls fn with todo's commits on head's history, newest first,
// until it returns false: the commits the index names, then, when the index
// dropped older ones, every commit below them (fn filters those).
func (s *Store) todoCommits(head gitstore.Hash, todo string, fn func(c gitstore.CommitMeta) (bool, error)) error {
	ix, err := s.logIndexAt(head, todo)
	if err != nil {
		return err
	}
	hs := ix.todos[todo]
	for _, h := range hs {
		c, err := records.CommitMeta(s.repo, h)
		if err != nil {
			return err
		}
		if more, err := fn(c); err != nil || !more {
			return err
		}
	}
	if len(hs) < logIndexKeep {
		return nil
	}
	c, err := records.CommitMeta(s.repo, hs[len(hs)-1])
	if err != nil {
		return err
	}
	return s.repo.Log(c.Parent, fn)
}
