package lease

// A lease record keeps its recent holders, not all of them.
//
// Decisions (where the contract is silent):
//   - The record lists the todo's last MaxHolders executions (holders),
//     oldest first; the board draws no more than that. When a new execution
//     starts and the list is full, the oldest holders leave the record.
//     Their history stays in Git: the commits that started and ended them
//     (`loopx log --todo-id`), re-decided by `verify --history`.
//   - A new execution may still never reuse a key the todo has seen
//     (idempotency_key_reuse, contract section 5): the key of each holder
//     that leaves the record is kept in retired_keys, as the first 96 bits
//     of its SHA-256 (domain-separated), in a sorted set written as one
//     base64url string (16 characters per key). A key that was used is
//     always found there, so no retired key is ever accepted; a new key is
//     refused only if its 96-bit hash equals a retired one's, which for a
//     todo with a million retired keys has a chance below 10^-22. The set
//     costs 16 bytes per retired execution, against about 150 for a
//     holder; the record's holders stay bounded.
//   - The epoch (and the todo's lease_epoch high-water mark,
//     generation.go) counts every execution, those that left the record
//     included: the first holder kept has epoch Epoch-len(holders)+1 or
//     more.

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
)

// MaxHolders is the number of executions a lease record lists.
const MaxHolders = 20

// hashLen is the length of one entry of a hash set (retired_keys,
// retired_acquires): 96 bits in base64url.
const hashLen = 16

// retiredKeyLen is the length of one key's entry in retired_keys.
const retiredKeyLen = hashLen

// retiredKey is the entry of key in retired_keys.
func retiredKey(key string) string {
	sum := sha256.Sum256([]byte("loopx.retired-key.v1\x00" + key))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// retiredKeys splits a retired_keys value into its entries.
func retiredKeys(s string) []string { return hashSetEntries(s) }

// hashSetEntries splits a hash set into its entries.
func hashSetEntries(s string) []string {
	out := make([]string, 0, len(s)/hashLen)
	for i := 0; i+hashLen <= len(s); i += hashLen {
		out = append(out, s[i:i+hashLen])
	}
	return out
}

// checkRetiredKeys validates a retired_keys value.
func checkRetiredKeys(s string) error { return checkHashSet("retired_keys", s) }

// checkHashSet validates a hash set: whole base64url entries, strictly
// increasing.
func checkHashSet(field, s string) error {
	if len(s)%hashLen != 0 {
		return fmt.Errorf("%s: length %d is not a multiple of %d", field, len(s), hashLen)
	}
	prev := ""
	for _, k := range hashSetEntries(s) {
		if b, err := base64.RawURLEncoding.DecodeString(k); err != nil || len(b) != 12 {
			return fmt.Errorf("%s: %q is not a hash", field, k)
		}
		if k <= prev {
			return fmt.Errorf("%s: not sorted and distinct at %q", field, k)
		}
		prev = k
	}
	return nil
}

// keyRetired reports whether key is in the retired set s.
func keyRetired(s, key string) bool { return s != "" && hashSetHas(s, retiredKey(key)) }

// hashSetHas reports whether entry is in the hash set s.
func hashSetHas(s, entry string) bool {
	n := len(s) / hashLen
	i := sort.Search(n, func(i int) bool { return s[i*hashLen:(i+1)*hashLen] >= entry })
	return i < n && s[i*hashLen:(i+1)*hashLen] == entry
}

// retireKeys returns the set s with keys added.
func retireKeys(s string, keys ...string) string {
	entries := make([]string, len(keys))
	for i, k := range keys {
		entries[i] = retiredKey(k)
	}
	return addHashes(s, entries...)
}

// addHashes returns the hash set s with entries added.
func addHashes(s string, entries ...string) string {
	set := append(hashSetEntries(s), entries...)
	sort.Strings(set)
	out := set[:0]
	for i, k := range set {
		if i == 0 || k != set[i-1] {
			out = append(out, k)
		}
	}
	return strings.Join(out, "")
}

// boundHolders moves the oldest holders beyond MaxHolders out of l, their
// keys into its retired set.
func boundHolders(l *Lease) {
	n := len(l.Holders) - MaxHolders
	if n <= 0 {
		return
	}
	keys := make([]string, 0, n)
	for _, h := range l.Holders[:n] {
		keys = append(keys, h.IdempotencyKey)
	}
	l.RetiredKeys = retireKeys(l.RetiredKeys, keys...)
	l.Holders = append([]Holder(nil), l.Holders[n:]...)
}
