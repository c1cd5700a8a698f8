package derived

import "github.com/loopx-dev/loopx/gitstore"

// SavedLeases is the revision goal's saved active-lease index reflects
// (zero: none).
func SavedLeases(repo gitstore.Repo, goal string) gitstore.Hash {
	_, rev, _ := New(repo, Config{}).leases.Load(goal)
	return rev
}

// BucketOf is the log index bucket of todo.
func BucketOf(todo string) string { return bucketOf(todo) }

// SavedLogBucket is the saved log index bucket of todo: its revision and
// how many todos it names.
func SavedLogBucket(repo gitstore.Repo, todo string) (gitstore.Hash, int, bool) {
	b, rev, ok := New(repo, Config{}).logs.Load(bucketOf(todo))
	if !ok {
		return rev, 0, false
	}
	return rev, len(b.todos), true
}
