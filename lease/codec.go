package lease

import (
	"bytes"
	"errors"
	"fmt"
	"io"

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
	return buf.Bytes()
}

// Decode strictly decodes one YAML document into r and validates it: unknown
// fields, wrong types, trailing documents and invalid values are errors.
func Decode(data []byte, r record) error {
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
