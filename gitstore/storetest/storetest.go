// Package storetest is the conformance suite of gitstore.Repo: one set of
// tests that every implementation must pass (the real store bound to its
// local ref, and MemRepo). The model is git-bug's RepoTest: the layers above
// are tested against the in-memory repository, and this suite keeps the two
// honest with each other.
package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
)

// Subject is one implementation under test.
type Subject struct {
	Repo gitstore.Repo
	// Foreign commits changes on the current head behind the fence, as a
	// writer that bypasses it would.
	Foreign func(t *testing.T, changes []gitstore.Change) gitstore.Hash
	// Reset moves the ref to h behind the fence (a rewound ref).
	Reset func(t *testing.T, h gitstore.Hash)
}

// Run runs the suite; newSubject returns a fresh, empty subject. The tests
// run in parallel, each on its own subject (newSubject may be called from
// several goroutines at once).
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Subject)
	}{
		{"EmptyHead", testEmpty},
		{"CommitAndRead", testCommitAndRead},
		{"NothingToCommit", testNothing},
		{"CASConflict", testConflict},
		{"Chained", testChained},
		{"LostResponse", testLostResponse},
		{"History", testHistory},
		{"Diff", testDiff},
		{"TreeOf", testTreeOf},
		{"IdenticalCommit", testIdentical},
		{"InvalidChange", testInvalid},
		{"SideFiles", testSideFiles},
		{"Depth", testDepth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newSubject(t))
		})
	}
}

var ctx = context.Background()

func put(p, data string) gitstore.Change { return gitstore.Change{Path: p, Data: []byte(data)} }

func info(msg string, sec int64) gitstore.CommitInfo {
	return gitstore.CommitInfo{Message: msg, AuthorName: "a", AuthorEmail: "a@x", When: time.Unix(1_700_000_000+sec, 0).UTC()}
}

func commit(t *testing.T, s Subject, msg string, sec int64, changes ...gitstore.Change) gitstore.TxResult {
	t.Helper()
	res, err := s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: changes, Info: info(msg, sec)}, nil
	})
	if err != nil {
		t.Fatalf("Transact %s: %v", msg, err)
	}
	return res
}

func head(t *testing.T, s Subject) gitstore.Hash {
	t.Helper()
	h, err := s.Repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func read(t *testing.T, sn *gitstore.Snapshot, p string) (string, bool) {
	t.Helper()
	data, ok, err := sn.Read(p)
	if err != nil {
		t.Fatalf("Read %s: %v", p, err)
	}
	return string(data), ok
}

func testEmpty(t *testing.T, s Subject) {
	if h := head(t, s); !h.IsZero() {
		t.Fatalf("head of an empty repo = %s", h)
	}
	sn, err := s.Repo.Snapshot(gitstore.ZeroHash)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := read(t, sn, "a"); ok {
		t.Error("empty snapshot has a file")
	}
	if es, err := sn.List(""); err != nil || len(es) != 0 {
		t.Errorf("empty List = %v, %v", es, err)
	}
}

func testCommitAndRead(t *testing.T, s Subject) {
	res := commit(t, s, "first", 1, put("a/b.yaml", "1"), put("a/c/d.yaml", "2"), put("top", "3"))
	if res.Head.IsZero() || res.State != res.Head || !res.Base.IsZero() {
		t.Fatalf("result %+v", res)
	}
	if h := head(t, s); h != res.Head {
		t.Fatalf("head %s, want %s", h, res.Head)
	}
	sn, err := s.Repo.Snapshot(res.Head)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Revision() != res.Head || !sn.Time().Equal(time.Unix(1_700_000_001, 0)) {
		t.Errorf("snapshot %s at %v", sn.Revision(), sn.Time())
	}
	if got, ok := read(t, sn, "a/b.yaml"); !ok || got != "1" {
		t.Errorf("a/b.yaml = %q %v", got, ok)
	}
	if _, ok := read(t, sn, "a"); ok {
		t.Error("a directory reads as a file")
	}
	es, err := sn.List("a")
	if err != nil || len(es) != 2 || es[0] != (gitstore.Entry{Name: "b.yaml"}) || es[1] != (gitstore.Entry{Name: "c", Dir: true}) {
		t.Errorf("List(a) = %v, %v", es, err)
	}
	var walked []string
	if err := sn.Walk("a", func(p string, data []byte) error {
		walked = append(walked, p+"="+string(data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(walked, []string{"a/b.yaml=1", "a/c/d.yaml=2"}) {
		t.Errorf("Walk(a) = %v", walked)
	}
	err = sn.WalkHashes("", func(p string, h gitstore.Hash) error {
		data, err := sn.ReadBlob(h)
		if err != nil {
			return err
		}
		want, _ := read(t, sn, p)
		if string(data) != want {
			t.Errorf("ReadBlob(%s) = %q, want %q", p, data, want)
		}
		// HashOf names the same blob a walk does, without reading it.
		if hp, ok, err := sn.HashOf(p); err != nil || !ok || hp != h {
			t.Errorf("HashOf(%s) = %s %v %v, want %s", p, hp, ok, err, h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "a/c", "a/missing.yaml", "missing/b.yaml"} {
		if h, ok, err := sn.HashOf(p); err != nil || ok || !h.IsZero() {
			t.Errorf("HashOf(%s) = %s %v %v, want no file", p, h, ok, err)
		}
	}
	// A second commit on it: deletes a directory, keeps the rest.
	res2 := commit(t, s, "second", 2, gitstore.Change{Path: "a/c", Delete: true}, put("a/b.yaml", "4"))
	if res2.Base != res.Head {
		t.Errorf("second decided on %s, want %s", res2.Base, res.Head)
	}
	sn2, _ := s.Repo.Snapshot(res2.Head)
	if _, ok := read(t, sn2, "a/c/d.yaml"); ok {
		t.Error("deleted directory still there")
	}
	if got, _ := read(t, sn2, "a/b.yaml"); got != "4" {
		t.Errorf("a/b.yaml = %q", got)
	}
	// The old snapshot is immutable.
	if got, _ := read(t, sn, "a/b.yaml"); got != "1" {
		t.Errorf("old snapshot changed: %q", got)
	}
}

func testNothing(t *testing.T, s Subject) {
	first := commit(t, s, "first", 1, put("a", "1"))
	res, err := s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) { return nil, nil })
	if err != nil || res.Head != first.Head || !res.State.IsZero() || res.Base != first.Head {
		t.Errorf("no-op Transact = %+v, %v", res, err)
	}
	refusal := errors.New("refused")
	res, err = s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) { return nil, refusal })
	if !errors.Is(err, refusal) || !res.State.IsZero() {
		t.Errorf("refused Transact = %+v, %v", res, err)
	}
	if h := head(t, s); h != first.Head {
		t.Error("the ref moved")
	}
}

func testConflict(t *testing.T, s Subject) {
	commit(t, s, "first", 1, put("n", "0"))
	var foreign gitstore.Hash
	calls := 0
	res, err := s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		calls++
		n, _, _ := sn.Read("n")
		if calls == 1 {
			foreign = s.Foreign(t, []gitstore.Change{put("n", "1")})
		} else if sn.Revision() != foreign {
			t.Errorf("retry decided on %s, want the foreign %s", sn.Revision(), foreign)
		}
		return &gitstore.Proposal{Changes: []gitstore.Change{put("n", string(n)+"+")}, Info: info("incr", 3)}, nil
	})
	if err != nil || calls != 2 || res.Conflicts != 1 || res.Attempts != 2 || res.Base != foreign {
		t.Fatalf("Transact after a foreign write: %+v, %v, %d calls", res, err, calls)
	}
	sn, _ := s.Repo.Snapshot(res.Head)
	if got, _ := read(t, sn, "n"); got != "1+" {
		t.Errorf("n = %q: the decision was not made again on the new head", got)
	}
	var parent gitstore.Hash
	s.Repo.Log(res.Head, func(c gitstore.CommitMeta) (bool, error) { parent = c.Parent; return false, nil })
	if parent != foreign {
		t.Errorf("parent %s, want the foreign commit", parent)
	}
}

func testChained(t *testing.T, s Subject) {
	base := commit(t, s, "base", 1, put("state", "0"))
	var named gitstore.Hash
	res, err := s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: []gitstore.Change{put("state", "1")}, Info: info("state", 2),
			Next: func(first gitstore.Hash) (*gitstore.Proposal, error) {
				named = first
				return &gitstore.Proposal{Changes: []gitstore.Change{put("board", "state=1")}, Info: info("board of "+first.String(), 2)}, nil
			}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != named || res.Head == res.State || res.Base != base.Head {
		t.Fatalf("chained result %+v (Next was told %s)", res, named)
	}
	var log []gitstore.CommitMeta
	s.Repo.Log(res.Head, func(c gitstore.CommitMeta) (bool, error) { log = append(log, c); return true, nil })
	if len(log) != 3 || log[0].Parent != res.State || log[1].Hash != res.State || log[1].Parent != base.Head ||
		!strings.HasPrefix(log[0].Message, "board of "+res.State.String()) {
		t.Fatalf("chained history %+v", log)
	}
	sn, _ := s.Repo.Snapshot(res.State)
	if _, ok := read(t, sn, "board"); ok {
		t.Error("the state commit holds the board")
	}
	// Next declining makes one commit; Next failing makes none.
	res, err = s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: []gitstore.Change{put("state", "2")}, Info: info("alone", 3),
			Next: func(gitstore.Hash) (*gitstore.Proposal, error) { return nil, nil }}, nil
	})
	if err != nil || res.State != res.Head {
		t.Errorf("declined chain: %+v, %v", res, err)
	}
	before := head(t, s)
	boom := errors.New("boom")
	_, err = s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: []gitstore.Change{put("state", "3")}, Info: info("x", 4),
			Next: func(gitstore.Hash) (*gitstore.Proposal, error) { return nil, boom }}, nil
	})
	if !errors.Is(err, boom) || head(t, s) != before {
		t.Errorf("failed chain: %v; ref moved: %v", err, head(t, s) != before)
	}
}

func testLostResponse(t *testing.T, s Subject) {
	commit(t, s, "a", 1, put("a", "1"))
	res := commit(t, s, "b", 2, put("b", "1"))
	commit(t, s, "c", 3, put("c", "1"))
	commit(t, s, "d", 4, put("d", "1"))
	// A caller that lost the response knows only the head it decided on.
	got, err := s.Repo.ChildOf(head(t, s), res.Base)
	if err != nil || got != res.State {
		t.Errorf("ChildOf(head, base) = %s, %v; want %s", got, err, res.State)
	}
	if got, err := s.Repo.ChildOf(head(t, s), head(t, s)); err != nil || !got.IsZero() {
		t.Errorf("ChildOf(head, head) = %s, %v", got, err)
	}
}

func testHistory(t *testing.T, s Subject) {
	var hs []gitstore.Hash
	for i := range 5 {
		hs = append(hs, commit(t, s, "c"+string(rune('0'+i)), int64(i), put("n", string(rune('0'+i)))).Head)
	}
	var seen []gitstore.Hash
	err := s.Repo.Log(hs[4], func(c gitstore.CommitMeta) (bool, error) {
		seen = append(seen, c.Hash)
		if c.AuthorName != "a" || c.AuthorEmail != "a@x" || !strings.HasPrefix(c.Message, "c") {
			t.Errorf("meta %+v", c)
		}
		return true, nil
	})
	if err != nil || len(seen) != 5 || seen[0] != hs[4] || seen[4] != hs[0] {
		t.Fatalf("Log = %v, %v", seen, err)
	}
	n := 0
	s.Repo.Log(hs[4], func(c gitstore.CommitMeta) (bool, error) { n++; return n < 2, nil })
	if n != 2 {
		t.Errorf("Log did not stop: %d", n)
	}
	boom := errors.New("boom")
	if err := s.Repo.Log(hs[4], func(gitstore.CommitMeta) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Errorf("Log error = %v", err)
	}
}

func testDiff(t *testing.T, s Subject) {
	a := commit(t, s, "a", 1, put("g/x/1", "1"), put("g/x/2", "2"), put("h/3", "3"))
	b := commit(t, s, "b", 2, put("g/x/1", "1*"), gitstore.Change{Path: "g/x/2", Delete: true}, put("g/y", "4"), put("h/3", "3*"))
	var got []string
	err := s.Repo.DiffHashes(a.Head, b.Head, "g", func(p string, old, new gitstore.Hash) error {
		got = append(got, p+":"+map[bool]string{true: "-", false: "+"}[old.IsZero()]+map[bool]string{true: "-", false: "+"}[new.IsZero()])
		return nil
	})
	if err != nil || !slices.Equal(got, []string{"g/x/1:++", "g/x/2:+-", "g/y:-+"}) {
		t.Errorf("DiffHashes = %v, %v", got, err)
	}
}

func testTreeOf(t *testing.T, s Subject) {
	a := commit(t, s, "a", 1, put("x", "1"))
	changes := []gitstore.Change{put("y/z", "2"), {Path: "x", Delete: true}}
	tree, err := s.Repo.TreeOf(a.Head, changes)
	if err != nil {
		t.Fatal(err)
	}
	b := commit(t, s, "b", 2, changes...)
	var bt gitstore.Hash
	s.Repo.Log(b.Head, func(c gitstore.CommitMeta) (bool, error) { bt = c.Tree; return false, nil })
	if tree != bt {
		t.Errorf("TreeOf = %s, the commit's tree is %s", tree, bt)
	}
	other, _ := s.Repo.TreeOf(a.Head, []gitstore.Change{put("y/z", "3")})
	if other == tree {
		t.Error("different changes, same tree name")
	}
	if h := head(t, s); h != b.Head {
		t.Error("TreeOf moved the ref")
	}
}

func testIdentical(t *testing.T, s Subject) {
	// The same decision on the same head in the same second builds the
	// same commit. After the ref was moved back, making it again moves the
	// ref to it once more, and its history holds it once.
	base := commit(t, s, "base", 1, put("a", "1"))
	first := commit(t, s, "same", 2, put("b", "1"))
	s.Reset(t, base.Head)
	again := commit(t, s, "same", 2, put("b", "1"))
	if again.State != first.State || again.Base != base.Head || head(t, s) != first.Head {
		t.Errorf("identical decision: %+v, first %+v", again, first)
	}
	n := 0
	s.Repo.Log(again.Head, func(gitstore.CommitMeta) (bool, error) { n++; return true, nil })
	if n != 2 {
		t.Errorf("history holds %d commits, want 2", n)
	}
}

func testInvalid(t *testing.T, s Subject) {
	commit(t, s, "a", 1, put("dir/f", "1"))
	before := head(t, s)
	for _, ch := range [][]gitstore.Change{
		{put("../x", "1")},
		{put("dir", "1")},     // a directory becomes a file
		{put("dir/f/g", "1")}, // under a file
		{put("/abs", "1")},
	} {
		_, err := s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
			return &gitstore.Proposal{Changes: ch, Info: info("bad", 2)}, nil
		})
		if !errors.Is(err, gitstore.ErrInvalidPath) {
			t.Errorf("%s: %v", ch[0].Path, err)
		}
	}
	if head(t, s) != before {
		t.Error("an invalid change moved the ref")
	}
}

func testSideFiles(t *testing.T, s Subject) {
	if data, err := s.Repo.ReadSideFile("loopx-cache/x"); err != nil || data != nil {
		t.Errorf("absent side file = %q, %v", data, err)
	}
	if err := s.Repo.WriteSideFile("loopx-cache/x", []byte("1"), false); err != nil {
		t.Fatal(err)
	}
	if data, err := s.Repo.ReadSideFile("loopx-cache/x"); err != nil || string(data) != "1" {
		t.Errorf("side file = %q, %v", data, err)
	} else {
		data[0] = '2' // the reader's own bytes (a listing decodes in place)
	}
	if data, err := s.Repo.ReadSideFile("loopx-cache/x"); err != nil || string(data) != "1" {
		t.Errorf("side file after a change to the bytes read = %q, %v", data, err)
	}
}

func testDepth(t *testing.T, s Subject) {
	if d, err := s.Repo.Depth(gitstore.ZeroHash); err != nil || d != 0 {
		t.Errorf("Depth(zero) = %d, %v", d, err)
	}
	var hs []gitstore.Hash
	for i := range 5 {
		hs = append(hs, commit(t, s, "c", int64(i), put("n", string(rune('a'+i)))).Head)
	}
	for i, h := range hs {
		if d, err := s.Repo.Depth(h); err != nil || d != int64(i+1) {
			t.Errorf("Depth(commit %d) = %d, %v", i+1, d, err)
		}
	}
	// Asked again (remembered), and after a chained commit (two more).
	if d, _ := s.Repo.Depth(hs[2]); d != 3 {
		t.Errorf("Depth again = %d", d)
	}
	res, _ := s.Repo.Transact(ctx, func(sn *gitstore.Snapshot) (*gitstore.Proposal, error) {
		return &gitstore.Proposal{Changes: []gitstore.Change{put("n", "z")}, Info: info("s", 9),
			Next: func(gitstore.Hash) (*gitstore.Proposal, error) {
				return &gitstore.Proposal{Changes: []gitstore.Change{put("b", "z")}, Info: info("b", 9)}, nil
			}}, nil
	})
	if d, _ := s.Repo.Depth(res.Head); d != 7 {
		t.Errorf("Depth after a chained commit = %d, want 7", d)
	}
}
