// Command gogitfloor is the floor bench/scale.sh compares loopx's mutations
// with: one process that makes one commit with go-git, the library loopx
// is built on, and nothing else. It opens the repository, reads the state
// ref's head, writes one blob at PATH (the bytes of -data, plus a counter
// so every run writes a new blob), rewrites the trees on PATH up to the
// root, writes the commit and moves the ref with a compare-and-swap on the
// head it read. No decision, no board, no fsync of its own.
//
//	gogitfloor -repo DIR [-ref refs/loopx/state] [-path goals/g/leases/00/todo_x.yaml]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

func main() {
	repoDir := flag.String("repo", ".", "repository")
	ref := flag.String("ref", "refs/loopx/state", "ref to commit on")
	path := flag.String("path", "goals/g/leases/00/todo_floor.yaml", "file to write")
	flag.Parse()
	r, err := git.PlainOpenWithOptions(*repoDir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		log.Fatal(err)
	}
	old, err := r.Reference(plumbing.ReferenceName(*ref), true)
	if err != nil {
		log.Fatal(err)
	}
	head, err := r.CommitObject(old.Hash())
	if err != nil {
		log.Fatal(err)
	}
	data := fmt.Sprintf("todo_id: todo_floor\nowner: bench-agent\nversion: %d\n", time.Now().UnixNano())
	blob := r.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, _ := blob.Writer()
	w.Write([]byte(data))
	w.Close()
	bh, err := r.Storer.SetEncodedObject(blob)
	if err != nil {
		log.Fatal(err)
	}
	root, err := put(r.Storer, head.TreeHash, strings.Split(*path, "/"), bh)
	if err != nil {
		log.Fatal(err)
	}
	sig := object.Signature{Name: "floor", Email: "floor@loopx.invalid", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "floor\n", TreeHash: root, ParentHashes: []plumbing.Hash{old.Hash()}}
	obj := r.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		log.Fatal(err)
	}
	ch, err := r.Storer.SetEncodedObject(obj)
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Storer.CheckAndSetReference(plumbing.NewHashReference(old.Name(), ch), old); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stdout, ch)
}

// put returns the tree that is tree (ZeroHash: empty) with the file at
// comps set to blob.
func put(s storer.EncodedObjectStorer, tree plumbing.Hash, comps []string, blob plumbing.Hash) (plumbing.Hash, error) {
	t := &object.Tree{}
	if !tree.IsZero() {
		o, err := s.EncodedObject(plumbing.TreeObject, tree)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if err := t.Decode(o); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	entry := object.TreeEntry{Name: comps[0], Mode: filemode.Regular, Hash: blob}
	at := -1
	for i, e := range t.Entries {
		if e.Name == comps[0] {
			at = i
		}
	}
	if len(comps) > 1 {
		sub := plumbing.ZeroHash
		if at >= 0 {
			sub = t.Entries[at].Hash
		}
		h, err := put(s, sub, comps[1:], blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entry = object.TreeEntry{Name: comps[0], Mode: filemode.Dir, Hash: h}
	}
	if at >= 0 {
		t.Entries[at] = entry
	} else {
		t.Entries = append(t.Entries, entry)
	}
	sort.Slice(t.Entries, func(i, j int) bool { return treeKey(t.Entries[i]) < treeKey(t.Entries[j]) })
	o := s.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(o)
}

// treeKey is git's tree order: folders sort as if their name ended in '/'.
func treeKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
