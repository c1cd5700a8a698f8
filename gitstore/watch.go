package gitstore

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// RefWatch tells a waiting reader when the store's ref may have moved: the
// loose ref file (replaced by rename, so its folder sees a create) or
// packed-refs changed. It says "may": the reader compares the head it reads
// then with the one it had. Events are coalesced into one pending signal.
//
// Without file notifications (no inotify, a watch limit reached, a network
// file system that does not report remote changes) Native is false and C
// never fires: callers poll Head instead, and should poll slowly anyway as
// a fallback, since a notification can be missed.
type RefWatch struct {
	// C receives when the ref may have changed.
	C <-chan struct{}

	c      chan struct{}
	w      *fsnotify.Watcher
	ref    string // the loose ref file
	packed string // packed-refs
	dirs   map[string]bool
	once   sync.Once
	done   chan struct{}
}

// WatchRef starts watching the store's ref. Close it when done.
func (s *Store) WatchRef() *RefWatch {
	c := make(chan struct{}, 1)
	rw := &RefWatch{C: c, c: c, done: make(chan struct{}),
		ref:    filepath.Join(s.commonDir, filepath.FromSlash(s.ref)),
		packed: filepath.Join(s.commonDir, "packed-refs"), dirs: map[string]bool{}}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return rw
	}
	rw.w = w
	// Every folder from the common dir down to the ref's folder: a folder
	// on the way may be missing (the ref is packed) and be created later.
	for _, d := range rw.path() {
		if !rw.add(d) {
			break
		}
	}
	if !rw.dirs[s.commonDir] {
		w.Close()
		rw.w = nil
		return rw
	}
	go rw.loop()
	return rw
}

// path is the list of folders the watch covers, outermost first.
func (rw *RefWatch) path() []string {
	common := filepath.Dir(rw.packed)
	out := []string{common}
	rel, err := filepath.Rel(common, filepath.Dir(rw.ref))
	if err != nil || rel == "." {
		return out
	}
	d := common
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		out = append(out, d)
	}
	return out
}

func (rw *RefWatch) add(dir string) bool {
	if rw.dirs[dir] {
		return true
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return false
	}
	if err := rw.w.Add(dir); err != nil {
		return false
	}
	rw.dirs[dir] = true
	return true
}

// Native reports whether file notifications work; without them C never fires.
func (rw *RefWatch) Native() bool { return rw.w != nil }

func (rw *RefWatch) notify() {
	select {
	case rw.c <- struct{}{}:
	default:
	}
}

func (rw *RefWatch) loop() {
	onPath := map[string]bool{}
	for _, d := range rw.path() {
		onPath[d] = true
	}
	for {
		select {
		case <-rw.done:
			return
		case ev, ok := <-rw.w.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			switch {
			case name == rw.ref || name == rw.packed:
				rw.notify()
			case onPath[name] && ev.Has(fsnotify.Create):
				// A folder on the way to the ref appeared: watch it (and
				// whatever appeared below it before the watch was added).
				for _, d := range rw.path() {
					if !rw.add(d) {
						break
					}
				}
				rw.notify()
			case onPath[name] && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
				delete(rw.dirs, name)
				rw.notify()
			}
		case _, ok := <-rw.w.Errors:
			if !ok {
				return
			}
			rw.notify() // an overflow may have dropped the event we wait for
		}
	}
}

// Close stops the watch.
func (rw *RefWatch) Close() error {
	var err error
	rw.once.Do(func() {
		close(rw.done)
		if rw.w != nil {
			err = rw.w.Close()
		}
	})
	return err
}

// Watcher is what a waiting reader needs of a RefWatch (a fake in tests).
type Watcher interface {
	// Changed receives when the ref may have changed (C).
	Changed() <-chan struct{}
	// Native reports whether file notifications work.
	Native() bool
	// Close stops the watch.
	Close() error
}

var _ Watcher = (*RefWatch)(nil)

// Changed is C.
func (rw *RefWatch) Changed() <-chan struct{} { return rw.C }
