package gitstore

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// treeLike is a tree of n entries "40000 xx\0<20 bytes>", the shape of a
// bucketed folder, with entry k's hash given by seed.
func treeLike(n int, hash func(k int) []byte) []byte {
	var b bytes.Buffer
	for k := 0; k < n; k++ {
		fmt.Fprintf(&b, "40000 %02x\x00", k)
		b.Write(hash(k))
	}
	return b.Bytes()
}

func fixedHash(seed int) func(int) []byte {
	return func(k int) []byte {
		r := rand.New(rand.NewSource(int64(seed*1000 + k)))
		h := make([]byte, 20)
		r.Read(h)
		return h
	}
}

// TestEncodeDelta: every delta rebuilds its target (through go-git's
// patcher, as readers apply it), and the changes a store's objects see
// cost about what they change.
func TestEncodeDelta(t *testing.T) {
	tree := treeLike(100, fixedHash(1))
	oneChanged := treeLike(100, func(k int) []byte {
		if k == 57 {
			return fixedHash(2)(k)
		}
		return fixedHash(1)(k)
	})
	big := make([]byte, 128000) // copies over 0x10000
	rand.New(rand.NewSource(3)).Read(big)
	bigEdited := append(append([]byte("head"), big[:70000]...), big[70010:]...)
	yaml := []byte("todo_id: todo_1\nowner: agent-a\nversion: 7\nepoch: 2\nstatus: active\nexpires_at: 2026-01-01T00:10:00Z\n")
	yamlRenewed := bytes.Replace(bytes.Replace(yaml, []byte("version: 7"), []byte("version: 8"), 1), []byte("00:10:00Z"), []byte("00:20:00Z"), 1)
	for _, c := range []struct {
		name     string
		src, tgt []byte
		maxDelta int // 0: no bound
	}{
		{"empty target", []byte("hello, world"), nil, 4},
		{"identical", tree, tree, 12},
		// One hash of a 2,400-byte tree: two copies and the 20 new bytes.
		// In a tree the next entry's mode ("40000 ") is in every bucket
		// of the index: the copy resumes where the source continues.
		{"tree, one hash changed", tree, oneChanged, 36},
		{"record renewed", yaml, yamlRenewed, 40},
		{"long literal run", []byte("x"), bytes.Repeat([]byte{0xa5, 0x5a, 0x33}, 200), 0},
		{"copy over 64 KiB", big, bigEdited, 40},
		{"shorter than the hash window", []byte("ab"), []byte("abc"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			delta := newDeltaIndex(c.src).encodeDelta(c.tgt)
			got, err := packfile.PatchDelta(c.src, delta)
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if !bytes.Equal(got, c.tgt) {
				t.Fatalf("patched %d bytes, want the %d of the target", len(got), len(c.tgt))
			}
			if c.maxDelta > 0 && len(delta) > c.maxDelta {
				t.Fatalf("delta of %d bytes, want at most %d", len(delta), c.maxDelta)
			}
		})
	}
}

// TestEncodeDeltaRandomEdits: random sources under random edits
// (replaced, inserted and deleted spans) always patch back.
func TestEncodeDeltaRandomEdits(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	alphabet := []byte("ab\x00 40000\n")
	for i := 0; i < 2000; i++ {
		src := make([]byte, 1+r.Intn(600)) // never an empty base (deltaSearch)
		for j := range src {
			if r.Intn(3) == 0 {
				src[j] = byte(r.Intn(256))
			} else {
				src[j] = alphabet[r.Intn(len(alphabet))]
			}
		}
		tgt := append([]byte{}, src...)
		for e := r.Intn(6); e > 0; e-- {
			at := 0
			if len(tgt) > 0 {
				at = r.Intn(len(tgt))
			}
			n := r.Intn(30)
			span := make([]byte, n)
			r.Read(span)
			switch r.Intn(3) {
			case 0: // replace
				copy(tgt[at:], span)
			case 1: // insert
				tgt = append(tgt[:at], append(span, tgt[at:]...)...)
			case 2: // delete
				tgt = append(tgt[:at], tgt[min(at+n, len(tgt)):]...)
			}
		}
		delta := newDeltaIndex(src).encodeDelta(tgt)
		got, err := packfile.PatchDelta(src, delta)
		if err != nil || !bytes.Equal(got, tgt) {
			t.Fatalf("case %d: src %q, tgt %q: patched %q, %v", i, src, tgt, got, err)
		}
	}
}

// TestOfsDeltaOffset: the distance back to a delta's base, as git
// encodes it (and pack.go decodes it).
func TestOfsDeltaOffset(t *testing.T) {
	for _, c := range []struct {
		d    int64
		want string
	}{
		{1, "01"},
		{127, "7f"},
		{128, "8000"},
		{16511, "ff7f"},
		{16512, "808000"},
		{1 << 31, "86fefeff00"},
	} {
		got := fmt.Sprintf("%x", ofsDeltaOffset(c.d))
		if got != c.want {
			t.Errorf("offset %d: %s, want %s", c.d, got, c.want)
		}
		// Decode it back as git does.
		b := ofsDeltaOffset(c.d)
		v := int64(b[0] & 0x7f)
		for _, x := range b[1:] {
			v = (v+1)<<7 | int64(x&0x7f)
		}
		if v != c.d {
			t.Errorf("offset %d decodes to %d", c.d, v)
		}
	}
}
