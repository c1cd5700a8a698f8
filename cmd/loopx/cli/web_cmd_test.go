package cli

import "testing"

// TestCheckWebAddr: loopback addresses pass, others only with --listen-any,
// malformed ones never.
func TestCheckWebAddr(t *testing.T) {
	cases := []struct {
		addr      string
		listenAny bool
		ok        bool
	}{
		{"127.0.0.1:0", false, true},
		{"127.0.0.1:8377", false, true},
		{"localhost:8377", false, true},
		{"[::1]:8377", false, true},
		{"127.9.9.9:1", false, true},
		{"0.0.0.0:8377", false, false},
		{":8377", false, false},
		{"[::]:8377", false, false},
		{"10.0.0.1:80", false, false},
		{"example.com:80", false, false},
		{"0.0.0.0:8377", true, true},
		{":0", true, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, false},
		{"127.0.0.1:nope", true, false},
	}
	for _, c := range cases {
		err := checkWebAddr(c.addr, c.listenAny)
		if (err == nil) != c.ok {
			t.Errorf("checkWebAddr(%q, %v) = %v, want ok %v", c.addr, c.listenAny, err, c.ok)
		}
	}
}
