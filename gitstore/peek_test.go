package gitstore

import (
	"testing"
	"time"
)

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"2.29.0", true},
		{"2.39.5", true},
		{"2.28.1", false},
		{"2.3", false},
		{"3.0", true},
		{"1.99.9", false},
		{"2.45.1.windows.1", true},
		{"2.29.0-rc1", true},
		{"2.28rc", false},
		{"garbage", false},
		{"", false},
	} {
		if got := VersionAtLeast(c.v, MinWireGitVersion); got != c.want {
			t.Errorf("VersionAtLeast(%q, 2.29) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestCommitterTime(t *testing.T) {
	raw := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" +
		"parent 1111111111111111111111111111111111111111\n" +
		"author agent-a <agent-a@loopx.invalid> 1767225600 +0000\n" +
		"committer loopx <loopx@loopx.invalid> 1767229200 +0100\n" +
		"\n" +
		"committer in the message 1 +0000\n"
	if got, want := committerTime(raw), time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("committerTime = %v, want %v", got, want)
	}
	if got := committerTime("tree x\n\ncommitter in the message 5 +0000\n"); !got.IsZero() {
		t.Errorf("committerTime of a commit without a committer line = %v, want zero", got)
	}
}
