package gitstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/loopx-dev/loopx/internal/soak"
)

func TestGC(t *testing.T) {
	t.Parallel()
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true // GC is tested here, not durability
	ctx := context.Background()
	for i := 0; i < 150; i++ {
		commitT(t, s, put(fmt.Sprintf("todos/%03d.yaml", i), fmt.Sprintf("id: %d\ntitle: todo %d\n", i, i)))
	}
	if st, _ := readGCState(s.CommonDir()); st.commits != 150 || len(st.cpacks) != 150 {
		t.Errorf("counter = %d, %d commit packs (one per commit)", st.commits, len(st.cpacks))
	}
	stats, err := s.GC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GC: %+v", stats)
	// The user's own initial commit (3 objects) is not the store's.
	if stats.LooseAfter > 3 || stats.SizeAfter >= stats.SizeBefore || stats.Packs != 1 {
		t.Errorf("stats %+v", stats)
	}
	if st, _ := readGCState(s.CommonDir()); st.commits != 0 || len(st.packs) != 1 || len(st.cpacks) != 0 {
		t.Errorf("state after GC: %+v", st)
	}
	if got := runGitT(t, dir, "rev-parse", "--verify", "HEAD"); got == "" {
		t.Error("user's HEAD gone")
	}
	check := func(s *Store, n int) {
		t.Helper()
		files := walkT(t, snapT(t, s), "")
		if len(files) != n || files["todos/007.yaml"] != "id: 7\ntitle: todo 7\n" {
			t.Fatalf("%d files after GC", len(files))
		}
		count := 0
		if err := s.Log(snapT(t, s).Revision(), func(CommitMeta) (bool, error) { count++; return true, nil }); err != nil || count != n {
			t.Fatalf("Log after GC: %d, %v", count, err)
		}
	}
	s.trees.reset()
	check(s, 150)
	check(openT(t, dir, Options{}), 150)
	fsckT(t, dir)

	// More commits and GCs: gitstore's packs are merged geometrically.
	for round := 0; round < 4; round++ {
		for i := 0; i < 30; i++ {
			n := 150 + round*30 + i
			commitT(t, s, put(fmt.Sprintf("todos/%03d.yaml", n), fmt.Sprintf("id: %d\ntitle: todo %d\n", n, n)))
		}
		stats, err := s.GC(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := readGCState(s.CommonDir())
		t.Logf("round %d: %+v, gitstore packs %d", round, stats, len(st.packs))
		if stats.LooseAfter > 3 || len(st.packs) > 3 {
			t.Errorf("round %d: %+v, %d packs", round, stats, len(st.packs))
		}
	}
	// A GC with nothing new is harmless.
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	check(s, 270)
	check(openT(t, dir, Options{}), 270)
	fsckT(t, dir)

	// The user's `git gc` repacks everything, gitstore's packs included.
	runGitT(t, dir, "gc", "-q", "--prune=now")
	check(s, 270)
	check(openT(t, dir, Options{}), 270)
	commitT(t, s, put("after/git-gc", "x"))
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	check(openT(t, dir, Options{}), 271)
	fsckT(t, dir)
}

// TestMaybeGCCountsPacks: each commit writes a small pack; GC runs once
// there are more than maxOwnPacks of them, and merges them.
func TestMaybeGCCountsPacks(t *testing.T) {
	t.Parallel()
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true
	s.gcSpread = 0 // the thresholds themselves
	for i := 0; i < maxOwnPacks; i++ {
		commitT(t, s, put("f/"+strconv.Itoa(i), "x"))
	}
	s.MaybeGC()
	if st, _ := readGCState(s.CommonDir()); len(st.cpacks) != maxOwnPacks {
		t.Fatalf("MaybeGC ran early: %d commit packs listed", len(st.cpacks))
	}
	if _, err := s.Transact(context.Background(), func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{Changes: []Change{put("last", "x")}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := readGCState(s.CommonDir())
	if len(st.packs) > 3 || len(st.cpacks) != 0 || st.commits != 0 {
		t.Fatalf("after the automatic GC: %d packs and %d commit packs listed, counter %d", len(st.packs), len(st.cpacks), st.commits)
	}
	if files := walkT(t, snapT(t, s), ""); len(files) != maxOwnPacks+1 {
		t.Fatalf("%d files after GC", len(files))
	}
	fsckT(t, dir)
}

func TestMaybeGC(t *testing.T) {
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true
	s.gcSpread = 0         // the thresholds themselves
	s.odb.looseOnly = true // counts loose objects
	ctx := context.Background()
	for i := 0; i < gcEvery-1; i++ {
		commitT(t, s, put("f/"+strconv.Itoa(i), "x"))
	}
	s.MaybeGC()
	if loose, _ := objectDirUsage(s.odb.objDir); loose < (gcEvery-1)*3 {
		t.Fatalf("MaybeGC packed early: %d loose", loose)
	}
	// Transact triggers it once the counter reaches gcEvery.
	if _, err := s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
		return &Proposal{Changes: []Change{put("last", "x")}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if loose, _ := objectDirUsage(s.odb.objDir); loose > 3 {
		t.Errorf("%d loose objects after the automatic GC", loose)
	}
	// MaybeGC called by the fence holder does not wait on itself.
	unlock, _ := s.Lock(ctx, true)
	start := time.Now()
	s.MaybeGC()
	if time.Since(start) > time.Second {
		t.Error("MaybeGC waited for its own fence")
	}
	unlock()
	// Without git, MaybeGC is silent and GC fails.
	t.Setenv("PATH", t.TempDir())
	for i := 0; i < gcEvery; i++ {
		commitT(t, s, put("g/"+strconv.Itoa(i), "x"))
	}
	s.MaybeGC()
	if _, err := s.GC(ctx); err == nil {
		t.Error("GC without git succeeded")
	}
}

func TestGeometricSplit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sizes []int64
		want  int
	}{
		{nil, 0},
		{[]int64{5}, 0},
		{[]int64{5, 5}, 2},
		{[]int64{5, 10}, 0},
		{[]int64{5, 5, 10}, 3},
		{[]int64{5, 100, 1000}, 0},
		{[]int64{5, 6, 100, 1000}, 2},
		{[]int64{5, 6, 7, 20, 1000}, 4},
	} {
		if got := geometricSplit(c.sizes); got != c.want {
			t.Errorf("geometricSplit(%v) = %d, want %d", c.sizes, got, c.want)
		}
	}
}

// TestGCGrowth commits many small mutations through Transact (so MaybeGC
// runs as in production) and checks that the object directory grows by
// less than 1 KiB per mutation. GITSTORE_GROWTH_COMMITS overrides the
// number of commits (default 2000).
func TestGCGrowth(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow")
	}
	n := soak.Pick(500, 2000)
	if v, err := strconv.Atoi(os.Getenv("GITSTORE_GROWTH_COMMITS")); err == nil {
		n = v
	}
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true // growth is measured, not durability: keep it fast
	s.gcSpread = 0      // at the base thresholds (a spread repository packs up to twice as late)
	ctx := context.Background()
	// A store that already holds 200 todos.
	var seed []Change
	for i := 0; i < 200; i++ {
		seed = append(seed, put(fmt.Sprintf("todos/%04d.yaml", i), todoYAML(i, 0)))
	}
	commitT(t, s, seed...)
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	_, before := objectDirUsage(s.odb.objDir)
	start := time.Now()
	for i := 0; i < n; i++ {
		_, err := s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
			// Mostly updates of existing todos, some new ones.
			id := (i * 7919) % (200 + i/10)
			return &Proposal{Changes: []Change{put(fmt.Sprintf("todos/%04d.yaml", id), todoYAML(id, i))},
				Info: CommitInfo{Message: fmt.Sprintf("update todo %d", id), AuthorName: "Dev", AuthorEmail: "dev@example.com"}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	_, after := objectDirUsage(s.odb.objDir)
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	loose, afterGC := objectDirUsage(s.odb.objDir)
	// Reads are as fast as on a fresh store holding the same files (all
	// loose objects, as a new store has).
	var same []Change
	for p, data := range walkT(t, snapT(t, s), "") {
		same = append(same, put(p, data))
	}
	fresh := newRepoIn(t, fastTempDir(t))
	commitT(t, openT(t, fresh, Options{}), same...)
	coldBefore := coldRead(t, fresh, "todos/0007.yaml")
	coldAfter := coldRead(t, dir, "todos/0007.yaml")
	perCommit := float64(after-before) / float64(n)
	t.Logf("%d commits in %v (%.1f ms/commit); objects dir grew %d bytes = %.0f B/commit (%.0f B/commit after a final GC, %d loose left); cold read %v on a fresh store with the same files, %v here",
		n, elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/1000/float64(n),
		after-before, perCommit, float64(afterGC-before)/float64(n), loose, coldBefore, coldAfter)
	if perCommit >= 1024 {
		t.Errorf("growth %.0f B/commit, want < 1024", perCommit)
	}
	fsckT(t, dir)
}

func todoYAML(id, rev int) string {
	return fmt.Sprintf("id: %d\ntitle: Todo number %d\nstate: open\nrevision: %d\nnotes: |\n  Some notes about todo %d that change a little: %d.\n", id, id, rev, id, rev%13)
}

// coldRead times Open + Head + Snapshot + Read, as a short command does
// (best of 20).
func coldRead(t *testing.T, dir, path string) time.Duration {
	best := time.Hour
	for i := 0; i < 20; i++ {
		start := time.Now()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := snapT(t, s).Read(path); !ok || err != nil {
			t.Fatal(ok, err)
		}
		s.Close()
		best = min(best, time.Since(start))
	}
	return best
}

// TestPathNamesMatchRevList: gc names each object by the path git's own
// rev-list --objects gives it, and lists them in that order (newest commit
// first, each followed by what it adds), which is what pack-objects needs
// to pair versions of one file or tree as delta and base.
func TestPathNamesMatchRevList(t *testing.T) {
	requireGit(t)
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	for i := 0; i < 30; i++ {
		commitT(t, s, put(fmt.Sprintf("goals/g/todos/%02d/t%d.yaml", i%4, i%7), todoYAML(i%7, i)),
			put("goals/g/TODO.md", fmt.Sprintf("board %d\n", i/3)))
		if i == 17 {
			commitT(t, s, del(fmt.Sprintf("goals/g/todos/%02d/t%d.yaml", 1, 1)))
		}
	}
	head, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	out := runGitT(t, dir, "rev-list", "--objects", head.String())
	want := map[Hash]string{}
	var wantOrder []Hash
	set := map[Hash]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		h, name, _ := strings.Cut(line, " ")
		want[ParseHash(h)] = name
		wantOrder = append(wantOrder, ParseHash(h))
		set[ParseHash(h)] = true
	}
	order, names := s.pathNames(set)
	for h, name := range want {
		if got, ok := names[h]; ok && got != name || !ok && name != "" {
			t.Errorf("%s: named %q (%v), rev-list %q", h, got, ok, name)
		}
	}
	// Every commit comes before the objects it adds, newest first.
	pos := map[Hash]int{}
	for i, h := range order {
		pos[h] = i
	}
	if len(order) != len(wantOrder) {
		t.Fatalf("ordered %d objects, rev-list %d", len(order), len(wantOrder))
	}
	commits := strings.Fields(runGitT(t, dir, "rev-list", head.String()))
	for i := 1; i < len(commits); i++ {
		if pos[ParseHash(commits[i-1])] > pos[ParseHash(commits[i])] {
			t.Fatalf("commit %s listed after its parent", commits[i-1])
		}
	}
}

// TestExplicitGCComputesDeltas: an explicit GC leaves one pack whose
// deltas were computed afresh with names: much smaller than the same
// objects packed without names, as the merges of gc once packed them.
func TestExplicitGCComputesDeltas(t *testing.T) {
	requireGit(t)
	s, dir := explicitGCAfter(t, 400, func(i int) ([]Change, string) {
		return []Change{put(fmt.Sprintf("goals/g/leases/%02d/t%d.yaml", i%40, i%40), todoYAML(i%40, i)),
			put(fmt.Sprintf("goals/g/todos/%02d/t%d.yaml", i%40, i%40), todoYAML(i%40, i/3))}, fmt.Sprintf("change %d", i)
	})
	packs, _ := filepath.Glob(filepath.Join(s.odb.objDir, "pack", "pack-*.pack"))
	if len(packs) != 1 {
		t.Fatalf("%d packs after an explicit GC, want 1", len(packs))
	}
	named, err := os.Stat(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	// The same objects, without names and in the index's order, as gc's
	// merges packed them before.
	idx := strings.TrimSuffix(packs[0], ".pack") + ".idx"
	out, err := tryGit(dir, "", "verify-pack", "-v", idx)
	if err != nil {
		t.Fatal(err)
	}
	var list strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 5 && len(f[0]) == 40 {
			list.WriteString(f[0] + "\n")
		}
	}
	plainDir := fastTempDir(t)
	if _, err := tryGit(dir, list.String(), "pack-objects", "--no-reuse-delta", "--window=50", "--depth=50", "-q", filepath.Join(plainDir, "plain")); err != nil {
		t.Fatal(err)
	}
	plainPacks, _ := filepath.Glob(filepath.Join(plainDir, "plain-*.pack"))
	if len(plainPacks) != 1 {
		t.Fatal("no plain pack")
	}
	plain, err := os.Stat(plainPacks[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("named pack %d bytes, unnamed %d", named.Size(), plain.Size())
	if named.Size()*10 > plain.Size()*9 {
		t.Fatalf("the explicit GC's pack is %d bytes, the same objects without names %d: want at least 10%% less", named.Size(), plain.Size())
	}
	fsckT(t, dir)
}

// TestExplicitGCDeltasSmallObjects: the explicit GC's pack stores the
// store's small trees and its commits as deltas where git pack-objects
// stores them whole (its rule: a delta under half the object's size minus
// 20 bytes), is valid for git, and reads back through a fresh store.
func TestExplicitGCDeltasSmallObjects(t *testing.T) {
	requireGit(t)
	s, dir := explicitGCAfter(t, 300, func(i int) ([]Change, string) {
		return []Change{put(fmt.Sprintf("goals/g/leases/%02d/t%d.yaml", i%30, i%30), todoYAML(i%30, i))},
			fmt.Sprintf("board g at %d\n\nLoopx-Operation: x\n", i)
	})
	// The root tree ("goals", 30 bytes) cannot be smaller as a delta; the
	// others (the goal's folder, "leases", a bucket of one entry) are 30
	// to 100 bytes and change one hash a version.
	count, hashes := onePackCounts(t, s, dir)
	t.Logf("whole, delta: %v", count)
	if c := count["commit"]; c[1] < 9*(c[0]+c[1])/10 {
		t.Errorf("commits: %d whole, %d deltas: want 90%% deltas", c[0], c[1])
	}
	if c := count["tree"]; c[1] < 2*(c[0]+c[1])/3 {
		t.Errorf("trees: %d whole, %d deltas: want two thirds deltas", c[0], c[1])
	}
	fsckT(t, dir)
	// Every object, read through a fresh store (its pack reader), is
	// what git reads.
	s2 := openT(t, dir, Options{})
	for _, h := range hashes {
		typ, data, err := s2.odb.read(plumbing.NewHash(h))
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if got := hashObject(typ, data); got.String() != h {
			t.Fatalf("%s reads back as %s", h, got)
		}
	}
}

// TestExplicitGCDeltasPathsBeyondBudget: the explicit GC's delta search
// keeps the candidate bases of one path at a time, so a store whose paths
// together need more than deltaKeepBytes of bases (their records
// interleaved in the pack's order, a version of each in turn) still
// stores every version of a record but its newest as a delta. When the
// bases of all paths were kept at once, the paths used longest ago were
// forgotten before their next version came, and most versions were
// written whole.
func TestExplicitGCDeltasPathsBeyondBudget(t *testing.T) {
	requireGit(t)
	record := func(p, v int) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, "todo_id: t%d\nversion: %d\nholders:\n", p, v)
		for i := 0; i < 120; i++ {
			fmt.Fprintf(&b, "  - epoch: %d\n    owner: agent-%d-%d\n", i, p, i%7)
		}
		return []byte(b.String())
	}
	// Enough paths that four bases of each are 1.5 times the budget.
	perPath := 4 * (&deltaBase{data: record(0, 0), index: newDeltaIndex(record(0, 0))}).cost()
	paths := 3 * deltaKeepBytes / perPath / 2
	const versions = 7
	s, dir := explicitGCAfter(t, paths*versions, func(i int) ([]Change, string) {
		p, v := i%paths, i/paths
		return []Change{{Path: fmt.Sprintf("leases/%03d/t%d.yaml", p, p), Data: record(p, v)}}, fmt.Sprintf("change %d", i)
	})
	count, _ := onePackCounts(t, s, dir)
	whole, blobs := count["blob"][0], count["blob"][0]+count["blob"][1]
	t.Logf("%d paths of %d versions (bases of a path: %d bytes): %d of %d blobs whole", paths, versions, perPath, whole, blobs)
	if blobs != paths*versions {
		t.Fatalf("%d blobs in the pack, want %d", blobs, paths*versions)
	}
	if whole > paths+paths/10 {
		t.Errorf("%d blobs written whole, want about one per path (%d)", whole, paths)
	}
	fsckT(t, dir)
}

// explicitGCAfter makes n commits in a new store (commit i of change(i):
// its files and message) and runs an explicit GC.
func explicitGCAfter(t *testing.T, n int, change func(i int) ([]Change, string)) (*Store, string) {
	t.Helper()
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if _, err := s.Transact(ctx, func(sn *Snapshot) (*Proposal, error) {
			changes, msg := change(i)
			return &Proposal{Changes: changes, Info: CommitInfo{Message: msg, AuthorName: "Dev", AuthorEmail: "dev@example.com"}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// onePackCounts checks that s's objects are in one pack, as after an
// explicit GC, and returns, by object type, how many git's verify-pack
// lists whole and as deltas, and every object's hash.
func onePackCounts(t *testing.T, s *Store, dir string) (count map[string][2]int, hashes []string) {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(s.odb.objDir, "pack", "pack-*.idx"))
	if len(packs) != 1 {
		t.Fatalf("%d packs after an explicit GC, want 1", len(packs))
	}
	out, err := tryGit(dir, "", "verify-pack", "-v", packs[0])
	if err != nil {
		t.Fatal(err)
	}
	count = map[string][2]int{} // type → whole, delta
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || len(f[0]) != 40 {
			continue
		}
		hashes = append(hashes, f[0])
		c := count[f[1]]
		if len(f) >= 7 {
			c[1]++
		} else {
			c[0]++
		}
		count[f[1]] = c
	}
	return count, hashes
}

// TestGCDue: the automatic GC's thresholds, moved by a repository's spread
// so that clones following one server do not all repack at once.
func TestGCDue(t *testing.T) {
	t.Parallel()
	packs := func(n int) []Hash { return make([]Hash, n) }
	for _, c := range []struct {
		name   string
		st     gcState
		spread float64
		want   bool
	}{
		{"nothing", gcState{}, 0, false},
		{"commits below", gcState{commits: gcEvery - 1}, 0, false},
		{"commits at", gcState{commits: gcEvery}, 0, true},
		{"commits at, spread", gcState{commits: gcEvery}, 0.5, false},
		{"commits at half more, spread half", gcState{commits: gcEvery + gcEvery/2}, 0.5, true},
		{"packs at", gcState{cpacks: packs(maxOwnPacks)}, 0, false},
		{"packs past", gcState{cpacks: packs(maxOwnPacks + 1)}, 0, true},
		{"packs past, spread", gcState{cpacks: packs(maxOwnPacks + 1)}, 0.99, false},
		{"packs past twice, largest spread", gcState{cpacks: packs(2 * maxOwnPacks)}, 0.99, true},
	} {
		if got := gcDue(c.st, c.spread); got != c.want {
			t.Errorf("%s: gcDue = %v, want %v", c.name, got, c.want)
		}
	}
	// Spreads of repositories side by side differ and stay in [0,1).
	seen := map[float64]bool{}
	for i := 0; i < 64; i++ {
		s := spreadOf(fmt.Sprintf("/tmp/agents/c%d/.git", i))
		if s < 0 || s >= 1 {
			t.Fatalf("spread %v out of [0,1)", s)
		}
		seen[math.Floor(s*8)] = true
	}
	if len(seen) < 6 {
		t.Errorf("64 clones' spreads fall in %d of 8 eighths", len(seen))
	}
}

// TestGCKeepsLooseDirs: an explicit GC drops a loose object that a pack
// also holds, keeps one no pack holds, and leaves the objects/xx
// directory it emptied: a git process that finds objects/xx missing
// creates it once, then its temporary file in it, and fails with "unable
// to create temporary file" if the directory is removed in between (git
// prune-packed's rmdir did that once to TestInterop's git commit-tree).
func TestGCKeepsLooseDirs(t *testing.T) {
	requireGit(t)
	dir := newRepoIn(t, fastTempDir(t))
	s := openT(t, dir, Options{})
	s.odb.noSync = true
	objDir := s.odb.objDir
	// A blob whose objects/xx directory holds nothing else.
	var content, hex string
	for i := 0; ; i++ {
		content = fmt.Sprintf("todo %d\n", i)
		hex = hashObject(plumbing.BlobObject, []byte(content)).String()
		if _, err := os.Stat(filepath.Join(objDir, hex[:2])); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	commitT(t, s, put("todos/a.yaml", content))
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A loose copy of it (git does not write an object it has: the copy
	// is made in another repository, as a fetch or a copy could leave
	// it), and a loose blob no pack has.
	other := t.TempDir()
	runGitT(t, other, "init", "-q")
	if out, err := tryGit(other, content, "hash-object", "-w", "--stdin"); err != nil || out != hex {
		t.Fatalf("hash-object: %s %v", out, err)
	}
	loose, err := os.ReadFile(filepath.Join(other, ".git", "objects", hex[:2], hex[2:]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(objDir, hex[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(objDir, hex[:2], hex[2:]), loose, 0o444); err != nil {
		t.Fatal(err)
	}
	lone, err := tryGit(dir, "only loose\n", "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(objDir, hex[:2], hex[2:])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loose copy of packed %s: %v, want removed", hex, err)
	}
	if fi, err := os.Stat(filepath.Join(objDir, hex[:2])); err != nil || !fi.IsDir() {
		t.Errorf("objects/%s after GC: %v, want the (empty) directory kept", hex[:2], err)
	}
	if _, err := os.Stat(filepath.Join(objDir, lone[:2], lone[2:])); err != nil {
		t.Errorf("loose object no pack holds: %v, want kept", err)
	}
	if got := runGitT(t, dir, "cat-file", "-p", hex); got+"\n" != content {
		t.Errorf("cat-file %s = %q", hex, got)
	}
}
