package gitstore

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// A commit's objects are written as one small pack (pack v2, whole
// objects, index v2) rather than as loose objects: two new files instead
// of one per object (a todo add with its board is about a dozen objects).
// Creating and fsyncing files is what a commit costs on most file systems,
// so this is most of a commit's time. The pack is named in the GC state
// file, so that GC merges these packs geometrically with the others (see
// gc.go), and readers find it like any pack.

// packMin is the fewest new objects written as a pack; fewer are loose.
const packMin = 2

// encodePack returns the pack (version 2, whole objects) and index
// (version 2) bytes of objs, distinct objects, and the pack's name (the
// checksum of its contents, as git names packs). Push sends the pack alone.
func encodePack(objs []newObject) (pack, idx []byte, name Hash, err error) {
	b := newPackBuilder(len(objs))
	for _, o := range objs {
		if _, err := b.addWhole(o.hash, o.typ, o.data); err != nil {
			return nil, nil, ZeroHash, err
		}
	}
	return b.finish()
}

// packBuilder writes a pack (version 2) in memory, object by object, and
// its index (version 2). Objects are whole or deltas against an object
// written before them (OFS_DELTA: the base's offset, relative).
type packBuilder struct {
	pb      bytes.Buffer
	entries []packEntry
}

type packEntry struct {
	hash   Hash
	offset uint32
	crc    uint32
}

func newPackBuilder(n int) *packBuilder {
	b := &packBuilder{entries: make([]packEntry, 0, n)}
	b.pb.WriteString("PACK")
	binary.Write(&b.pb, binary.BigEndian, uint32(2))
	binary.Write(&b.pb, binary.BigEndian, uint32(n))
	return b
}

// header writes an object header: 3 bits of type and the size's low 4
// bits, then 7 bits at a time, high bit meaning "more". It returns the
// object's offset.
func (b *packBuilder) header(t byte, size uint64) (int64, error) {
	start := b.pb.Len()
	if int64(start) >= 1<<31 {
		return 0, errors.New("gitstore: pack too large")
	}
	c := t<<4 | byte(size&0x0f)
	size >>= 4
	for size != 0 {
		b.pb.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	b.pb.WriteByte(c)
	return int64(start), nil
}

// addWhole writes an object whole, compressing its content, and returns
// its offset.
func (b *packBuilder) addWhole(h Hash, typ plumbing.ObjectType, data []byte) (int64, error) {
	return b.whole(h, typ, len(data), func() error { return deflateTo(&b.pb, data) })
}

// addWholeZ writes an object of size bytes whole, z its content
// zlib-compressed, and returns its offset.
func (b *packBuilder) addWholeZ(h Hash, typ plumbing.ObjectType, size int, z []byte) (int64, error) {
	return b.whole(h, typ, size, func() error { _, err := b.pb.Write(z); return err })
}

// whole writes the header of a whole object of size bytes, then its
// compressed content (body), and notes it.
func (b *packBuilder) whole(h Hash, typ plumbing.ObjectType, size int, body func() error) (int64, error) {
	// plumbing's object type numbers are the pack's.
	t := byte(typ)
	if t < packCommit || t > packTag {
		return 0, fmt.Errorf("gitstore: cannot pack object type %v", typ)
	}
	start, err := b.header(t, uint64(size))
	if err != nil {
		return 0, err
	}
	if err := body(); err != nil {
		return 0, err
	}
	b.note(h, start)
	return start, nil
}

// addDelta writes an object as a delta (z: the delta, zlib-compressed, of
// deltaLen bytes) against the object at baseOff, and returns its offset.
func (b *packBuilder) addDelta(h Hash, baseOff int64, deltaLen int, z []byte) (int64, error) {
	start, err := b.header(packOFSDelta, uint64(deltaLen))
	if err != nil {
		return 0, err
	}
	if baseOff >= start {
		return 0, fmt.Errorf("gitstore: delta base at %d is not before the object at %d", baseOff, start)
	}
	b.pb.Write(ofsDeltaOffset(start - baseOff))
	b.pb.Write(z)
	b.note(h, start)
	return start, nil
}

// ofsDeltaOffset encodes the distance back to an OFS_DELTA's base: 7 bits
// a byte, most significant first, each continued byte's value one less
// (git's encoding, which has no two spellings of one distance).
func ofsDeltaOffset(d int64) []byte {
	var buf [10]byte
	i := len(buf) - 1
	buf[i] = byte(d & 0x7f)
	for d >>= 7; d != 0; d >>= 7 {
		d--
		i--
		buf[i] = 0x80 | byte(d&0x7f)
	}
	return buf[i:]
}

func (b *packBuilder) note(h Hash, start int64) {
	b.entries = append(b.entries, packEntry{hash: h, offset: uint32(start), crc: crc32.ChecksumIEEE(b.pb.Bytes()[start:])})
}

// finish returns the pack, its index and its name.
func (b *packBuilder) finish() (pack, idx []byte, name Hash, err error) {
	if uint32(len(b.entries)) != binary.BigEndian.Uint32(b.pb.Bytes()[8:12]) {
		return nil, nil, ZeroHash, fmt.Errorf("gitstore: pack of %d objects announced %d", len(b.entries), binary.BigEndian.Uint32(b.pb.Bytes()[8:12]))
	}
	pb, entries := &b.pb, b.entries
	sum := sha1.Sum(pb.Bytes())
	pb.Write(sum[:])
	copy(name[:], sum[:])

	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].hash[:], entries[j].hash[:]) < 0 })
	var ib bytes.Buffer
	ib.Write([]byte{0xff, 't', 'O', 'c'})
	binary.Write(&ib, binary.BigEndian, uint32(2))
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.hash[0]]++
	}
	for i := 1; i < 256; i++ {
		fanout[i] += fanout[i-1]
	}
	binary.Write(&ib, binary.BigEndian, fanout[:])
	for _, e := range entries {
		ib.Write(e.hash[:])
	}
	for _, e := range entries {
		binary.Write(&ib, binary.BigEndian, e.crc)
	}
	for _, e := range entries {
		binary.Write(&ib, binary.BigEndian, e.offset)
	}
	ib.Write(sum[:])
	isum := sha1.Sum(ib.Bytes())
	ib.Write(isum[:])
	return pb.Bytes(), ib.Bytes(), name, nil
}

// deflateTo writes data zlib-compressed to w.
func deflateTo(w io.Writer, data []byte) error {
	zw := zlibWriters.Get().(interface {
		io.WriteCloser
		Reset(io.Writer)
	})
	defer zlibWriters.Put(zw)
	zw.Reset(w)
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// writePacked stores the objects of objs that do not exist yet as one new
// pack (loose when fewer than packMin), durable before it returns, like
// write; the extra files are fsynced in the same round. The pack is named
// in the GC state file. Callers hold the exclusive fence. OS-level
// failures wrap ErrIO; nothing written is left behind.
func (db *objectDB) writePacked(objs []newObject, extra ...*os.File) (err error) {
	defer func() { err = ioError(err) }()
	var todo []newObject
	seen := map[Hash]bool{}
	for _, o := range objs {
		if seen[o.hash] || db.has(o.hash) {
			continue
		}
		seen[o.hash] = true
		todo = append(todo, o)
	}
	if len(todo) < packMin || db.looseOnly {
		return db.write(todo, extra...)
	}
	pack, idx, name, err := encodePack(todo)
	if err != nil {
		return err
	}
	if err := db.installPack(name, pack, idx, extra...); err != nil {
		return err
	}
	db.notePack(name)
	return nil
}

// installPack writes a pack and its index under their final names, with
// the extra files fsynced in the same round: both are written as loopx
// temporary files, fsynced, renamed (the pack first: readers look for packs
// by their index, so a pack is never seen without its data) and their
// directory fsynced. OS-level failures wrap ErrIO; nothing written is left
// behind.
func (db *objectDB) installPack(name Hash, pack, idx []byte, extra ...*os.File) (err error) {
	defer func() { err = ioError(err) }()
	packDir := filepath.Join(db.objDir, "pack")
	created := false
	if _, err := os.Stat(packDir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(packDir, 0o777); err != nil {
			return err
		}
		created = true
	}
	n := tmpCounter.Add(1)
	tmps := []string{
		filepath.Join(packDir, fmt.Sprintf("%s%d_%d", tmpPackPrefix, os.Getpid(), n)),
		filepath.Join(packDir, fmt.Sprintf("%s%d_%d", tmpIdxPrefix, os.Getpid(), n)),
	}
	finals := []string{packPath(db.objDir, name, ".pack"), packPath(db.objDir, name, ".idx")}
	files := make([]*os.File, 2)
	defer func() {
		for i, f := range files {
			if f != nil {
				f.Close()
				os.Remove(tmps[i])
			}
		}
	}()
	db.markTemp()
	for i, data := range [][]byte{pack, idx} {
		f, err := os.OpenFile(tmps[i], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return err
		}
		files[i] = f
		if err := injected([]string{"objects", "pack-index"}[i], "write", tmps[i]); err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
	}
	db.markTemp()
	hook("pack-temp-written")
	all := append(files[:2:2], extra...)
	if err := parallel(len(all), func(i int) error {
		if i == 0 {
			if err := injected("fsync", "sync", all[i].Name()); err != nil {
				return err
			}
		}
		if db.noSync {
			return nil
		}
		return all[i].Sync()
	}); err != nil {
		return err
	}
	for i, f := range files {
		err := f.Close()
		files[i] = nil
		if err != nil {
			os.Remove(tmps[0])
			os.Remove(tmps[1])
			return err
		}
	}
	// The pack first, then its index: git (and loadPacks) look for packs
	// by their index, so a pack is never seen without its data.
	if err := injected("pack-rename", "rename", tmps[0]); err != nil {
		os.Remove(tmps[0])
		os.Remove(tmps[1])
		return err
	}
	if err := os.Rename(tmps[0], finals[0]); err != nil {
		os.Remove(tmps[0])
		os.Remove(tmps[1])
		return err
	}
	if err := os.Rename(tmps[1], finals[1]); err != nil {
		os.Remove(tmps[1])
		os.Remove(finals[0])
		return err
	}
	if !db.noSync {
		if err := syncDir(packDir); err != nil {
			return err
		}
		if created {
			if err := syncDir(db.objDir); err != nil {
				return err
			}
		}
	}
	return nil
}

// notePack names a pack just written in the GC state file (appending a
// line in place: no new file) and makes it visible to this reader.
func (db *objectDB) notePack(name Hash) {
	line := []byte("cpack " + name.String() + "\n")
	stateFile := filepath.Join(db.commonDir, gcStateFile)
	if f, err := os.OpenFile(stateFile, os.O_WRONLY, 0); err == nil {
		_, err = f.Seek(0, io.SeekEnd)
		if err == nil {
			_, err = f.Write(line)
		}
		f.Close()
	} else if st, err := readGCState(db.commonDir); err == nil {
		st.cpacks = append(st.cpacks, name)
		writeGCState(db.commonDir, st)
	}
	if db.packsLoaded && !db.listed[name] {
		if p, err := openPack(db.objDir, name, db.deltaCache); err == nil {
			db.listed[name] = true
			db.packs = append([]*packReader{p}, db.packs...)
		}
	}
}

// removeStaleTmpFiles removes what writers that died left behind, once it
// is an hour old (a live writer holds the fence and finishes within
// milliseconds; git's own writers finish within seconds): loopx's temporary
// pack, index and loose object files, and packs without an index (a crash
// between a pack's two renames; git never reads such a pack).
func removeStaleTmpFiles(objDir string) {
	packDir := filepath.Join(objDir, "pack")
	var names []string
	for _, pat := range []string{
		filepath.Join(packDir, tmpPackPrefix+"*"),
		filepath.Join(packDir, tmpIdxPrefix+"*"),
		filepath.Join(packDir, tmpObjPrefix+"*"),
		filepath.Join(packDir, tmpFetchPrefix+"*"),
		filepath.Join(objDir, "??", tmpObjPrefix+"*"), // made there before loopx kept them all in objects/pack
	} {
		found, _ := filepath.Glob(pat)
		names = append(names, found...)
	}
	packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
	for _, p := range packs {
		if _, err := os.Stat(strings.TrimSuffix(p, ".pack") + ".idx"); errors.Is(err, os.ErrNotExist) {
			names = append(names, p)
		}
	}
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(n)
		}
	}
}

// The explicit GC's pack (gc.go) is written here rather than by git
// pack-objects, because git refuses a delta unless it is less than half
// the object's size minus 20 bytes (pack-objects' try_delta): a store's
// small trees (a root or bucket tree of one or two entries, 50 to 100
// bytes, one hash changed) and its board commits (three hashes changed)
// never pass, though their delta compresses to half of the whole object.
// Here an object is stored as a delta whenever that is smaller once
// compressed, against the best of the last deltaCandidates objects of the
// same kind written before it (its other versions: the same path in the
// history, or, for commits, the same first word of the message), with
// deltas encoded by delta.go.
//
// The search runs one group of objects at a time (a path's versions, or
// the commits: deltaPack, gc.go), each group's objects in the pack's
// order, and keeps only that group's candidate bases: the pack's order
// interleaves the paths (newest first, by commit), and bases kept across
// all of them outgrew any memory bound at 20,000 mutations on 100 todos
// (lease records of 7 KB: the bases of the paths used longest ago were
// forgotten before their next version came, and 4,824 versions were
// written whole, 1,602 B a mutation instead of 1,204). A delta's base is
// an earlier object of its group, so it is earlier in the pack too, and
// the objects are then written in the pack's order (writeDeltaPack).

const (
	// deltaCandidates is how many earlier objects of one kind are tried as
	// a delta base (git's window, per kind). More find a shorter delta
	// now and then, but a deeper one: 3,000 mutations packed 1.6% larger
	// with 16 than with 4.
	deltaCandidates = 4
	// maxDeltaDepth bounds delta chains. Git's default, 50, stores a tree
	// of a hundred buckets (2.4 KB, one hash changed per version) whole
	// every 50 versions: 40 bytes a version, as much as its delta. A read
	// pays one delta per level (the head's objects come first in the pack
	// and are whole), with the intermediate results cached (pack.go).
	maxDeltaDepth = 250
	// deltaKeepBytes bounds the memory of one group's candidate bases
	// (their contents and indexes); past it, the kinds used longest ago
	// are forgotten (a group of several kinds: the commits).
	deltaKeepBytes = 16 << 20
)

// deltaObject is one object of a delta pack: kind names the objects it may
// be a delta of ("" for none).
type deltaObject struct {
	hash Hash
	typ  plumbing.ObjectType
	data []byte
	kind string
}

// deltaPlan is how the search chose to write one object: whole (base -1)
// or as a delta of the object at index base in the pack's order; z is the
// content or the delta, zlib-compressed, of size bytes.
type deltaPlan struct {
	hash Hash
	typ  plumbing.ObjectType
	size int
	base int
	z    []byte
}

// deltaSearch chooses, one group at a time, how each object is written.
type deltaSearch struct {
	zw     *zlib.Writer
	kinds  map[string]*deltaKindBases
	kept   int
	tick   int
	zWhole bytes.Buffer
	zDelta bytes.Buffer
}

type deltaKindBases struct {
	bases []*deltaBase
	used  int // tick of the last use
}

type deltaBase struct {
	at    int // index in the pack's order
	data  []byte
	typ   plumbing.ObjectType
	depth int
	index *deltaIndex // built when first tried
}

// cost is the memory a base holds (its content and, once built, its
// index: two int32 slices the size of the content, rounded up).
func (b *deltaBase) cost() int {
	if b.index == nil {
		return len(b.data)
	}
	return len(b.data) + 4*(len(b.index.head)+len(b.index.next))
}

func newDeltaSearch() *deltaSearch {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestCompression)
	return &deltaSearch{zw: zw, kinds: map[string]*deltaKindBases{}}
}

func (d *deltaSearch) deflate(dst *bytes.Buffer, data []byte) error {
	dst.Reset()
	d.zw.Reset(dst)
	if _, err := d.zw.Write(data); err != nil {
		return err
	}
	return d.zw.Close()
}

// group starts a new group: no base of the last one is tried again.
func (d *deltaSearch) group() {
	clear(d.kinds)
	d.kept = 0
}

// plan chooses how o, the object at index at in the pack's order, is
// written: whole, or as the smallest delta against a candidate base of
// its kind in this group.
func (d *deltaSearch) plan(at int, o deltaObject) (deltaPlan, error) {
	if err := d.deflate(&d.zWhole, o.data); err != nil {
		return deltaPlan{}, err
	}
	d.tick++
	k := d.kinds[o.kind]
	var best *deltaBase
	var bestDelta []byte
	if k != nil && o.kind != "" {
		k.used = d.tick
		for _, c := range k.bases {
			// A reader with a size limit refuses a base over maxDeltaBase
			// times the object (pack.go); git makes no such delta either.
			// Nor is an empty base one (go-git's patcher refuses it).
			if c.typ != o.typ || c.depth >= maxDeltaDepth || len(c.data) == 0 || len(c.data) > maxDeltaBase*max(len(o.data), 1) {
				continue
			}
			if c.index == nil {
				before := c.cost()
				c.index = newDeltaIndex(c.data)
				d.kept += c.cost() - before
			}
			if delta := c.index.encodeDelta(o.data); best == nil || len(delta) < len(bestDelta) {
				best, bestDelta = c, delta
			}
		}
	}
	if best != nil && len(bestDelta) < len(o.data) {
		if err := d.deflate(&d.zDelta, bestDelta); err != nil {
			return deltaPlan{}, err
		}
	}
	p := deltaPlan{hash: o.hash, typ: o.typ, size: len(o.data), base: -1}
	depth := 0
	// The delta's header adds its base's distance (up to 4 bytes in a
	// pack under 2 GiB) to the whole object's header.
	if best != nil && len(bestDelta) < len(o.data) && d.zDelta.Len()+4 < d.zWhole.Len() {
		p.size, p.base, p.z = len(bestDelta), best.at, bytes.Clone(d.zDelta.Bytes())
		depth = best.depth + 1
	} else {
		p.z = bytes.Clone(d.zWhole.Bytes())
	}
	if o.kind == "" {
		return p, nil
	}
	if k == nil {
		k = &deltaKindBases{used: d.tick}
		d.kinds[o.kind] = k
	}
	if len(k.bases) >= deltaCandidates {
		d.kept -= k.bases[0].cost()
		k.bases = append(k.bases[:0], k.bases[1:]...)
	}
	nb := &deltaBase{at: at, data: o.data, typ: o.typ, depth: depth}
	k.bases = append(k.bases, nb)
	d.kept += nb.cost()
	if d.kept > deltaKeepBytes {
		d.forget()
	}
	return p, nil
}

// forget drops the bases of the kinds used longest ago until half the
// budget is free.
func (d *deltaSearch) forget() {
	type ku struct {
		kind string
		used int
	}
	var all []ku
	for name, k := range d.kinds {
		all = append(all, ku{name, k.used})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used < all[j].used })
	for _, e := range all {
		if d.kept <= deltaKeepBytes/2 {
			break
		}
		for _, b := range d.kinds[e.kind].bases {
			d.kept -= b.cost()
		}
		delete(d.kinds, e.kind)
	}
}

// writeDeltaPack writes the planned objects in their order (each delta's
// base is before it) as one pack, and returns it, its index and its name.
func writeDeltaPack(plans []deltaPlan) (pack, idx []byte, name Hash, err error) {
	b := newPackBuilder(len(plans))
	offs := make([]int64, len(plans))
	for i := range plans {
		p := &plans[i]
		switch {
		case p.base < 0:
			offs[i], err = b.addWholeZ(p.hash, p.typ, p.size, p.z)
		case p.base < i:
			offs[i], err = b.addDelta(p.hash, offs[p.base], p.size, p.z)
		default:
			err = fmt.Errorf("gitstore: object %d's delta base %d is not before it", i, p.base)
		}
		if err != nil {
			return nil, nil, ZeroHash, err
		}
		p.z = nil // written: the pack holds it now
	}
	return b.finish()
}
