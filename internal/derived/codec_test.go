package derived

import (
	"bytes"
	"testing"

	"github.com/loopx-dev/loopx/gitstore"
)

// TestCodec: a side file decodes only as the kind and version it was
// written as, whole and undamaged; anything else is absent.
func TestCodec(t *testing.T) {
	rev := gitstore.ParseHash("0123456789abcdef0123456789abcdef01234567")
	body := []byte("body\nwith lines\n")
	good := encode("leases", 1, rev, body)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x20
	for _, c := range []struct {
		name    string
		data    []byte
		kind    string
		version int
		ok      bool
		tag     gitstore.Hash
		body    []byte
	}{
		{"round trip", good, "leases", 1, true, rev, body},
		{"no tag", encode("records", 1, gitstore.ZeroHash, body), "records", 1, true, gitstore.ZeroHash, body},
		{"empty body", encode("log", 2, rev, nil), "log", 2, true, rev, []byte{}},
		{"another kind", good, "board", 1, false, gitstore.ZeroHash, nil},
		{"another version", good, "leases", 2, false, gitstore.ZeroHash, nil},
		{"a flipped bit", flipped, "leases", 1, false, gitstore.ZeroHash, nil},
		{"truncated", good[:len(good)-1], "leases", 1, false, gitstore.ZeroHash, nil},
		{"empty", nil, "leases", 1, false, gitstore.ZeroHash, nil},
		{"an older format (revision line, body)", append([]byte(rev.String()+"\n"), body...), "leases", 1, false, gitstore.ZeroHash, nil},
		{"a bad tag", encodeRaw("loopx-derived leases 1 xyz\n"), "leases", 1, false, gitstore.ZeroHash, nil},
		{"a short tag", encodeRaw("loopx-derived leases 1 0123\n"), "leases", 1, false, gitstore.ZeroHash, nil},
		{"no header line", encodeRaw("loopx-derived leases 1 -"), "leases", 1, false, gitstore.ZeroHash, nil},
	} {
		tag, got, ok := decode(c.kind, c.version, c.data)
		if ok != c.ok || tag != c.tag || ok && !bytes.Equal(got, c.body) {
			t.Errorf("%s: decode = %s %q %v, want %s %q %v", c.name, tag, got, ok, c.tag, c.body, c.ok)
		}
	}
}

// encodeRaw is payload with a valid checksum.
func encodeRaw(payload string) []byte {
	return appendSum([]byte(payload))
}
