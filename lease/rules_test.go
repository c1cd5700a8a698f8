package lease

import "testing"

// TestCurrentKeepsCurrentCalls: a call of a current schema version (every
// operation that never changed, and the v2 ones) is its own Current, a copy.
func TestCurrentKeepsCurrentCalls(t *testing.T) {
	for _, op := range Operations() {
		if op.rules != 0 {
			continue
		}
		raw := `{"schema":"` + op.Schema + `"}`
		c, err := DecodeRequest([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", op.Schema, err)
		}
		cur := c.Current()
		if cur.Op != c.Op || cur.Req == c.Req {
			t.Errorf("%s: Current = %s (same request value: %v)", op.Schema, cur.Op.Schema, cur.Req == c.Req)
		}
	}
}
