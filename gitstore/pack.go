package gitstore

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// A minimal reader for the packs gitstore's GC writes (pack v2, index v2,
// OFS_DELTA and REF_DELTA within the pack). go-git's packfile reader works
// too, but a cold read through it (index checksum, byte-at-a-time scanner)
// cost twice a loose read; this one keeps a packed store as fast as a fresh
// one.

// packIndex is a decoded .idx (version 2).
type packIndex struct {
	fanout   [256]uint32
	names    []byte // n × 20
	off32    []byte // n × 4
	off64    []byte // m × 8
	checksum Hash   // of the pack
	unmap    func()
}

func parsePackIndex(b []byte) (*packIndex, error) {
	bad := func(why string) error { return fmt.Errorf("bad pack index: %s", why) }
	if len(b) < 8+256*4+40 || !bytes.Equal(b[:4], []byte{0xff, 't', 'O', 'c'}) {
		return nil, bad("not a v2 index")
	}
	if binary.BigEndian.Uint32(b[4:8]) != 2 {
		return nil, bad("version")
	}
	idx := &packIndex{}
	for i := range idx.fanout {
		idx.fanout[i] = binary.BigEndian.Uint32(b[8+4*i:])
		if i > 0 && idx.fanout[i] < idx.fanout[i-1] {
			return nil, bad("fanout")
		}
	}
	n := int(idx.fanout[255])
	pos := 8 + 256*4
	need := pos + n*(20+4+4) + 40
	if len(b) < need {
		return nil, bad("truncated")
	}
	idx.names = b[pos : pos+20*n]
	pos += 20 * n
	pos += 4 * n // CRC32s
	idx.off32 = b[pos : pos+4*n]
	pos += 4 * n
	idx.off64 = b[pos : len(b)-40]
	if len(idx.off64)%8 != 0 {
		return nil, bad("large offsets")
	}
	copy(idx.checksum[:], b[len(b)-40:])
	return idx, nil
}

func (idx *packIndex) count() int { return int(idx.fanout[255]) }

func (idx *packIndex) name(i int) Hash {
	var h Hash
	copy(h[:], idx.names[20*i:])
	return h
}

// find returns the offset of h in the pack, or -1.
func (idx *packIndex) find(h Hash) int64 {
	lo := 0
	if h[0] > 0 {
		lo = int(idx.fanout[h[0]-1])
	}
	hi := int(idx.fanout[h[0]])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(idx.names[20*m:20*m+20], h[:]); {
		case c == 0:
			return idx.offset(m)
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

func (idx *packIndex) offset(i int) int64 {
	o := binary.BigEndian.Uint32(idx.off32[4*i:])
	if o&0x80000000 == 0 {
		return int64(o)
	}
	j := int(o &^ 0x80000000)
	if 8*j+8 > len(idx.off64) {
		return -1
	}
	return int64(binary.BigEndian.Uint64(idx.off64[8*j:]))
}

// packReader reads objects from one pack, mapped in memory (the .idx on
// the first lookup, the .pack on the first object read from it).
type packReader struct {
	objDir string
	name   Hash
	idx    *packIndex // nil until loaded, or if it cannot be read
	loaded bool       // the index was looked for
	gone   bool       // ... and there was none (the pack was deleted)
	data   []byte     // the whole .pack, once mapped
	unmap  func()
	zr     io.ReadCloser
	base   *baseCache
}

func openPack(objDir string, name Hash, c *baseCache) (*packReader, error) {
	idx, err := readPackIndex(objDir, name)
	if err != nil {
		return nil, err
	}
	return &packReader{objDir: objDir, name: name, idx: idx, loaded: true, base: c}, nil
}

// lazyPack is a reader of pack name that maps its index on first use: a
// lookup satisfied by a newer pack never opens the older ones.
func lazyPack(objDir string, name Hash, c *baseCache) *packReader {
	return &packReader{objDir: objDir, name: name, base: c}
}

// find returns the offset of h in the pack, or -1; a pack whose index
// cannot be read (deleted by someone's git gc) has nothing, and the reader's
// refresh or fallback finds the object elsewhere.
func (p *packReader) find(h Hash) int64 {
	if !p.loaded {
		p.loaded = true
		var err error
		p.idx, err = readPackIndex(p.objDir, p.name)
		p.gone = errors.Is(err, fs.ErrNotExist)
	}
	if p.idx == nil {
		return -1
	}
	return p.idx.find(h)
}

// mapData maps the .pack file.
func (p *packReader) mapData() error {
	if p.data != nil {
		return nil
	}
	data, unmap, err := mapFile(packPath(p.objDir, p.name, ".pack"))
	if err != nil {
		return err
	}
	if len(data) < 12+20 || string(data[:4]) != "PACK" || !bytes.Equal(data[len(data)-20:], p.name[:]) {
		unmap()
		return errPackCorrupt
	}
	p.data, p.unmap = data, unmap
	return nil
}

// readPackIndex maps and decodes the .idx of pack name; the caller must
// call its unmap when done.
func readPackIndex(objDir string, name Hash) (*packIndex, error) {
	b, unmap, err := mapFile(packPath(objDir, name, ".idx"))
	if err != nil {
		return nil, err
	}
	idx, err := parsePackIndex(b)
	if err == nil && idx.checksum != name {
		err = fmt.Errorf("index is for pack %s", idx.checksum)
	}
	if err != nil {
		unmap()
		return nil, fmt.Errorf("gitstore: pack %s: %w", name, err)
	}
	idx.unmap = unmap
	return idx, nil
}

const (
	packCommit   = 1
	packTree     = 2
	packBlob     = 3
	packTag      = 4
	packOFSDelta = 6
	packREFDelta = 7
)

var errPackCorrupt = errors.New("corrupt pack")

// get returns object h, or ok=false if the pack does not have it. An
// object over max (max >= 0) is refused with a *TooLargeError before it
// is inflated (objectAt).
func (p *packReader) get(h Hash, max int64) (t plumbing.ObjectType, data []byte, ok bool, err error) {
	off := p.find(h)
	if off < 0 {
		return 0, nil, false, nil
	}
	if err := p.mapData(); err != nil {
		return 0, nil, true, fmt.Errorf("gitstore: pack %s: %w", p.name, err)
	}
	t, data, err = p.objectAt(off, max)
	if tl, ok := err.(*TooLargeError); ok {
		tl.Hash = h
		return 0, nil, true, tl
	}
	if err != nil {
		return 0, nil, true, fmt.Errorf("gitstore: object %s in pack %s: %w", h, p.name, err)
	}
	return t, data, true, nil
}

// maxDeltaBase bounds the bases a delta of a limited read may be built on,
// as a multiple of the read's limit: git makes a delta only against a base
// at most 32 times the size of its result (pack-objects' try_delta), so a
// record within the limit that git packed against an older version of
// itself stays readable, while a small object built on a huge base (which
// only a hand-made pack has) is refused before the base is inflated.
const maxDeltaBase = 32

// objectAt resolves the object at off, following its delta chain. With
// max >= 0, the object's size is checked before anything is inflated:
// a whole object's from its header, a delta's result from the delta's
// own header (its first bytes, inflated alone); and every base of the
// chain must be at most maxDeltaBase × max.
func (p *packReader) objectAt(off int64, max int64) (plumbing.ObjectType, []byte, error) {
	type link struct {
		off  int64
		size int64 // size of the delta data
		data int64 // offset of its zlib stream
	}
	var chain []link
	var baseType plumbing.ObjectType
	var base []byte
	for depth := 0; ; depth++ {
		if depth > 10000 {
			return 0, nil, fmt.Errorf("%w: delta chain too long", errPackCorrupt)
		}
		if t, d, ok := p.base.get(p.name, off); ok {
			if max >= 0 && depth == 0 && int64(len(d)) > max {
				return 0, nil, &TooLargeError{Size: int64(len(d)), Max: max}
			}
			baseType, base = t, d
			if len(chain) == 0 {
				base = bytes.Clone(d) // callers own what they get
			}
			break
		}
		typ, size, dataOff, baseOff, err := p.header(off)
		if err != nil {
			return 0, nil, err
		}
		limit := max // of the object read; its bases have a looser one
		if max >= 0 && depth > 0 {
			limit = max * maxDeltaBase
		}
		if typ == packOFSDelta || typ == packREFDelta {
			if max >= 0 {
				baseSize, resultSize, err := p.deltaSizes(dataOff, size)
				if err != nil {
					return 0, nil, err
				}
				if resultSize > limit {
					return 0, nil, &TooLargeError{Size: resultSize, Max: limit}
				}
				if baseSize > max*maxDeltaBase {
					return 0, nil, &TooLargeError{Size: baseSize, Max: max * maxDeltaBase}
				}
			}
			chain = append(chain, link{off: off, size: size, data: dataOff})
			off = baseOff
			continue
		}
		if max >= 0 && size > limit {
			return 0, nil, &TooLargeError{Size: size, Max: limit}
		}
		data, err := p.inflate(dataOff, size)
		if err != nil {
			return 0, nil, err
		}
		switch typ {
		case packCommit:
			baseType = plumbing.CommitObject
		case packTree:
			baseType = plumbing.TreeObject
		case packBlob:
			baseType = plumbing.BlobObject
		case packTag:
			baseType = plumbing.TagObject
		default:
			return 0, nil, fmt.Errorf("%w: object type %d", errPackCorrupt, typ)
		}
		base = data
		if len(chain) > 0 {
			p.base.put(p.name, off, baseType, base)
		}
		break
	}
	for i := len(chain) - 1; i >= 0; i-- {
		delta, err := p.inflate(chain[i].data, chain[i].size)
		if err != nil {
			return 0, nil, err
		}
		base, err = packfile.PatchDelta(base, delta)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %v", errPackCorrupt, err)
		}
		if i > 0 {
			p.base.put(p.name, chain[i].off, baseType, base)
		}
	}
	return baseType, base, nil
}

// header decodes the object header at off: type, inflated size, offset of
// the zlib stream, and for deltas the offset of the base.
func (p *packReader) header(off int64) (typ int, size, dataOff, baseOff int64, err error) {
	if off < 12 || off >= int64(len(p.data))-20 {
		return 0, 0, 0, 0, errPackCorrupt
	}
	b := p.data[off:min(off+64, int64(len(p.data))-20)]
	i := 0
	next := func() (byte, bool) {
		if i >= len(b) {
			return 0, false
		}
		c := b[i]
		i++
		return c, true
	}
	c, _ := next()
	typ = int(c>>4) & 7
	size = int64(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		var ok bool
		if c, ok = next(); !ok || shift > 60 {
			return 0, 0, 0, 0, errPackCorrupt
		}
		size |= int64(c&0x7f) << shift
	}
	switch typ {
	case packOFSDelta:
		c, ok := next()
		if !ok {
			return 0, 0, 0, 0, errPackCorrupt
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if c, ok = next(); !ok || rel > 1<<55 {
				return 0, 0, 0, 0, errPackCorrupt
			}
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		baseOff = off - rel
		if baseOff <= 0 || baseOff >= off {
			return 0, 0, 0, 0, errPackCorrupt
		}
	case packREFDelta:
		if i+20 > len(b) {
			return 0, 0, 0, 0, errPackCorrupt
		}
		var h Hash
		copy(h[:], b[i:i+20])
		i += 20
		baseOff = p.find(h)
		if baseOff < 0 {
			return 0, 0, 0, 0, fmt.Errorf("%w: delta base %s not in the pack", errPackCorrupt, h)
		}
	}
	return typ, size, off + int64(i), baseOff, nil
}

// deltaSizes reads the two sizes a delta starts with (its base's and its
// result's), inflating only the first bytes of the delta at off (size:
// the delta's inflated size).
func (p *packReader) deltaSizes(off, size int64) (base, result int64, err error) {
	var err2 error
	src := bytes.NewReader(p.data[off : len(p.data)-20])
	if p.zr == nil {
		p.zr, err2 = zlib.NewReader(src)
	} else {
		err2 = p.zr.(zlib.Resetter).Reset(src, nil)
	}
	if err2 != nil {
		return 0, 0, fmt.Errorf("%w: %v", errPackCorrupt, err2)
	}
	var head [20]byte // two varints of at most 10 bytes
	n, err2 := io.ReadFull(p.zr, head[:min(int64(len(head)), size)])
	if err2 != nil {
		return 0, 0, fmt.Errorf("%w: %v", errPackCorrupt, err2)
	}
	b := head[:n]
	varint := func() (int64, bool) {
		var v int64
		for shift := 0; len(b) > 0 && shift < 63; shift += 7 {
			c := b[0]
			b = b[1:]
			v |= int64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	var ok1, ok2 bool
	base, ok1 = varint()
	result, ok2 = varint()
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("%w: bad delta header", errPackCorrupt)
	}
	return base, result, nil
}

// inflate reads the zlib stream at off, which must inflate to size bytes.
func (p *packReader) inflate(off, size int64) ([]byte, error) {
	if size < 0 || size > int64(len(p.data))*1100 { // zlib cannot expand more than ~1032×
		return nil, errPackCorrupt
	}
	var err error
	src := bytes.NewReader(p.data[off : len(p.data)-20])
	if p.zr == nil {
		p.zr, err = zlib.NewReader(src)
	} else {
		err = p.zr.(zlib.Resetter).Reset(src, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPackCorrupt, err)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(p.zr, data); err != nil {
		return nil, fmt.Errorf("%w: %v", errPackCorrupt, err)
	}
	return data, nil
}

func (p *packReader) close() error {
	if p.idx != nil {
		p.idx.unmap()
	}
	if p.unmap != nil {
		p.unmap()
	}
	p.data, p.unmap = nil, nil
	return nil
}

// baseCache keeps recently resolved delta bases, bounded in bytes.
type baseCache struct {
	m     map[baseKey]baseVal
	bytes int
}

type baseKey struct {
	pack Hash
	off  int64
}

type baseVal struct {
	t    plumbing.ObjectType
	data []byte
}

const baseCacheMax = 16 << 20

func (c *baseCache) get(pack Hash, off int64) (plumbing.ObjectType, []byte, bool) {
	v, ok := c.m[baseKey{pack, off}]
	return v.t, v.data, ok
}

func (c *baseCache) put(pack Hash, off int64, t plumbing.ObjectType, data []byte) {
	if len(data) > baseCacheMax/4 {
		return
	}
	if c.m == nil || c.bytes+len(data) > baseCacheMax {
		c.m = make(map[baseKey]baseVal)
		c.bytes = 0
	}
	c.m[baseKey{pack, off}] = baseVal{t, data}
	c.bytes += len(data)
}

func (c *baseCache) clear() {
	c.m = nil
	c.bytes = 0
}
