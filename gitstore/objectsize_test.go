package gitstore

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// hugeSize is the size of the hostile blob: 300 MB of zeros, which
// compress to about 400 kB (40 MB with -short: still over the 32 MiB a
// delta base may have under a 1 MiB limit).
func hugeSize() int64 {
	if testing.Short() {
		return 40 << 20
	}
	return 300 << 20
}

// zeros writes n zero bytes to w.
func zeros(w io.Writer, n int64) error {
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// blobHash is the object name of a blob of n zeros.
func blobHash(n int64) Hash {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", n)
	zeros(h, n)
	var out Hash
	copy(out[:], h.Sum(nil))
	return out
}

// writeLooseZeros writes a blob of n zeros as a loose object into objDir
// (streamed: the test never holds it in memory) and returns its name.
func writeLooseZeros(t *testing.T, objDir string, n int64) Hash {
	t.Helper()
	h := blobHash(n)
	path := filepath.Join(objDir, h.String()[:2], h.String()[2:])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := zlib.NewWriterLevel(f, zlib.BestSpeed)
	fmt.Fprintf(zw, "blob %d\x00", n)
	if err := zeros(zw, n); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return h
}

// packObject is one object of a hand-made pack: its name (as the index
// will say; the reader trusts the index), its pack type, the size its
// header declares, and its body before compression (written by body).
type packObject struct {
	name    Hash
	typ     byte
	size    int64
	refBase *Hash // REF_DELTA base
	body    func(w io.Writer) error
}

// writePack writes objs as one pack (with its index) into objDir/pack,
// streamed, and returns the pack's name.
func writePack(t *testing.T, objDir string, objs []packObject) Hash {
	t.Helper()
	dir := filepath.Join(objDir, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp-test.pack")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.New()
	var off int64
	var crc hash.Hash32
	w := io.MultiWriter(f, sum, writerFunc(func(p []byte) (int, error) {
		off += int64(len(p))
		if crc != nil {
			crc.Write(p)
		}
		return len(p), nil
	}))
	w.Write([]byte("PACK"))
	binary.Write(w, binary.BigEndian, uint32(2))
	binary.Write(w, binary.BigEndian, uint32(len(objs)))
	type entry struct {
		name     Hash
		off, crc uint32
	}
	var entries []entry
	for _, o := range objs {
		start := off
		crc = crc32.NewIEEE()
		size := uint64(o.size)
		c := o.typ<<4 | byte(size&0x0f)
		size >>= 4
		var hdr []byte
		for size != 0 {
			hdr = append(hdr, c|0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		hdr = append(hdr, c)
		if o.refBase != nil {
			hdr = append(hdr, o.refBase[:]...)
		}
		w.Write(hdr)
		zw, _ := zlib.NewWriterLevel(w, zlib.BestSpeed)
		if err := o.body(zw); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		entries = append(entries, entry{o.name, uint32(start), crc.Sum32()})
		crc = nil
	}
	var name Hash
	copy(name[:], sum.Sum(nil))
	f.Write(name[:])
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, packPath(objDir, name, ".pack")); err != nil {
		t.Fatal(err)
	}
	// The index, version 2.
	var ib bytes.Buffer
	ib.Write([]byte{0xff, 't', 'O', 'c'})
	binary.Write(&ib, binary.BigEndian, uint32(2))
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.name[0]]++
	}
	for i := 1; i < 256; i++ {
		fanout[i] += fanout[i-1]
	}
	binary.Write(&ib, binary.BigEndian, fanout[:])
	sorted := append([]entry(nil), entries...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if bytes.Compare(sorted[j].name[:], sorted[i].name[:]) < 0 {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	for _, e := range sorted {
		ib.Write(e.name[:])
	}
	for _, e := range sorted {
		binary.Write(&ib, binary.BigEndian, e.crc)
	}
	for _, e := range sorted {
		binary.Write(&ib, binary.BigEndian, e.off)
	}
	ib.Write(name[:])
	isum := sha1.Sum(ib.Bytes())
	ib.Write(isum[:])
	if err := os.WriteFile(packPath(objDir, name, ".idx"), ib.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	return name
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// commitWithBlob makes (with git) a commit whose tree holds blob as
// loopx.yaml, in the object folder env names (nil: the repository's).
func commitWithBlob(t *testing.T, repo string, blob Hash, env []string) Hash {
	t.Helper()
	tree := gitQ(t, repo, "100644 blob "+blob.String()+"\tloopx.yaml\n", env, "mktree")
	return ParseHash(gitQ(t, repo, "", env, "commit-tree", tree, "-m", "a huge record"))
}

// allocatedBy returns the bytes fn allocates on the heap.
func allocatedBy(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// checkRefused reads loopx.yaml of commit with a 1 MiB limit: refused as
// too large, naming the path and the blob's true size, allocating less
// than 16 MiB (the blob is 300 MB).
func checkRefused(t *testing.T, s *Store, commit Hash, size int64) {
	t.Helper()
	sn, err := s.Snapshot(commit)
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	alloc := allocatedBy(func() { _, _, rerr = sn.ReadMax("loopx.yaml", 1<<20) })
	var tl *TooLargeError
	if !errors.As(rerr, &tl) || !errors.Is(rerr, ErrTooLarge) || tl.Size != size || tl.Path != "loopx.yaml" || tl.Max != 1<<20 {
		t.Fatalf("ReadMax of a %d-byte blob: %v (%+v)", size, rerr, tl)
	}
	if alloc > 16<<20 {
		t.Errorf("refusing a %d-byte blob allocated %d bytes", size, alloc)
	}
	t.Logf("a %d-byte blob refused by its header: %d bytes allocated", size, alloc)
	h, ok, err := sn.HashOf("loopx.yaml")
	if err != nil || !ok {
		t.Fatal(err)
	}
	alloc = allocatedBy(func() { _, rerr = sn.ReadBlobMax(h, 1<<20) })
	if !errors.As(rerr, &tl) || tl.Size != size || tl.Hash != h {
		t.Fatalf("ReadBlobMax: %v", rerr)
	}
	if alloc > 16<<20 {
		t.Errorf("ReadBlobMax refusing a %d-byte blob allocated %d bytes", size, alloc)
	}
}

// TestHugeBlobRefusedByHeader: a read with a size limit refuses a blob
// over it from the object's header, loose or packed, in the repository or
// in a push's quarantine, without inflating it: a 300 MB blob costs a few
// hundred kilobytes of allocation, not 300 MB.
func TestHugeBlobRefusedByHeader(t *testing.T) {
	n := hugeSize()
	for _, where := range []string{"loose", "packed", "quarantined loose", "quarantined pack"} {
		t.Run(where, func(t *testing.T) {
			repo := newRepo(t)
			objDir := filepath.Join(repo, ".git", "objects")
			var env []string
			if strings.HasPrefix(where, "quarantined") {
				q := filepath.Join(t.TempDir(), "incoming")
				env = []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objDir, "GIT_QUARANTINE_PATH=" + q}
				objDir = q
			}
			var blob Hash
			if strings.HasSuffix(where, "loose") {
				blob = writeLooseZeros(t, objDir, n)
			} else {
				blob = blobHash(n)
				writePack(t, objDir, []packObject{{name: blob, typ: packBlob, size: n, body: func(w io.Writer) error { return zeros(w, n) }}})
			}
			commit := commitWithBlob(t, repo, blob, env)
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			s := openT(t, repo, Options{})
			checkRefused(t, s, commit, n)
		})
	}
}

// TestDeltaSizesChecked: in a pack, a delta is judged by the sizes its own
// header declares (read from its first inflated bytes) before it or its
// base is inflated: a delta whose result is over the limit is refused, and
// so is a small result built on a base over 32 times the limit.
func TestDeltaSizesChecked(t *testing.T) {
	t.Parallel()
	n := hugeSize()
	repo := newRepo(t)
	objDir := filepath.Join(repo, ".git", "objects")
	small := []byte("format_version: 2\n")
	smallName := blobHash(int64(len(small))) // the index's names are trusted
	hugeName := blobHash(n)
	varints := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			for v >= 0x80 {
				b = append(b, byte(v)|0x80)
				v >>= 7
			}
			b = append(b, byte(v))
		}
		return b
	}
	bigResult, onHugeBase := Hash{0x01, 0xaa}, Hash{0x02, 0xbb}
	// A delta claiming a 300 MB result from the small base (its
	// instructions are never read).
	d1 := append(varints(int64(len(small)), n), 0x7f)
	// A delta claiming a small result from the huge base.
	d2 := append(varints(n, int64(len(small))), byte(len(small)))
	d2 = append(d2, small...)
	writePack(t, objDir, []packObject{
		{name: smallName, typ: packBlob, size: int64(len(small)), body: func(w io.Writer) error { _, err := w.Write(small); return err }},
		{name: hugeName, typ: packBlob, size: n, body: func(w io.Writer) error { return zeros(w, n) }},
		{name: bigResult, typ: packREFDelta, size: int64(len(d1)), refBase: &smallName, body: func(w io.Writer) error { _, err := w.Write(d1); return err }},
		{name: onHugeBase, typ: packREFDelta, size: int64(len(d2)), refBase: &hugeName, body: func(w io.Writer) error { _, err := w.Write(d2); return err }},
	})
	s := openT(t, repo, Options{})
	for _, c := range []struct {
		name      string
		h         Hash
		size, max int64
	}{
		{"a huge result", bigResult, n, 1 << 20},
		{"a huge base", onHugeBase, n, 32 << 20},
	} {
		var err error
		alloc := allocatedBy(func() { _, _, err = s.odb.readMax(c.h, 1<<20) })
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Size != c.size || tl.Max != c.max || tl.Hash != c.h {
			t.Fatalf("%s: %v (%+v)", c.name, err, tl)
		}
		if alloc > 16<<20 {
			t.Errorf("%s: refusing it allocated %d bytes", c.name, alloc)
		}
	}
	// The small whole object is read.
	if _, data, err := s.odb.readMax(smallName, 1<<20); err != nil || !bytes.Equal(data, small) {
		t.Fatalf("small object: %q, %v", data, err)
	}
}

// TestReadMaxOnGitDeltas: blobs git packed as deltas of one another (git
// gc) are read with a limit of their exact size, and refused with one byte
// less: the sizes read from the delta headers are the objects' sizes.
func TestReadMaxOnGitDeltas(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	s := openT(t, repo, Options{})
	line := strings.Repeat("a line of a record that changes a little each time\n", 200)
	var blobs []Hash
	var sizes []int
	for i := 0; i < 12; i++ {
		content := line + strconv.Itoa(i) + strings.Repeat("x", i*37) + "\n"
		commitT(t, s, put("r.yaml", content))
		h, ok, err := snapT(t, s).HashOf("r.yaml")
		if err != nil || !ok {
			t.Fatal(err)
		}
		blobs, sizes = append(blobs, h), append(sizes, len(content))
	}
	head, _ := s.Head()
	runGitT(t, repo, "update-ref", "refs/heads/keep", head.String())
	runGitT(t, repo, "gc", "-q", "--aggressive", "--prune=now")
	verify := runGitT(t, repo, "verify-pack", "-v", filepath.Join(repo, ".git", "objects", "pack", packNameOf(t, repo)+".idx"))
	if !strings.Contains(verify, "chain length") {
		t.Fatalf("git made no deltas:\n%s", verify)
	}
	s2 := openT(t, repo, Options{})
	deltas := 0
	for i, h := range blobs {
		if strings.Contains(verify, h.String()+" blob") && deltaLine(verify, h) {
			deltas++
		}
		if _, data, err := s2.odb.readMax(h, int64(sizes[i])); err != nil || len(data) != sizes[i] {
			t.Fatalf("blob %d (%d bytes) with its size as the limit: %d bytes, %v", i, sizes[i], len(data), err)
		}
		s2.odb.deltaCache.clear()
		if _, _, err := s2.odb.readMax(h, int64(sizes[i]-1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("blob %d (%d bytes) with a limit one byte less: %v", i, sizes[i], err)
		}
	}
	if deltas == 0 {
		t.Fatalf("none of the blobs is a delta:\n%s", verify)
	}
	if s2.odb.fallbackReads != 0 {
		t.Errorf("%d reads through go-git", s2.odb.fallbackReads)
	}
}

// packNameOf returns the name ("pack-<hex>") of the one pack of repo.
func packNameOf(t *testing.T, repo string) string {
	t.Helper()
	idx, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "pack-*.idx"))
	if len(idx) != 1 {
		t.Fatalf("%d packs", len(idx))
	}
	return strings.TrimSuffix(filepath.Base(idx[0]), ".idx")
}

// deltaLine reports whether verify-pack -v lists h as a delta (its line
// names a base).
func deltaLine(verify string, h Hash) bool {
	for _, l := range strings.Split(verify, "\n") {
		if f := strings.Fields(l); len(f) == 7 && f[0] == h.String() {
			return true
		}
	}
	return false
}
