package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Garbage collection.
//
// Every commit adds a handful of loose objects (each a 4 KiB block on most
// file systems). GC moves them into packs with the git CLI, never touching
// the rest of the user's repository:
//
//  1. `git pack-objects --revs --incremental` over `<head> ^<last packed
//     head>`: the objects of the commits since the last GC that are not in
//     a pack yet, with deltas between them;
//  2. remove the loose copies of the objects just packed (and, when packs
//     are merged or GC is called explicitly, every loose object some
//     pack holds: prunePacked);
//  3. when gitstore's own packs (those it wrote, listed in the state file)
//     no longer form a geometric progression (each at least twice the size
//     of all smaller ones together), the small ones are rewritten into one
//     pack by `git pack-objects` fed the exact list of their objects (so no
//     object can be lost, whatever points to it) reusing their deltas, and
//     deleted. There are thus O(log n) packs and each object is rewritten
//     O(log n) times. Each object is given with the path the first-parent
//     history adds it at, in the order `git rev-list --objects` gives
//     (pathNames), so that pack-objects pairs the versions of one record
//     or tree as delta and base;
//  4. an explicit GC (not the automatic one) then rewrites gitstore's
//     packs into one with every delta computed afresh: a merge keeps the
//     deltas each batch of commits found within itself, where most records
//     have one version and so no base but another record's. That pack is
//     written by gitstore itself (deltaPack, packwrite.go, delta.go), with
//     the same order and names, because git pack-objects stores the small
//     trees and the commits whole (git pack-objects stays the fallback).
//
// The state file <commondir>/loopx-gc-state counts the commits since the
// last GC (Commit increments it: one small file rename per commit, never a
// scan of the object directory), and records the last packed head and the
// list of gitstore packs. Readers look in those packs before asking go-git,
// which would load the index of every pack in the repository.
//
// If the user runs `git gc`, git repacks everything, gitstore's packs
// included; the state file then lists missing packs, which are ignored.

const (
	gcStateFile = "loopx-gc-state"
	gcEvery     = 100 // commits between automatic GCs
	// maxOwnPacks also triggers GC: each commit writes a small pack (see
	// packwrite.go), and a reader looks at every pack's index.
	maxOwnPacks = 40
)

// GCStats reports what GC did. Loose counts and sizes cover the whole
// object directory (the repository's own objects included); Packs is the
// number of packs in it after GC.
type GCStats struct {
	LooseBefore, LooseAfter, Packs int
	SizeBefore, SizeAfter          int64
}

type gcState struct {
	commits int
	packed  Hash
	packs   []Hash // packs GC wrote
	// cpacks are the packs commits wrote (packwrite.go), oldest first:
	// whole objects, one commit each. GC merges them into one pack before
	// judging the geometric progression, so that their size (several
	// times their size once delta-compressed) never makes GC rewrite the
	// big packs early.
	cpacks []Hash
}

func readGCState(commonDir string) (gcState, error) {
	var st gcState
	b, err := os.ReadFile(filepath.Join(commonDir, gcStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "commits":
			st.commits, _ = strconv.Atoi(strings.TrimLeft(val, "0"))
		case "packed":
			if plumbing.IsHash(val) {
				st.packed = plumbing.NewHash(val)
			}
		case "pack":
			if plumbing.IsHash(val) {
				st.packs = append(st.packs, plumbing.NewHash(val))
			}
		case "cpack":
			if plumbing.IsHash(val) {
				st.cpacks = append(st.cpacks, plumbing.NewHash(val))
			}
		}
	}
	return st, nil
}

// writeGCState replaces the state file atomically (no fsync: losing it
// only delays a GC or forgets which packs are gitstore's).
func writeGCState(commonDir string, st gcState) error {
	var b bytes.Buffer
	// The counter comes first, fixed-width, so that noteCommits can update
	// it in place.
	fmt.Fprintf(&b, "commits %0*d\n", counterDigits, min(st.commits, counterMax))
	if !st.packed.IsZero() {
		fmt.Fprintf(&b, "packed %s\n", st.packed)
	}
	for _, p := range st.packs {
		fmt.Fprintf(&b, "pack %s\n", p)
	}
	for _, p := range st.cpacks {
		fmt.Fprintf(&b, "cpack %s\n", p)
	}
	name := filepath.Join(commonDir, gcStateFile)
	tmp := fmt.Sprintf("%s.tmp%d", name, os.Getpid())
	if err := os.WriteFile(tmp, b.Bytes(), 0o666); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

const (
	counterPrefix = "commits "
	counterDigits = 10
	counterMax    = 9999999999
)

// noteCommits counts n new commits towards the next automatic GC: a
// 10-byte write in place into the state file (no rename, no fsync).
// Callers hold the exclusive fence.
func (s *Store) noteCommits(n int) {
	name := filepath.Join(s.commonDir, gcStateFile)
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err == nil {
		defer f.Close()
		var b [len(counterPrefix) + counterDigits + 1]byte
		if got, _ := f.ReadAt(b[:], 0); got == len(b) && string(b[:len(counterPrefix)]) == counterPrefix && b[len(b)-1] == '\n' {
			if c, err := strconv.Atoi(string(b[len(counterPrefix) : len(b)-1])); err == nil {
				digits := fmt.Sprintf("%0*d", counterDigits, min(c+n, counterMax))
				f.WriteAt([]byte(digits), int64(len(counterPrefix)))
				return
			}
		}
	}
	st, err := readGCState(s.commonDir)
	if err != nil {
		return
	}
	st.commits += n
	writeGCState(s.commonDir, st)
}

// GC packs the store's loose objects (see the package comment of gc.go).
// It runs under the exclusive fence: it takes it, waiting as Lock does,
// unless an exclusive fence is already held through this Store, in which
// case it assumes its caller is the holder. It needs the git CLI on PATH.
func (s *Store) GC(ctx context.Context) (GCStats, error) {
	if !s.holdsExclusive() {
		unlock, err := s.Lock(ctx, true)
		if err != nil {
			return GCStats{}, err
		}
		defer unlock()
	}
	return s.gcLocked(ctx, true)
}

// MaybeGC runs GC if enough commits were made since the last one. The
// check reads one small file. Like GC it runs under the exclusive fence,
// but it does not wait for it: if the fence is busy (and not held through
// this Store), it does nothing. Errors, and a missing git CLI, are ignored:
// GC is an optimisation. Transact calls it after each commit; a mutation
// the server decided calls it too (its fetched packs add up all the same).
func (s *Store) MaybeGC() {
	if s.holdsExclusive() {
		s.maybeGCLocked()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one try, no waiting
	unlock, err := s.Lock(ctx, true)
	if err != nil {
		return
	}
	defer unlock()
	s.maybeGCLocked()
}

// gcDue reports whether the automatic GC is due: after gcEvery commits or
// maxOwnPacks packs, each made up to twice as many by spread (in [0,1)).
// Clones that follow one busy server fetch the same commits at the same
// pace: with one threshold, their GCs all came within seconds of each
// other (64 clones: both cores saturated for a minute, renewals 10-20 s
// late, leases lost). A repository's spread is a hash of its folder
// (spreadOf), so each keeps its own phase.
func gcDue(st gcState, spread float64) bool {
	return st.commits >= gcEvery+int(spread*gcEvery) || len(st.cpacks) > maxOwnPacks+int(spread*maxOwnPacks)
}

// spreadOf places a repository's folder in [0,1).
func spreadOf(dir string) float64 {
	h := fnv.New32a()
	h.Write([]byte(dir))
	return float64(h.Sum32()) / (1 << 32)
}

func (s *Store) maybeGCLocked() {
	st, err := readGCState(s.commonDir)
	if err != nil || !gcDue(st, s.gcSpread) {
		return
	}
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	s.gcLocked(context.Background(), false)
}

// gcLocked does the work of GC; the caller holds the exclusive fence.
func (s *Store) gcLocked(ctx context.Context, withStats bool) (GCStats, error) {
	var stats GCStats
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return stats, fmt.Errorf("gitstore: gc needs the git command: %w", err)
	}
	objDir := filepath.Join(s.commonDir, "objects")
	packDir := filepath.Join(objDir, "pack")
	s.markTemp() // the state file is replaced through a temporary file
	if withStats {
		stats.LooseBefore, stats.SizeBefore = objectDirUsage(objDir)
	}
	st, err := readGCState(s.commonDir)
	if err != nil {
		return stats, fmt.Errorf("gitstore: gc state: %w", err)
	}
	if err := os.MkdirAll(packDir, 0o777); err != nil {
		return stats, err
	}
	prefix := filepath.Join(packDir, "pack")

	// 1. Pack what was committed since the last GC.
	var newPack Hash
	head, err := s.Head()
	if err != nil {
		return stats, err
	}
	if !head.IsZero() {
		packArgs := []string{"pack-objects", "--revs", "--incremental", "--non-empty", "--local", "--delta-base-offset", deltaWindow, deltaDepth, "-q", prefix}
		in := head.String() + "\n"
		if !st.packed.IsZero() && st.packed != head {
			in += "^" + st.packed.String() + "\n"
		}
		out, err := s.runGit(ctx, gitBin, in, packArgs...)
		if err != nil && !st.packed.IsZero() {
			// The last packed head may be gone (ref rewritten, then
			// pruned by git gc): pack the whole history instead.
			out, err = s.runGit(ctx, gitBin, head.String()+"\n", packArgs...)
		}
		if err != nil {
			return stats, err
		}
		if name := strings.TrimSpace(out); plumbing.IsHash(name) {
			newPack = plumbing.NewHash(name)
			st.packs = append(st.packs, newPack)
		}
		st.packed = head
	}
	if err := syncDir(packDir); err != nil {
		return stats, err
	}
	st.commits = 0
	// Record the new pack before anything else can fail.
	if err := writeGCState(s.commonDir, st); err != nil {
		return stats, err
	}

	// 2. Drop the loose copies of what was just packed (the pack is
	// durable: pack-objects fsyncs it, and its directory was synced).
	// Unlike `git prune-packed`, this touches only those objects and
	// leaves the objects/xx directories in place: the next commits
	// would otherwise re-create (and fsync) them one by one.
	if !newPack.IsZero() {
		if idx, err := readPackIndex(objDir, newPack); err == nil {
			for i := 0; i < idx.count(); i++ {
				os.Remove(s.odb.loosePath(idx.name(i)))
			}
			idx.unmap()
		}
	}

	// 3. Merge the packs commits wrote into one (their objects, with
	// deltas between them), then keep gitstore's packs geometric.
	if err := s.mergeCommitPacks(ctx, gitBin, objDir, prefix, &st); err != nil {
		return stats, err
	}
	// When packs are merged, also drop every loose object that is in
	// some pack (such as objects written again after the user's git gc
	// packed them): prunePacked.
	st.packs = existingPacks(objDir, st.packs)
	merged, err := s.consolidate(ctx, gitBin, objDir, prefix, &st)
	if err != nil {
		return stats, err
	}
	if withStats {
		// An explicit GC computes every delta afresh, in one pack: the
		// merges above keep (reuse) the deltas each batch of commits found
		// within itself, where most records have a single version and so
		// no base but another record's (3,000 mutations: 5.9 MB of objects,
		// 4.5 MB after git's fresh deltas, 3.6 MB after deltaPack's).
		if err := s.repackAll(ctx, gitBin, objDir, prefix, &st); err != nil {
			return stats, err
		}
		merged = true
	}
	if merged || withStats {
		prunePacked(objDir)
	}
	if err := writeGCState(s.commonDir, st); err != nil {
		return stats, err
	}

	s.mu.Lock()
	if !s.closed {
		s.odb.refresh()
	}
	s.mu.Unlock()
	s.cleanRefLockTwins()
	removeStaleTmpFiles(objDir)

	if withStats {
		stats.LooseAfter, stats.SizeAfter = objectDirUsage(objDir)
	}
	if names, err := filepath.Glob(filepath.Join(packDir, "pack-*.pack")); err == nil {
		stats.Packs = len(names)
	}
	return stats, nil
}

// mergeCommitPacks rewrites the packs commits wrote into one pack listed
// with GC's packs (a single one is just listed), and deletes them.
func (s *Store) mergeCommitPacks(ctx context.Context, gitBin, objDir, prefix string, st *gcState) error {
	cpacks := existingPacks(objDir, st.cpacks)
	if len(cpacks) <= 1 {
		st.packs = append(st.packs, cpacks...)
		st.cpacks = nil
		return writeGCState(s.commonDir, *st)
	}
	merged, err := s.repack(ctx, gitBin, objDir, prefix, cpacks, false)
	if err != nil {
		return err
	}
	st.packs = append(st.packs, merged)
	st.cpacks = nil
	// Record the merged pack before deleting the old ones.
	if err := writeGCState(s.commonDir, *st); err != nil {
		return err
	}
	for _, p := range cpacks {
		if p != merged {
			removePack(objDir, p)
		}
	}
	return nil
}

// repack writes the objects of packs into one new pack with `git
// pack-objects`, fed the exact list of their objects (so none can be lost,
// whatever points to it; existing deltas are reused), and returns its name
// once it is durable. The old packs are left for the caller to delete.
func (s *Store) repack(ctx context.Context, gitBin, objDir, prefix string, packs []Hash, fresh bool) (Hash, error) {
	set := map[Hash]bool{}
	var list []Hash
	for _, p := range packs {
		idx, err := readPackIndex(objDir, p)
		if err != nil {
			return ZeroHash, err
		}
		for i := 0; i < idx.count(); i++ {
			if h := idx.name(i); !set[h] {
				set[h] = true
				list = append(list, h)
			}
		}
		idx.unmap()
	}
	// Each object with the path it has in the history, when the walk finds
	// one: pack-objects looks for an object's delta base among objects of
	// the same name (the other versions of the same file or tree), and
	// pairs unnamed ones by size alone (3,000 mutations: 3.8 MB instead of
	// 4.9 of pack; trees, many of them a few bytes apart in size, most).
	// In the order git's rev-list --objects gives them (newest commit
	// first, each followed by the trees and blobs it adds), which
	// pack-objects takes as their recency: the same objects in the order
	// of the packs' indexes made a pack 1.8 times as big.
	order, names := s.pathNames(set)
	var in strings.Builder
	listed := make(map[Hash]bool, len(set))
	for _, h := range append(order, list...) {
		if listed[h] {
			continue
		}
		listed[h] = true
		in.WriteString(h.String())
		if n, ok := names[h]; ok && n != "" {
			in.WriteByte(' ')
			in.WriteString(n)
		}
		in.WriteByte('\n')
	}
	args := []string{"-c", "pack.compression=9", "pack-objects", "--non-empty", "--local", "--delta-base-offset", deltaWindow, deltaDepth, "-q"}
	if fresh {
		args = append(args, "--no-reuse-delta")
	}
	out, err := s.runGit(ctx, gitBin, in.String(), append(args, prefix)...)
	if err != nil {
		return ZeroHash, err
	}
	name := strings.TrimSpace(out)
	if !plumbing.IsHash(name) {
		return ZeroHash, fmt.Errorf("gitstore: gc: pack-objects printed %q", truncate(name, 60))
	}
	if err := syncDir(filepath.Dir(prefix)); err != nil {
		return ZeroHash, err
	}
	return plumbing.NewHash(name), nil
}

// repackAll rewrites gitstore's packs (but .keep ones) into one, every
// delta computed afresh, and deletes them.
func (s *Store) repackAll(ctx context.Context, gitBin, objDir, prefix string, st *gcState) error {
	var all, keep []Hash
	for _, p := range existingPacks(objDir, st.packs) {
		if fileExists(packPath(objDir, p, ".keep")) {
			keep = append(keep, p)
		} else {
			all = append(all, p)
		}
	}
	if len(all) == 0 {
		return nil
	}
	merged, err := s.deltaPack(ctx, objDir, all)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Git's delta search is the fallback (a pack over 2 GiB, which
		// the index written here cannot address).
		if merged, err = s.repack(ctx, gitBin, objDir, prefix, all, true); err != nil {
			return err
		}
	}
	st.packs = append(keep, merged)
	if err := writeGCState(s.commonDir, *st); err != nil {
		return err
	}
	for _, p := range all {
		if p != merged {
			removePack(objDir, p)
		}
	}
	return nil
}

// deltaPack writes the objects of packs into one new pack with deltas
// computed afresh (packwrite.go), in the order and with the names of
// pathNames, and returns its name once it is durable. The old packs are
// left for the caller to delete. The pack is made in memory, with each
// object's compressed form as the search chose it until it is written:
// about twice the pack at its peak (20,000 mutations: 18 MB).
func (s *Store) deltaPack(ctx context.Context, objDir string, packs []Hash) (Hash, error) {
	set := map[Hash]bool{}
	var list []Hash
	for _, p := range packs {
		idx, err := readPackIndex(objDir, p)
		if err != nil {
			return ZeroHash, err
		}
		for i := 0; i < idx.count(); i++ {
			if h := idx.name(i); !set[h] {
				set[h] = true
				list = append(list, h)
			}
		}
		idx.unmap()
	}
	order, names := s.pathNames(set)
	// The pack's order, and its objects grouped for the delta search (a
	// path's versions; the unnamed objects, mostly commits, together),
	// each group in that order (packwrite.go).
	var ordered []Hash
	var groups [][]int
	group := map[string]int{}
	listed := make(map[Hash]bool, len(set))
	for _, h := range append(order, list...) {
		if listed[h] {
			continue
		}
		listed[h] = true
		key := ""
		if name, ok := names[h]; ok {
			key = "/" + name
		}
		g, ok := group[key]
		if !ok {
			g = len(groups)
			group[key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], len(ordered))
		ordered = append(ordered, h)
	}
	plans := make([]deltaPlan, len(ordered))
	ds := newDeltaSearch()
	done := 0
	for _, g := range groups {
		ds.group()
		for _, i := range g {
			if done++; done%1024 == 0 && ctx.Err() != nil {
				return ZeroHash, ctx.Err()
			}
			h := ordered[i]
			s.mu.Lock()
			typ, data, err := s.odb.read(h)
			s.mu.Unlock()
			if err != nil {
				return ZeroHash, err
			}
			if plans[i], err = ds.plan(i, deltaObject{hash: h, typ: typ, data: data, kind: deltaKind(typ, data, names[h])}); err != nil {
				return ZeroHash, err
			}
		}
	}
	pack, idx, name, err := writeDeltaPack(plans)
	if err != nil {
		return ZeroHash, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.odb.installPack(name, pack, idx); err != nil {
		return ZeroHash, err
	}
	return name, nil
}

// deltaKind is the kind of objects an object is tried as a delta of: a
// tree or blob's path in the history (by type alone when the walk did not
// name it), a commit's first word of its message (commits of one kind
// share their message's shape).
func deltaKind(typ plumbing.ObjectType, data []byte, name string) string {
	if typ == plumbing.CommitObject {
		msg := data
		if i := bytes.Index(msg, []byte("\n\n")); i >= 0 {
			msg = msg[i+2:]
		}
		if i := bytes.IndexAny(msg, " \n"); i >= 0 {
			msg = msg[:i]
		}
		return "commit " + string(msg)
	}
	return typ.String() + " " + name
}

// pathNames names the trees and blobs of set by the path where the state
// ref's first-parent history adds them: from the head back, each commit of
// set has its tree compared with its parent's, and the objects it adds are
// named by their path (the root tree by ""). The walk stops past the
// commits of set (pathNameGap commits after the last one met), or after
// pathNameSteps more commits than set has objects; objects it does not
// reach keep no name (pack-objects still packs them).
func (s *Store) pathNames(set map[Hash]bool) (order []Hash, names map[Hash]string) {
	names = map[Hash]string{}
	head, err := s.Head()
	if err != nil {
		return nil, names
	}
	met, gap := false, 0
	for c, steps := head, 0; !c.IsZero() && steps < len(set)+pathNameSteps; steps++ {
		s.mu.Lock()
		cd, err := s.readCommit(c)
		var parentTree Hash
		if err == nil && len(cd.parents) > 0 {
			if pc, perr := s.readCommit(cd.parents[0]); perr == nil {
				parentTree = pc.tree
			}
		}
		s.mu.Unlock()
		if err != nil {
			break
		}
		if set[c] {
			met, gap = true, 0
			order = append(order, c)
			if s.nameTree(parentTree, cd.tree, "", set, names, &order) != nil {
				break
			}
		} else if met {
			if gap++; gap > pathNameGap {
				break
			}
		}
		c = ZeroHash
		if len(cd.parents) > 0 {
			c = cd.parents[0]
		}
	}
	return order, names
}

const (
	pathNameGap   = 64
	pathNameSteps = 1000
)

// nameTree names, under prefix, tree b and the trees and blobs of set it
// has that tree a (ZeroHash: none) has not at the same name, appending
// them to order as it names them.
func (s *Store) nameTree(a, b Hash, prefix string, set map[Hash]bool, names map[Hash]string, order *[]Hash) error {
	if a == b {
		return nil
	}
	if _, ok := names[b]; !ok && set[b] {
		names[b] = prefix
		*order = append(*order, b)
	}
	ta, err := s.loadTreeUnlocked(a)
	if err != nil {
		return err
	}
	tb, err := s.loadTreeUnlocked(b)
	if err != nil {
		return err
	}
	old := make(map[string]Hash, len(ta.entries))
	for _, e := range ta.entries {
		if e.isDir() {
			old[e.name+"/"] = e.hash
		} else {
			old[e.name] = e.hash
		}
	}
	for _, e := range tb.entries {
		p := e.name
		if prefix != "" {
			p = prefix + "/" + e.name
		}
		switch {
		case e.isDir():
			if prev := old[e.name+"/"]; prev != e.hash {
				if err := s.nameTree(prev, e.hash, p, set, names, order); err != nil {
					return err
				}
			}
		case e.isBlob():
			if _, ok := names[e.hash]; !ok && set[e.hash] && old[e.name] != e.hash {
				names[e.hash] = p
				*order = append(*order, e.hash)
			}
		}
	}
	return nil
}

// existingPacks keeps the packs whose .pack and .idx files exist.
func existingPacks(objDir string, packs []Hash) []Hash {
	var out []Hash
	seen := map[Hash]bool{}
	for _, p := range packs {
		if seen[p] {
			continue
		}
		seen[p] = true
		if fileExists(packPath(objDir, p, ".pack")) && fileExists(packPath(objDir, p, ".idx")) {
			out = append(out, p)
		}
	}
	return out
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// consolidate merges the smallest gitstore packs when the pack sizes are
// no longer a geometric progression of ratio 2, and reports whether it did.
// Delta search for gc's packs. A store's objects are many small versions of
// the same few files and trees, so a wider window than git's default (10)
// finds much better bases; measured on 2,000 todo adds, the window alone
// took a full repack from 824 to about 700 bytes per mutation.
const (
	deltaWindow = "--window=50"
	deltaDepth  = "--depth=50"
)

func (s *Store) consolidate(ctx context.Context, gitBin, objDir, prefix string, st *gcState) (bool, error) {
	type packSize struct {
		name Hash
		size int64
	}
	var cands []packSize
	var keep []Hash // .keep packs: never rewritten
	for _, p := range st.packs {
		fi, err := os.Stat(packPath(objDir, p, ".pack"))
		if err != nil {
			continue
		}
		if fileExists(packPath(objDir, p, ".keep")) {
			keep = append(keep, p)
			continue
		}
		cands = append(cands, packSize{p, fi.Size()})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].size < cands[j].size })
	sizes := make([]int64, len(cands))
	for i, c := range cands {
		sizes[i] = c.size
	}
	n := geometricSplit(sizes)
	if n < 2 {
		return false, nil
	}
	var small []Hash
	for _, c := range cands[:n] {
		small = append(small, c.name)
	}
	merged, err := s.repack(ctx, gitBin, objDir, prefix, small, false)
	if err != nil {
		return false, err
	}
	packs := append([]Hash{}, keep...)
	for _, c := range cands[n:] {
		packs = append(packs, c.name)
	}
	packs = append(packs, merged)
	// Record the merged pack before deleting the old ones.
	st.packs = packs
	if err := writeGCState(s.commonDir, *st); err != nil {
		return false, err
	}
	for _, c := range cands[:n] {
		if c.name != merged {
			removePack(objDir, c.name)
		}
	}
	return true, nil
}

// geometricSplit returns how many of the smallest packs (sizes ascending)
// to merge so that every remaining pack is at least twice the size of all
// smaller packs together.
func geometricSplit(sizes []int64) int {
	prefix := make([]int64, len(sizes)+1)
	for i, sz := range sizes {
		prefix[i+1] = prefix[i] + sz
	}
	split := 0
	for k := len(sizes) - 1; k >= 0; k-- {
		if sizes[k] < 2*prefix[k] {
			split = k + 1
			break
		}
	}
	return split
}

// removePack deletes a pack the way git does (the .idx, which makes the
// pack visible, last).
func removePack(objDir string, name Hash) {
	for _, ext := range []string{".pack", ".rev", ".bitmap", ".mtimes", ".promisor", ".idx"} {
		os.Remove(packPath(objDir, name, ext))
	}
}

// objectDirUsage counts loose objects and sums the disk usage (allocated
// blocks, like du) of the object directory.
func objectDirUsage(objDir string) (loose int, size int64) {
	filepath.WalkDir(objDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		size += diskUsage(fi)
		dir := filepath.Base(filepath.Dir(p))
		if len(dir) == 2 && len(d.Name()) == 38 && plumbing.IsHash(dir+d.Name()) {
			loose++
		}
		return nil
	})
	return loose, size
}

// runGit runs the git CLI on the common dir and returns its stdout.
func (s *Store) runGit(ctx context.Context, gitBin, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, gitBin, append([]string{"--git-dir=" + s.commonDir}, args...)...)
	cmd.Env = gitEnv()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("gitstore: git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// gitEnv is the environment without the variables that would point git at
// another repository (as set inside git hooks).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
			"GIT_QUARANTINE_PATH":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// prunePacked removes every loose object of objDir that one of its packs
// holds, as `git prune-packed` does, but leaves the objects/xx
// directories in place. git prune-packed removes each directory it
// empties, and a git process writing an object at that moment fails:
// git creates a missing objects/xx once, then its temporary file in it,
// and a rmdir between the two leaves it with "unable to create temporary
// file: No such file or directory" (seen once in CI: TestInterop's
// `git commit-tree` against a store's GC). A pack whose index this
// reader cannot parse keeps its loose twins; that costs space, never an
// object.
func prunePacked(objDir string) {
	var idxs []*packIndex
	for _, f := range packIndexes(objDir) {
		if idx, err := readPackIndex(objDir, f.name); err == nil {
			idxs = append(idxs, idx)
		}
	}
	defer func() {
		for _, idx := range idxs {
			idx.unmap()
		}
	}()
	if len(idxs) == 0 {
		return
	}
	for i := 0; i < 256; i++ {
		prefix := fmt.Sprintf("%02x", i)
		sub := filepath.Join(objDir, prefix)
		names, err := os.ReadDir(sub)
		if err != nil {
			continue
		}
		for _, e := range names {
			hex := prefix + e.Name()
			h := plumbing.NewHash(hex)
			if len(e.Name()) != 38 || h.String() != hex {
				continue // a temporary file, or not an object
			}
			for _, idx := range idxs {
				if idx.find(h) >= 0 {
					os.Remove(filepath.Join(sub, e.Name()))
					break
				}
			}
		}
	}
}
