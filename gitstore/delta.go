package gitstore

// A delta encoder for the explicit GC's pack (packwrite.go), in git's
// delta format: the source and result sizes, then copy instructions
// (offset and length in the source) and insert instructions (up to 127
// literal bytes). Git's own encoder, and go-git's, index the source in
// 16-byte blocks; a store's objects are small (a tree of two entries is
// 70 bytes, a commit a few hundred) and change in short spans (a 20-byte
// hash, a version number), so this one indexes every position of the
// source by its first deltaHashLen bytes and extends each match both ways:
// a copy that resumes four bytes after a changed digit, where a block
// index resumes at the next block.

const (
	deltaHashLen = 4
	// deltaMinCopy is the shortest copy worth its instruction (1 byte of
	// command, 1 to 4 of offset, 1 to 3 of length) rather than literals.
	deltaMinCopy = 6
	// deltaChain bounds the source positions tried for one hash.
	deltaChain = 64
	// deltaMaxCopy is the longest one copy instruction can say (a length
	// of 0 means 0x10000; longer copies are split).
	deltaMaxCopy = 0xffffff
)

// deltaIndex maps the hashes of a source's deltaHashLen-byte windows to
// their positions, the latest first.
type deltaIndex struct {
	src  []byte
	head []int32 // per bucket: the last position, or -1
	next []int32 // per position: the previous position in its bucket, or -1
	mask uint32
}

func newDeltaIndex(src []byte) *deltaIndex {
	n := 16
	for n < len(src) {
		n <<= 1
	}
	d := &deltaIndex{src: src, head: make([]int32, n), next: make([]int32, max(len(src), 0)), mask: uint32(n - 1)}
	for i := range d.head {
		d.head[i] = -1
	}
	for i := 0; i+deltaHashLen <= len(src); i++ {
		b := d.bucket(src[i:])
		d.next[i] = d.head[b]
		d.head[b] = int32(i)
	}
	return d
}

func (d *deltaIndex) bucket(b []byte) uint32 {
	v := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	return (v * 2654435761) >> 7 & d.mask
}

// encodeDelta returns the delta that makes tgt from the indexed source.
func (d *deltaIndex) encodeDelta(tgt []byte) []byte {
	src := d.src
	out := make([]byte, 0, len(tgt)/4+16)
	out = appendDeltaSize(out, len(src))
	out = appendDeltaSize(out, len(tgt))
	lit := 0    // start of the literals not yet written
	srcEnd := 0 // where the last copy ended in the source
	i := 0
	for i+deltaHashLen <= len(tgt) {
		bestLen, bestSrc, bestBack := 0, 0, 0
		try := func(ps int) {
			n := 0
			for ps+n < len(src) && i+n < len(tgt) && src[ps+n] == tgt[i+n] {
				n++
			}
			if n < deltaHashLen {
				return // another window in the same bucket
			}
			back := 0
			for ps-back > 0 && i-back > lit && src[ps-back-1] == tgt[i-back-1] {
				back++
			}
			if n+back > bestLen {
				bestLen, bestSrc, bestBack = n+back, ps-back, back
			}
		}
		// First where the source continues if the literals since the last
		// copy replaced as many bytes (a changed hash or digit): in a tree
		// of many entries that position can be past the chain's bound,
		// behind the other entries' equal modes.
		if cont := srcEnd + (i - lit); cont < len(src) {
			try(cont)
		}
		steps := 0
		for p := d.head[d.bucket(tgt[i:])]; p >= 0 && steps < deltaChain; p = d.next[p] {
			steps++
			try(int(p))
		}
		if bestLen < deltaMinCopy {
			i++
			continue
		}
		out = appendDeltaInsert(out, tgt[lit:i-bestBack])
		out = appendDeltaCopy(out, bestSrc, bestLen)
		i += bestLen - bestBack
		lit, srcEnd = i, bestSrc+bestLen
	}
	return appendDeltaInsert(out, tgt[lit:])
}

func appendDeltaSize(out []byte, n int) []byte {
	for n >= 0x80 {
		out = append(out, byte(n)|0x80)
		n >>= 7
	}
	return append(out, byte(n))
}

func appendDeltaInsert(out, lit []byte) []byte {
	for len(lit) > 0 {
		n := min(len(lit), 127)
		out = append(append(out, byte(n)), lit[:n]...)
		lit = lit[n:]
	}
	return out
}

func appendDeltaCopy(out []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, deltaMaxCopy)
		at := len(out)
		cmd := byte(0x80)
		out = append(out, 0)
		for k := 0; k < 4; k++ {
			if b := byte(off >> (8 * k)); b != 0 {
				cmd |= 1 << k
				out = append(out, b)
			}
		}
		for k := 0; k < 3; k++ {
			if b := byte(size >> (8 * k)); b != 0 {
				cmd |= 0x10 << k
				out = append(out, b)
			}
		}
		out[at] = cmd
		off += size
		n -= size
	}
	return out
}
