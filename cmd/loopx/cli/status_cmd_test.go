package cli

import "testing"

func TestRelativeLeft(t *testing.T) {
	cases := []struct {
		seconds int64
		want    string
	}{
		{0, "now"},
		{1, "1s left"},
		{59, "59s left"},
		{60, "1m left"},
		{240, "4m left"},
		{270, "4m30s left"},
		{3599, "59m59s left"},
		{3600, "1h left"},
		{3900, "1h5m left"},
		{3930, "1h5m left"}, // two units, rounded down
		{86400, "1d left"},
		{2*86400 + 3*3600 + 59, "2d3h left"},
		{-1, "1s ago"},
		{-120, "2m ago"},
		{-7260, "2h1m ago"},
	}
	for _, c := range cases {
		if got := relativeLeft(c.seconds); got != c.want {
			t.Errorf("relativeLeft(%d) = %q, want %q", c.seconds, got, c.want)
		}
	}
}
