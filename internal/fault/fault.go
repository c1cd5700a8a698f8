// Package fault injects failures at named points of the store's code, for
// tests only: nothing in loopx sets a hook, so At always returns nil in a
// real run (one atomic load).
//
// gitstore calls At at each stage of a commit and of a fetch (see the
// points listed in gitstore/ioerr.go); a test that wants, say, a full disk
// while the pack index is written sets a hook returning syscall.ENOSPC at
// "pack-index", and gitstore reports it exactly as it reports the kernel's
// own ENOSPC there.
package fault

import "sync/atomic"

var hook atomic.Pointer[func(point string) error]

// Set installs fn as the hook (nil removes it) and returns a function that
// restores the previous one.
func Set(fn func(point string) error) (restore func()) {
	var p *func(string) error
	if fn != nil {
		p = &fn
	}
	old := hook.Swap(p)
	return func() { hook.Store(old) }
}

// At returns the error the hook injects at point, or nil.
func At(point string) error {
	if h := hook.Load(); h != nil {
		return (*h)(point)
	}
	return nil
}
