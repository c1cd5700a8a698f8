package lease

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// record is implemented by every record type stored on the ref.
type record interface {
	Validate() error
}

// Encode renders a record as YAML. Field order is the struct order, so the
// same record always gives the same bytes.
func Encode(r record) []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		panic(fmt.Sprintf("lease: encode %T: %v", r, err)) // only plain structs are encoded
	}
	_ = enc.Close()
	b := buf.Bytes()
	if len(b) > MaxRecordSize {
		noteOwnOversize(b)
	}
	return b
}

// ownOversize holds the records over MaxRecordSize that this process
// encoded itself (a decision about to write one): a decision that reads
// back its own write decodes it, and CheckRecordSizes then refuses the
// decision with invalid_request, instead of the read calling loopx's own
// write corrupt. Keyed by the first byte's address (Go's heap does not
// move); empty unless a decision went over the limit.
var ownOversize struct {
	sync.Mutex
	m map[*byte]bool
}

func noteOwnOversize(b []byte) {
	ownOversize.Lock()
	defer ownOversize.Unlock()
	if ownOversize.m == nil {
		ownOversize.m = map[*byte]bool{}
	}
	ownOversize.m[&b[0]] = true
}

func isOwnOversize(b []byte) bool {
	ownOversize.Lock()
	defer ownOversize.Unlock()
	return ownOversize.m[&b[0]]
}

// MaxRecordSize is the largest record loopx reads: 1 MiB. Records loopx
// writes stay far below it (a lease keeps a bounded list of holders, a
// todo's text and notes are bounded), so a bigger one was not written by
// loopx; decoding it anyway would cost every command that reads it time
// and memory in proportion (a 40 MB lease made each command take up to
// 0.8 s and 280 MB), so it is refused as corrupt before any decoding.
const MaxRecordSize = 1 << 20

// OversizeError is a record refused for its size: by Decode, or by a
// Files implementation before reading it at all (gitstore reads the size
// from the object's header and inflates nothing more: a 300 MB record
// costs neither 300 MB nor the time to inflate them). A Files
// implementation returns Oversize(path, size) from Read and Walk, and from
// ReadHash (which knows no path) an *OversizeError that the View names.
type OversizeError struct {
	Size int64
}

func (e *OversizeError) Error() string {
	return fmt.Sprintf("record is %d bytes, over the %d-byte (1 MiB) limit", e.Size, MaxRecordSize)
}

// Oversize is the refusal of the record at path of size bytes: corrupt_record
// naming the path, or with no path an *OversizeError (see atPath).
func Oversize(path string, size int64) error {
	if path == "" {
		return &OversizeError{Size: size}
	}
	return Corrupt(path, &OversizeError{Size: size})
}

// atPath gives an oversize refusal from Files.ReadHash the path of the
// record that was read: corrupt_record naming it. Other errors are kept.
func atPath(p string, err error) error {
	if _, ok := err.(*OversizeError); ok {
		return Corrupt(p, err)
	}
	return err
}

// Decode strictly decodes one YAML document into r and validates it: a
// record over MaxRecordSize, unknown fields, wrong types, trailing
// documents and invalid values are errors.
func Decode(data []byte, r record) error {
	if len(data) > MaxRecordSize && !isOwnOversize(data) {
		return &OversizeError{Size: int64(len(data))}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(r); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty document")
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	return r.Validate()
}

// DecodeAt decodes the record stored at path, turning any problem into a
// corrupt_record error that names the path.
func DecodeAt(path string, data []byte, r record) error {
	if err := Decode(data, r); err != nil {
		return Corrupt(path, err)
	}
	return nil
}

// CheckRecordSizes refuses a decision whose writes include a record over
// MaxRecordSize (invalid_request, naming the path): loopx never writes a
// record it would then refuse to read. Only YAML records are limited (the
// board, a rendering, is not a record).
func CheckRecordSizes(changes []Change) error {
	for _, c := range changes {
		if len(c.Data) > MaxRecordSize && strings.HasSuffix(c.Path, ".yaml") {
			return Errorf(CodeInvalidRequest, "the record %s would be %d bytes, over the %d-byte (1 MiB) limit of a record: shorten the text, notes or evidence", c.Path, len(c.Data), MaxRecordSize).
				With("path", c.Path)
		}
	}
	return nil
}
