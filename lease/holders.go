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

// retiredKeyLen is the length of one key's entry in retired_keys.
const retiredKeyLen = 16

// retiredKey is the entry of key in retired_keys.
func retiredKey(key string) string {
	sum := sha256.Sum256([]byte("loopx.retired-key.v1\x00" + key))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// retiredKeys splits a retired_keys value into its entries.
func retiredKeys(s string) []string {
	out := make([]string, 0, len(s)/retiredKeyLen)
	for i := 0; i+retiredKeyLen <= len(s); i += retiredKeyLen {
		out = append(out, s[i:i+retiredKeyLen])
	}
	return out
}

// checkRetiredKeys validates a retired_keys value: whole base64url entries,
// strictly increasing.
func checkRetiredKeys(s string) error {
	if len(s)%retiredKeyLen != 0 {
		return fmt.Errorf("retired_keys: length %d is not a multiple of %d", len(s), retiredKeyLen)
	}
	prev := ""
	for _, k := range retiredKeys(s) {
		if b, err := base64.RawURLEncoding.DecodeString(k); err != nil || len(b) != 12 {
			return fmt.Errorf("retired_keys: %q is not a key hash", k)
		}
		if k <= prev {
			return fmt.Errorf("retired_keys: not sorted and distinct at %q", k)
		}
		prev = k
	}
	return nil
}

// keyRetired reports whether key is in the retired set s.
func keyRetired(s, key string) bool {
	if s == "" {
		return false
	}
	k := retiredKey(key)
	n := len(s) / retiredKeyLen
	i := sort.Search(n, func(i int) bool { return s[i*retiredKeyLen:(i+1)*retiredKeyLen] >= k })
	return i < n && s[i*retiredKeyLen:(i+1)*retiredKeyLen] == k
}

// retireKeys returns the set s with keys added.
func retireKeys(s string, keys ...string) string {
	set := retiredKeys(s)
	for _, k := range keys {
		set = append(set, retiredKey(k))
	}
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
