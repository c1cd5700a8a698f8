package audit

import (
	"fmt"
	"testing"
	"time"

	"github.com/loopx-dev/loopx/gitstore"
)

// fakeHistory is a first-parent history, newest first, that counts how
// many commits a walk read.
type fakeHistory struct {
	times []time.Time // committer time of commit i (commit i's hash is hashOf(i))
	read  int
}

func hashOf(i int) gitstore.Hash { return gitstore.ParseHash(fmt.Sprintf("%040x", i+1)) }

func (f *fakeHistory) FirstParentTimes(from gitstore.Hash, fn func(gitstore.Hash, time.Time) (bool, error)) error {
	for i, t := range f.times {
		f.read++
		if more, err := fn(hashOf(i), t); err != nil || !more {
			return err
		}
	}
	return nil
}

// TestStatesAt: each time gets the first state commit of the walk (newest
// first) whose time is not after it; times older than the store get none;
// the walk stops at the oldest time.
func TestStatesAt(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC) }
	none := -1
	cases := []struct {
		name    string
		history []int // minutes, newest first
		times   []int
		want    []int // index into history, or none
		read    int   // commits the walk read
	}{
		{"after the head", []int{30, 20, 10}, []int{40}, []int{0}, 1},
		{"equal times count", []int{30, 20, 10}, []int{20, 30, 10}, []int{1, 0, 2}, 3},
		{"between commits", []int{30, 20, 10}, []int{25, 15}, []int{1, 2}, 3},
		{"older than the store", []int{30, 20, 10}, []int{5, 35}, []int{none, 0}, 3},
		{"stops at the oldest time", []int{50, 40, 30, 20, 10}, []int{45, 41}, []int{1, 1}, 2},
		{"same state for many", []int{30, 20}, []int{21, 22, 23}, []int{1, 1, 1}, 2},
		{"equal state times: the newest", []int{30, 20, 20, 10}, []int{20}, []int{1}, 2},
		{"a clock that went back: the first not after", []int{30, 40, 10}, []int{35}, []int{0}, 1},
		{"no times", []int{30}, nil, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHistory{}
			for _, m := range c.history {
				h.times = append(h.times, at(m))
			}
			var times []time.Time
			for _, m := range c.times {
				times = append(times, at(m))
			}
			got, err := statesAt(h, hashOf(0), times)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
				want := gitstore.ZeroHash
				if w != none {
					want = hashOf(w)
				}
				if got[i] != want {
					t.Errorf("time %d (minute %d): state %s, want %s", i, c.times[i], got[i], want)
				}
			}
			if h.read != c.read {
				t.Errorf("the walk read %d commits, want %d", h.read, c.read)
			}
		})
	}
}
