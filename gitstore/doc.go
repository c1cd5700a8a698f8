// Package gitstore is a generic transactional store of files on a Git ref
// (by default refs/loopx/state).
//
// It knows nothing of todos or leases: callers read a Snapshot (paths →
// bytes) of the ref's head, decide, and Commit a set of Changes with the
// expected head as parent (compare-and-swap); Transact packages that cycle
// with retries. It is the only package in loopx that touches Git, files and
// locks.
//
// Concurrency and durability:
//   - Writers serialise on the writer fence, an flock on
//     <common git dir>/loopx.lock (Store.Lock), waited for with a blocking
//     flock, so waiters are served in arrival order (fence.go). The kernel
//     drops it when a process dies, so it is never stale. The temporary
//     files a killed writer leaves are removed by the next fence holder
//     (leftovers.go).
//   - Failures of the operating system (a full disk, a read-only
//     repository, permissions, EIO) wrap ErrIO with the OS message; none of
//     them leaves the ref moved, except a failed fsync of the ref's
//     directory after the rename, which says so (ioerr.go).
//   - Commit writes only the blobs and trees on changed paths (unchanged
//     subtrees keep their names), all in one small pack (packwrite.go: two
//     new files, where loose objects would be a dozen), and fsyncs the pack,
//     its index and their directory before the ref moves. A Transact proposal
//     may chain a second commit on the first (Proposal.Next): the objects
//     of both are fsynced in one round and the ref moves once, from the
//     old head to the second commit.
//   - The ref moves with git's own lock protocol: <ref>.lock is created
//     exclusively, the old value is verified under it (loose ref, else
//     packed-refs), the lock file holding the new value (fsynced) is renamed
//     over the ref and the directory is fsynced. git commands updating the
//     same ref therefore neither lose loopx's updates nor have theirs lost;
//     go-git's own ref writing, which ignores the lock, is never used.
//   - loopx's lock file is a hard link to <common dir>/loopx-reflock.<pid>.<n>,
//     so a lock left by a killed loopx process is recognised (and removed
//     once that process is gone); a lock without such a twin is git's and is
//     waited for, then reported as ErrBusy, never removed (see refs.go).
//   - Head reads the ref file itself, which writers replace by rename: a
//     reader never sees it missing or partial.
//
// Reads look at loose objects, then at the packs gitstore's GC wrote (read
// directly, with memory-mapped indexes), then at go-git's storage (every
// other pack, alternates); a miss is retried once with fresh pack lists, as
// another process may have just packed the object.
//
// GC (gc.go) packs the loose objects of the commits since the last GC with
// `git pack-objects --incremental`, removes the packed loose copies (never
// their objects/xx directories, which a git process may be writing to),
// and merges gitstore's own packs (the per-commit packs
// included) when they stop forming a geometric progression, so packs stay
// few and each object is rewritten O(log n) times. The rest of the user's
// repository is never repacked. MaybeGC, run by Transact after each commit,
// triggers it every 100 commits, or once more than 40 gitstore packs are
// listed, by reading <common dir>/loopx-gc-state.
//
// A Store is safe for concurrent use by several goroutines (go-git, which
// is not, is only used under the Store's mutex). Only SHA-1 repositories
// with the files ref backend are supported; Open refuses others.
//
// Besides the store, the package holds the other Git-facing pieces loopx
// needs, built on the same Store: working-tree queries and hooks for the
// guard (worktree.go), derived caches (walkhash.go, diff.go) and remotes
// (remote.go, reached through the git binary: wire.go).
package gitstore
