package derived

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
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
// Loopx-Todo trailer; up to Config.LogIndexKeep, newest first), in 256 side
// files <common dir>/loopx-cache/log-<bb> (bb: the first byte of the todo's
// SHA-256), each tagged with the head it reflects. A query reads one file,
// brings it up to date by walking from the head down to its tag (a tag
// that is not on the head's history, say after the ref was moved back,
// makes the walk go to the root: a rebuild), then reads only the commits
// the index names; if those are not enough and the index dropped older
// ones, the walk goes on from the oldest. The answer is the walk's
// (TestLogIndexMatchesWalk).

// logIndex is the log index's buckets.
type logIndex struct {
	sideFile[*logBucket]
	keep int
}

var _ Index[*logBucket] = (*logIndex)(nil)

// logBucket is one bucket: per todo, its commits newest first.
type logBucket struct {
	todos map[string][]gitstore.Hash
}

// bucketOf is the bucket (the key) of todo.
func bucketOf(todo string) string {
	sum := sha256.Sum256([]byte(todo))
	return hex.EncodeToString(sum[:1])
}

func newLogIndex(repo gitstore.Repo, keep int) *logIndex {
	ix := &logIndex{keep: keep}
	ix.sideFile = sideFile[*logBucket]{repo: repo, kind: "log", version: 1,
		file:   func(bucket string) string { return "loopx-cache/log-" + bucket },
		encode: ix.encode,
		decode: ix.decode,
	}
	return ix
}

// encode writes a bucket: the number of commits kept per todo, then a
// line per todo, "<todo>\t<hash>,<hash>...".
func (ix *logIndex) encode(b *logBucket) []byte {
	var out bytes.Buffer
	out.WriteString("keep " + strconv.Itoa(ix.keep) + "\n")
	for todo, hs := range b.todos {
		out.WriteString(todo)
		out.WriteByte('\t')
		for i, h := range hs {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString(h.String())
		}
		out.WriteByte('\n')
	}
	return out.Bytes()
}

var errBadBucket = errors.New("damaged log index bucket")

// decode reads a bucket written with this index's number of commits kept
// (one written with another number cannot say where its lists end).
func (ix *logIndex) decode(data []byte) (*logBucket, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != "keep "+strconv.Itoa(ix.keep) {
		return nil, errBadBucket
	}
	b := &logBucket{todos: map[string][]gitstore.Hash{}}
	for _, line := range lines[1:] {
		todo, list, ok := strings.Cut(line, "\t")
		if !ok || !lease.ValidTodoID(todo) {
			return nil, errBadBucket
		}
		var hs []gitstore.Hash
		for _, h := range strings.Split(list, ",") {
			hh := gitstore.ParseHash(h)
			if hh.IsZero() {
				return nil, errBadBucket
			}
			hs = append(hs, hh)
		}
		b.todos[todo] = hs
	}
	return b, nil
}

// walk collects the commits of the bucket's todos from head down to stop
// (zero: the root), newest first; reached says whether it met stop.
func (ix *logIndex) walk(head, stop gitstore.Hash, bucket string) (fresh map[string][]gitstore.Hash, reached bool, err error) {
	fresh = map[string][]gitstore.Hash{}
	err = ix.repo.Log(head, func(c gitstore.CommitMeta) (bool, error) {
		if !stop.IsZero() && c.Hash == stop {
			reached = true
			return false, nil
		}
		if e, _ := lease.ParseMessage(c.Message); e.Todo != "" && bucketOf(e.Todo) == bucket {
			if len(fresh[e.Todo]) < ix.keep {
				fresh[e.Todo] = append(fresh[e.Todo], c.Hash)
			}
		}
		return true, nil
	})
	return fresh, reached, err
}

// CatchUp walks from the target's head down to rev, the bucket's tag, and
// puts the commits it found before the bucket's. A tag that is not on the
// head's history makes the walk go to the root: what it found is the
// whole bucket then (a rebuild in one walk).
func (ix *logIndex) CatchUp(b *logBucket, rev gitstore.Hash, to Target, bucket string) (*logBucket, int, error) {
	fresh, reached, err := ix.walk(to.Rev, rev, bucket)
	if err != nil {
		return nil, 0, err
	}
	n := 0
	for _, hs := range fresh {
		n += len(hs)
	}
	if reached {
		for t, hs := range b.todos {
			if k := min(len(hs), ix.keep-len(fresh[t])); k > 0 {
				fresh[t] = append(fresh[t], hs[:k]...)
			}
		}
	}
	return &logBucket{todos: fresh}, n, nil
}

// Rebuild walks the whole history of the target's head.
func (ix *logIndex) Rebuild(to Target, bucket string) (*logBucket, error) {
	fresh, _, err := ix.walk(to.Rev, gitstore.ZeroHash, bucket)
	if err != nil {
		return nil, err
	}
	return &logBucket{todos: fresh}, nil
}

// bucketAt returns the bucket of todo brought up to head, saving it when
// it moved.
func (ix *logIndex) bucketAt(head gitstore.Hash, todo string) (*logBucket, error) {
	bucket := bucketOf(todo)
	b, how, _, err := bringUp[*logBucket](ix, bucket, Target{Rev: head}, nil, gitstore.ZeroHash, false, true)
	if err != nil {
		return nil, err
	}
	if how != asSaved {
		ix.Save(bucket, head, b)
	}
	return b, nil
}

// todoCommits calls fn with todo's commits on head's history, newest first,
// until it returns false: the commits the index names, then, when the index
// dropped older ones, every commit below them (fn filters those).
func (ix *logIndex) todoCommits(head gitstore.Hash, todo string, fn func(c gitstore.CommitMeta) (bool, error)) error {
	b, err := ix.bucketAt(head, todo)
	if err != nil {
		return err
	}
	hs := b.todos[todo]
	for _, h := range hs {
		cm, err := records.CommitMeta(ix.repo, h)
		if err != nil {
			return err
		}
		if more, err := fn(cm); err != nil || !more {
			return err
		}
	}
	if len(hs) < ix.keep {
		return nil
	}
	cm, err := records.CommitMeta(ix.repo, hs[len(hs)-1])
	if err != nil {
		return err
	}
	return ix.repo.Log(cm.Parent, fn)
}
