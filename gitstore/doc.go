// Package gitstore is a generic transactional store of files on a Git ref.
//
// It knows nothing of todos or leases: callers read a Snapshot (paths → bytes)
// of the ref's head, decide, and Commit a set of Changes with the expected head
// as parent. It is the only package in loopx that touches Git, files and locks.
//
// Guarantees:
//   - Every Commit runs under an exclusive gofrs/flock writer fence on
//     <common git dir>/loopx.lock (see Store.Lock).
//   - Objects are fsynced before the ref moves; the ref moves with git's own
//     lock protocol (<ref>.lock created exclusively, old value verified from
//     the loose ref or packed-refs, write, fsync, rename, fsync dir), so the git
//     CLI and loopx can update the same ref without losing updates.
//   - Only the trees on changed paths are rewritten.
package gitstore
