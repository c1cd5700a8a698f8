package gitstore

import (
	"bytes"
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
	var pb bytes.Buffer
	pb.WriteString("PACK")
	binary.Write(&pb, binary.BigEndian, uint32(2))
	binary.Write(&pb, binary.BigEndian, uint32(len(objs)))
	type entry struct {
		hash   Hash
		offset uint32
		crc    uint32
	}
	entries := make([]entry, len(objs))
	for i, o := range objs {
		start := pb.Len()
		if int64(start) >= 1<<31 {
			return nil, nil, ZeroHash, errors.New("gitstore: pack too large")
		}
		// plumbing's object type numbers are the pack's.
		t := byte(o.typ)
		if t < packCommit || t > packTag {
			return nil, nil, ZeroHash, fmt.Errorf("gitstore: cannot pack object type %v", o.typ)
		}
		// Type and size: 3 bits of type and the size's low 4 bits, then 7
		// bits at a time, high bit meaning "more".
		size := uint64(len(o.data))
		c := t<<4 | byte(size&0x0f)
		size >>= 4
		for size != 0 {
			pb.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		pb.WriteByte(c)
		if err := deflateTo(&pb, o.data); err != nil {
			return nil, nil, ZeroHash, err
		}
		entries[i] = entry{hash: o.hash, offset: uint32(start), crc: crc32.ChecksumIEEE(pb.Bytes()[start:])}
	}
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
	if db.packsLoaded {
		if p, err := openPack(db.objDir, name, db.deltaCache); err == nil {
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
