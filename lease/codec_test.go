package lease

import (
	"strings"
	"testing"
	"time"
)

// The size limit is checked before any decoding: a record over
// MaxRecordSize is corrupt_record naming its path, whatever it holds, and
// one at the limit decodes.
func TestDecodeAtSizeLimit(t *testing.T) {
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	valid := Encode(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: when, UpdatedAt: when})
	// pad makes a record of exactly n bytes: a valid goal and a YAML
	// comment line.
	pad := func(n int) []byte {
		b := append([]byte{}, valid...)
		b = append(b, '#')
		b = append(b, strings.Repeat("x", n-len(b)-1)...)
		return append(b, '\n')
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		corrupt string // "" when it must decode
	}{
		{"small valid record", valid, ""},
		{"valid record at the limit", pad(MaxRecordSize), ""},
		{"valid record one byte over", pad(MaxRecordSize + 1), "over the 1048576-byte (1 MiB) limit"},
		{"40 MB record", pad(40 << 20), "record is 41943040 bytes"},
		{"oversize garbage is refused for its size", []byte(strings.Repeat("{", MaxRecordSize+1)), "over the 1048576-byte"},
		{"small garbage is refused for its content", []byte("{{{"), "invalid record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g Goal
			err := DecodeAt("goals/g/goal.yaml", tc.data, &g)
			if tc.corrupt == "" {
				if err != nil || g.ID != "g" {
					t.Fatalf("decode: %v (%+v)", err, g)
				}
				return
			}
			e, ok := AsError(err)
			if !ok || e.Code != CodeCorruptRecord || e.Details["path"] != "goals/g/goal.yaml" || !strings.Contains(e.Message, tc.corrupt) {
				t.Fatalf("got %v, want corrupt_record at the path containing %q", err, tc.corrupt)
			}
			if ClassOf(e.Code) != Rejected {
				t.Fatalf("corrupt_record is class %d", ClassOf(e.Code))
			}
		})
	}
}

// A decision never writes a record it would refuse to read.
func TestCheckRecordSizes(t *testing.T) {
	big := make([]byte, MaxRecordSize+1)
	for _, tc := range []struct {
		name    string
		changes []Change
		refused string // the path named, "" when accepted
	}{
		{"no writes", nil, ""},
		{"records at the limit", []Change{{Path: "goals/g/goal.yaml", Data: make([]byte, MaxRecordSize)}}, ""},
		{"a delete", []Change{{Path: "goals/g/todos/ab/todo_x.yaml"}}, ""},
		{"the board is not a record", []Change{{Path: "goals/g/TODO.md", Data: big}}, ""},
		{"an oversize todo", []Change{{Path: "goals/g/goal.yaml", Data: []byte("x")}, {Path: "goals/g/todos/ab/todo_x.yaml", Data: big}}, "goals/g/todos/ab/todo_x.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRecordSizes(tc.changes)
			if tc.refused == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			e, ok := AsError(err)
			if !ok || e.Code != CodeInvalidRequest || e.Details["path"] != tc.refused || !strings.Contains(e.Message, "1 MiB") {
				t.Fatalf("got %v, want invalid_request naming %s", err, tc.refused)
			}
		})
	}
}

// A decision that reads back the oversize record it is about to write
// decodes it (loopx made it); CheckRecordSizes is what refuses the write.
// The same bytes read from the store are corrupt.
func TestOwnOversizeRecordReadsBack(t *testing.T) {
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &Goal{ID: "g", Title: strings.Repeat("t", MaxRecordSize), Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: when, UpdatedAt: when}
	own := Encode(g)
	var back Goal
	if err := DecodeAt("goals/g/goal.yaml", own, &back); err != nil || back.Title != g.Title {
		t.Fatalf("own write read back: %v", err)
	}
	if err := CheckRecordSizes([]Change{{Path: "goals/g/goal.yaml", Data: own}}); err == nil {
		t.Fatal("the oversize write was not refused")
	}
	stored := append([]byte(nil), own...)
	if err := DecodeAt("goals/g/goal.yaml", stored, &back); err == nil {
		t.Fatal("the same bytes from the store decoded")
	}
}
