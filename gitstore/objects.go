package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// objectDB reads and writes the objects of one repository.
//
// Reads look, in order, at loose objects (read directly), at the packs
// gitstore's GC wrote (listed in loopx-gc-state; only their indexes are
// loaded, not the whole repository's), and finally at go-git's storage,
// which knows every pack and the alternates. When an object is not found,
// the pack lists are refreshed once and the lookup retried, because another
// process's GC may have moved loose objects into a new pack.
//
// Writes are fsynced before they become visible: a commit's objects as one
// small pack (packwrite.go), single objects loose.
//
// An objectDB is not goroutine-safe; Store.mu guards it.
type objectDB struct {
	commonDir string
	objDir    string
	repo      *git.Repository // fallback reader (the Store's)
	// envDirs are object folders the environment names (a pre-receive
	// hook's quarantine), read after objDir and never written
	// (quarantine.go).
	envDirs []string

	packsLoaded bool
	packs       []*packReader
	listed      map[Hash]bool // the names of packs (objDir's)
	envPacks    []*packReader // the packs of envDirs (never consulted by has)
	deltaCache  *baseCache

	zr io.ReadCloser // reused zlib reader

	// fallbackReads counts objects read through go-git (packs this reader
	// cannot open); tests check it stays 0 for packs git writes.
	fallbackReads int

	// noSync skips every fsync of write and of the ref update. Tests that
	// measure something other than durability (object growth) set it.
	noSync bool
	// looseOnly writes every object loose (tests that delete one object
	// to make it unreadable, or that count loose objects).
	looseOnly bool
	// onTemp is called before and after temporary files are created
	// (Store.markTemp).
	onTemp func()
}

func (db *objectDB) markTemp() {
	if db.onTemp != nil {
		db.onTemp()
	}
}

func newObjectDB(commonDir string, repo *git.Repository) *objectDB {
	return &objectDB{
		commonDir:  commonDir,
		objDir:     filepath.Join(commonDir, "objects"),
		repo:       repo,
		deltaCache: &baseCache{},
		envDirs:    envObjectDirs(filepath.Join(commonDir, "objects")),
	}
}

func (db *objectDB) close() error {
	db.closePacks()
	return nil
}

func (db *objectDB) closePacks() {
	for _, p := range append(db.packs, db.envPacks...) {
		p.close()
	}
	db.packs, db.envPacks, db.listed = nil, nil, nil
	db.packsLoaded = false
	db.deltaCache.clear()
}

// refresh forgets every cached pack list.
func (db *objectDB) refresh() {
	db.closePacks()
	if r, ok := db.repo.Storer.(interface{ Reindex() }); ok {
		r.Reindex()
	}
}

func (db *objectDB) loosePath(h Hash) string {
	hex := h.String()
	return filepath.Join(db.objDir, hex[:2], hex[2:])
}

// errObjectMissing wraps plumbing.ErrObjectNotFound.
func errObjectMissing(h Hash) error {
	return fmt.Errorf("gitstore: object %s: %w", h, plumbing.ErrObjectNotFound)
}

// read returns the type and content of object h.
func (db *objectDB) read(h Hash) (plumbing.ObjectType, []byte, error) {
	return db.readMax(h, -1)
}

// readMax returns the type and content of object h, or a *TooLargeError
// when its size (from its header: the loose object's, the packed object's
// or its delta's) is over max, before its content is inflated. max < 0:
// no limit.
func (db *objectDB) readMax(h Hash, max int64) (plumbing.ObjectType, []byte, error) {
	for attempt := 0; ; attempt++ {
		t, data, err := db.readOnce(h, max)
		if err == nil || attempt > 0 || errors.Is(err, ErrTooLarge) || errors.Is(err, errSettledMiss) {
			return t, data, err
		}
		// A concurrent GC may have packed (and pruned) the loose object
		// or replaced a pack we had listed: look again with fresh lists.
		db.refresh()
	}
}

// readOnce looks in the packs first: nearly every object is packed (loopx
// writes packs, and gc packs the rest), and a loose object's path costs a
// failed open to try; objects never change, so the order does not matter.
func (db *objectDB) readOnce(h Hash, max int64) (plumbing.ObjectType, []byte, error) {
	db.loadPacks()
	for _, p := range db.packs {
		if t, data, ok, err := p.get(h, max); ok {
			return t, data, err
		}
	}
	t, data, err := db.readLoose(h, max)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return t, data, err
	}
	for _, p := range db.envPacks {
		if t, data, ok, err := p.get(h, max); ok {
			return t, data, err
		}
	}
	// Packs written since the list was made (a fetch or a GC of another
	// process): looked in before concluding anything.
	for _, p := range db.newPacks() {
		if t, data, ok, err := p.get(h, max); ok {
			return t, data, err
		}
	}
	if db.settled() {
		// Every pack here was searched through its index and nothing
		// else could hold it: missing, without asking go-git, which
		// would load every pack's index again (a clone following a busy
		// server looks up bases it has not fetched yet on every
		// mutation: at 64 agents, 47% of a holder's CPU went there).
		return 0, nil, fmt.Errorf("%w: %w", errObjectMissing(h), errSettledMiss)
	}
	db.fallbackReads++
	obj, err := db.repo.Storer.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return 0, nil, errObjectMissing(h)
		}
		return 0, nil, fmt.Errorf("gitstore: object %s: %w", h, err)
	}
	if max >= 0 && obj.Size() > max {
		return 0, nil, &TooLargeError{Hash: h, Size: obj.Size(), Max: max}
	}
	data, err = readEncoded(obj)
	return obj.Type(), data, err
}

// ErrTooLarge is matched (errors.Is) by a *TooLargeError.
var ErrTooLarge = errors.New("gitstore: object too large")

// TooLargeError refuses an object bigger than a read allowed, found from
// its header before its content was inflated.
type TooLargeError struct {
	Path string // the file read, when the read named one
	Hash Hash
	Size int64 // the object's size, or for a delta's base: the base's
	Max  int64
}

func (e *TooLargeError) Error() string {
	name := e.Path
	if name == "" {
		name = e.Hash.String()
	}
	return fmt.Sprintf("gitstore: %s is %d bytes, over the %d-byte limit of this read", name, e.Size, e.Max)
}

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

func readEncoded(obj plumbing.EncodedObject) ([]byte, error) {
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, 0, obj.Size())
	buf := bytes.NewBuffer(data)
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readLoose reads a loose object; the error wraps os.ErrNotExist if there
// is none. Its header is inflated first, and an object over max (max >= 0)
// is refused (*TooLargeError) before the rest is: a 300 MB blob of zeros
// costs the few hundred kilobytes of its compressed file's first blocks,
// not 300 MB.
func (db *objectDB) readLoose(h Hash, max int64) (plumbing.ObjectType, []byte, error) {
	f, err := os.Open(db.loosePath(h))
	for i := 0; errors.Is(err, os.ErrNotExist) && i < len(db.envDirs); i++ {
		hex := h.String()
		f, err = os.Open(filepath.Join(db.envDirs[i], hex[:2], hex[2:]))
	}
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	bad := func(why string) error { return fmt.Errorf("gitstore: loose object %s: %s", h, why) }
	src := bufio.NewReaderSize(f, 4096)
	if db.zr == nil {
		db.zr, err = zlib.NewReader(src)
	} else {
		err = db.zr.(zlib.Resetter).Reset(src, nil)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("gitstore: loose object %s: %w", h, err)
	}
	// "<type> <size>\x00" is at most 32 bytes; what follows it in hdr is
	// the start of the content.
	var hdr [32]byte
	n, err := io.ReadFull(db.zr, hdr[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, nil, fmt.Errorf("gitstore: loose object %s: %w", h, err)
	}
	nul := bytes.IndexByte(hdr[:n], 0)
	if nul < 0 {
		return 0, nil, bad("bad header")
	}
	typName, sizeStr, ok := bytes.Cut(hdr[:nul], []byte{' '})
	if !ok {
		return 0, nil, bad("bad header")
	}
	t, err := plumbing.ParseObjectType(string(typName))
	if err != nil {
		return 0, nil, fmt.Errorf("gitstore: loose object %s: %w", h, err)
	}
	size, err := strconv.ParseInt(string(sizeStr), 10, 64)
	if err != nil || size < 0 || size < int64(n-nul-1) {
		return 0, nil, bad("bad size")
	}
	if max >= 0 && size > max {
		return 0, nil, &TooLargeError{Hash: h, Size: size, Max: max}
	}
	if fi, err := f.Stat(); err == nil && size > fi.Size()*1100 { // zlib cannot expand more than ~1032×
		return 0, nil, bad("bad size")
	}
	data := make([]byte, size)
	copy(data, hdr[nul+1:n])
	if _, err := io.ReadFull(db.zr, data[n-nul-1:]); err != nil {
		return 0, nil, bad("bad size")
	}
	// Nothing may follow the content.
	var one [1]byte
	if m, err := db.zr.Read(one[:]); m > 0 || (err != nil && !errors.Is(err, io.EOF)) {
		return 0, nil, bad("bad size")
	}
	return t, data, nil
}

// loadPacks opens the packs listed in the GC state file (once).
// errSettledMiss marks an object found nowhere it could be: no other
// look (a refresh, go-git) would find it.
var errSettledMiss = errors.New("searched every pack and the loose objects")

// packIndexFile names a pack of an object folder that has an index.
type packIndexFile struct {
	name Hash
	path string // its .idx
}

// packIndexes lists the packs of objDir that have an index (one directory
// listing).
func packIndexes(objDir string) []packIndexFile {
	idxs, _ := filepath.Glob(filepath.Join(objDir, "pack", "pack-*.idx"))
	var out []packIndexFile
	for _, idx := range idxs {
		hex := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(idx), "pack-"), ".idx")
		if name := plumbing.NewHash(hex); name.String() == hex {
			out = append(out, packIndexFile{name, idx})
		}
	}
	return out
}

// newPacks adds to the front of the list the packs of objDir it does not
// name yet, and returns them.
func (db *objectDB) newPacks() []*packReader {
	var added []*packReader
	for _, f := range packIndexes(db.objDir) {
		if !db.listed[f.name] {
			db.listed[f.name] = true
			added = append(added, lazyPack(db.objDir, f.name, db.deltaCache))
		}
	}
	if len(added) > 0 {
		db.packs = append(slices.Clone(added), db.packs...)
	}
	return added
}

// settled reports whether a miss in every list is final: each pack's
// index was read or is gone (a pack this reader cannot read is go-git's to
// try; a deleted one's objects are in the packs that replaced it, which
// newPacks lists), and no alternates file names other object folders
// (go-git follows them).
func (db *objectDB) settled() bool {
	for _, p := range append(db.packs, db.envPacks...) {
		if !p.loaded || p.idx == nil && !p.gone {
			return false
		}
	}
	_, err := os.Lstat(filepath.Join(db.objDir, "info", "alternates"))
	return errors.Is(err, os.ErrNotExist)
}

func (db *objectDB) loadPacks() {
	if db.packsLoaded {
		return
	}
	db.packsLoaded = true
	db.listed = map[Hash]bool{}
	st, err := readGCState(db.commonDir)
	if err != nil {
		return
	}
	// Newest first: recent objects, the ones usually read, are found in
	// the first index searched.
	own := db.listed
	listed := append(slices.Clone(st.packs), st.cpacks...)
	for i := len(listed) - 1; i >= 0; i-- {
		name := listed[i]
		if !own[name] {
			own[name] = true
			// Opened on first use; one deleted by someone's git gc has
			// nothing, and the fallback finds the objects.
			db.packs = append(db.packs, lazyPack(db.objDir, name, db.deltaCache))
		}
	}
	// Then every other pack (the user's `git gc`, fetches, fast-import):
	// the same reader serves any non-thin pack with a v2 index, so a
	// repository packed by git is read as fast as one packed by loopx.
	// Packs it cannot read are left to the go-git fallback.
	type other struct {
		name Hash
		mod  time.Time
	}
	var others []other
	for _, f := range packIndexes(db.objDir) {
		if !own[f.name] {
			others = append(others, other{f.name, modTime(f.path)})
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].mod.After(others[j].mod) })
	for _, o := range others {
		own[o.name] = true
		db.packs = append(db.packs, lazyPack(db.objDir, o.name, db.deltaCache))
	}
	// Last, the packs of the environment's object folders (read-only).
	for _, dir := range db.envDirs {
		for _, f := range packIndexes(dir) {
			if !own[f.name] {
				own[f.name] = true
				db.envPacks = append(db.envPacks, lazyPack(dir, f.name, db.deltaCache))
			}
		}
	}
}

func modTime(name string) time.Time {
	fi, err := os.Stat(name)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

func packPath(objDir string, name Hash, ext string) string {
	return filepath.Join(objDir, "pack", "pack-"+name.String()+ext)
}

// has reports whether object h exists as a loose object or in one of
// gitstore's packs. It does not consult other packs (that would load every
// pack index of the repository): at worst an object is written loose again,
// which git tolerates.
func (db *objectDB) has(h Hash) bool {
	if _, err := os.Lstat(db.loosePath(h)); err == nil {
		return true
	}
	db.loadPacks()
	for _, p := range db.packs {
		if p.find(h) >= 0 {
			return true
		}
	}
	return false
}

// newObject is an object to be written.
type newObject struct {
	hash Hash
	typ  plumbing.ObjectType
	data []byte
}

func hashObject(t plumbing.ObjectType, data []byte) Hash {
	return plumbing.ComputeHash(t, data)
}

var tmpCounter atomic.Uint64

// write stores objs as loose objects, skipping those that exist. Every new
// object file and every directory entry naming one is fsynced before write
// returns, so that a ref may then point at them. The extra files are
// fsynced along with the objects (one round of concurrent fsyncs).
//
// The temporary files are made in objects/pack (as tmp_obj_loopx_<pid>_<n>)
// and renamed into objects/xx/, so that what a killed writer leaves is
// found by one look at that one directory (see removeDeadTmpFiles). OS-level
// failures wrap ErrIO.
func (db *objectDB) write(objs []newObject, extra ...*os.File) (err error) {
	defer func() { err = ioError(err) }()
	type pending struct {
		tmp, final string
		f          *os.File
	}
	var todo []pending
	defer func() {
		for _, p := range todo {
			if p.f != nil {
				p.f.Close()
			}
			if p.tmp != "" {
				os.Remove(p.tmp)
			}
		}
	}()
	dirs := map[string]bool{} // dir → created now (its parent needs a sync too)
	seen := map[Hash]bool{}
	tmpDir := filepath.Join(db.objDir, "pack")
	marked := false
	for _, o := range objs {
		if seen[o.hash] || db.has(o.hash) {
			continue
		}
		seen[o.hash] = true
		final := db.loosePath(o.hash)
		dir := filepath.Dir(final)
		if _, ok := dirs[dir]; !ok {
			created := false
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(dir, 0o777); err != nil {
					return err
				}
				created = true
			}
			dirs[dir] = created
		}
		if !marked {
			if _, err := os.Stat(tmpDir); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(tmpDir, 0o777); err != nil {
					return err
				}
			}
			db.markTemp()
			marked = true
		}
		tmp := filepath.Join(tmpDir, fmt.Sprintf("%s%d_%d", tmpObjPrefix, os.Getpid(), tmpCounter.Add(1)))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return err
		}
		todo = append(todo, pending{tmp: tmp, final: final, f: f})
		if err := injected("objects", "write", tmp); err != nil {
			return err
		}
		if err := writeCompressed(f, o.typ, o.data); err != nil {
			return err
		}
	}
	if marked {
		db.markTemp()
		hook("loose-temp-written")
	}
	// fsync the files concurrently: the file system can merge the journal
	// commits.
	if err := parallel(len(todo)+len(extra), func(i int) error {
		if i == 0 {
			if err := injected("fsync", "sync", db.objDir); err != nil {
				return err
			}
		}
		if db.noSync {
			return nil
		}
		if i < len(todo) {
			return todo[i].f.Sync()
		}
		return extra[i-len(todo)].Sync()
	}); err != nil {
		return err
	}
	if len(todo) == 0 {
		return nil
	}
	for i := range todo {
		p := &todo[i]
		if err := p.f.Close(); err != nil {
			p.f = nil
			return err
		}
		p.f = nil
		// rename (git links then unlinks, to never replace an existing
		// object; one with the same name has the same content, so
		// replacing it is harmless, and rename is one metadata operation
		// instead of two).
		if err := os.Rename(p.tmp, p.final); err != nil {
			return err
		}
		p.tmp = ""
	}
	var syncDirs []string
	for dir, created := range dirs {
		syncDirs = append(syncDirs, dir)
		if created {
			syncDirs = append(syncDirs, db.objDir)
		}
	}
	syncDirs = dedupe(syncDirs)
	if db.noSync {
		return nil
	}
	return parallel(len(syncDirs), func(i int) error { return syncDir(syncDirs[i]) })
}

func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// zlibWriters recycles compressors: each allocates about a megabyte.
var zlibWriters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return zw
}}

// writeCompressed writes the loose-object encoding of an object to w.
func writeCompressed(w io.Writer, t plumbing.ObjectType, data []byte) error {
	zw := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(zw)
	zw.Reset(w)
	var hdr [32]byte
	h := append(append(append(hdr[:0], t.String()...), ' '), strconv.Itoa(len(data))...)
	h = append(h, 0)
	if _, err := zw.Write(h); err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// parallel runs fn(0..n-1) concurrently and returns the first error.
func parallel(n int, fn func(i int) error) error {
	if n == 0 {
		return nil
	}
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// syncDir fsyncs a directory, so that the names just created in it survive
// a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !syncDirUnsupported(err) {
		return fmt.Errorf("gitstore: fsync %s: %w", dir, err)
	}
	return nil
}
