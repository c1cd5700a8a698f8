package derived

import "testing"

// TestLeaseSaveAfter: a small index is saved after every change, a larger
// one after one more change per 50 entries, never after more than the
// configured most.
func TestLeaseSaveAfter(t *testing.T) {
	for _, c := range []struct{ n, max, want int }{
		{0, 8, 1},
		{49, 8, 1},
		{50, 8, 2},
		{150, 8, 4},
		{150, 3, 3},
		{1000, 8, 8},
		{10, 1, 1},
	} {
		if got := leaseSaveAfter(c.n, c.max); got != c.want {
			t.Errorf("leaseSaveAfter(%d, %d) = %d, want %d", c.n, c.max, got, c.want)
		}
	}
}
