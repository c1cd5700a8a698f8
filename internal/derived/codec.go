package derived

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strconv"

	"github.com/loopx-dev/loopx/gitstore"
)

// The side-file codec, one for every kind of derived data:
//
//	loopx-derived <kind> <version> <tag>\n
//	<body>
//	<CRC-32C of everything before it, 4 bytes big-endian>
//
// kind names what the file holds (leases, board, log, records, verified),
// version its body's encoding, tag the revision the data reflects (a
// commit hash, or "-" for data that reflects none: the content-addressed
// record cache). A file of another kind or version, a damaged or
// truncated one, decodes as absent: derived data is rebuilt, never trusted
// over the records.

const codecMagic = "loopx-derived "

// castagnoli is the CRC-32C table, made at first use (not at start-up).
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// encode wraps body in the codec.
func encode(kind string, version int, tag gitstore.Hash, body []byte) []byte {
	t := "-"
	if !tag.IsZero() {
		t = tag.String()
	}
	out := make([]byte, 0, len(codecMagic)+len(kind)+len(t)+len(body)+16)
	out = append(out, codecMagic...)
	out = append(out, kind...)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(version), 10)
	out = append(out, ' ')
	out = append(out, t...)
	out = append(out, '\n')
	out = append(out, body...)
	return appendSum(out)
}

// appendSum appends the checksum of payload.
func appendSum(payload []byte) []byte {
	return binary.BigEndian.AppendUint32(payload, crc32.Checksum(payload, castagnoli()))
}

// decode unwraps a file of kind at version: its tag (zero for "-") and its
// body (which shares data's bytes). ok is false for anything else.
func decode(kind string, version int, data []byte) (tag gitstore.Hash, body []byte, ok bool) {
	if len(data) < len(codecMagic)+4 {
		return gitstore.ZeroHash, nil, false
	}
	payload, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(payload, castagnoli()) != sum {
		return gitstore.ZeroHash, nil, false
	}
	nl := bytes.IndexByte(payload, '\n')
	if nl < 0 {
		return gitstore.ZeroHash, nil, false
	}
	head := bytes.Fields(payload[:nl])
	if len(head) != 4 || string(head[0])+" " != codecMagic || string(head[1]) != kind || string(head[2]) != strconv.Itoa(version) {
		return gitstore.ZeroHash, nil, false
	}
	if t := string(head[3]); t != "-" {
		if tag = gitstore.ParseHash(t); tag.IsZero() || len(t) != 40 {
			return gitstore.ZeroHash, nil, false
		}
	}
	return tag, payload[nl+1:], true
}
