package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// itemPath is the path of item i: "items/NNNNN.yaml", all in one directory
// (the worst case: every commit rewrites a tree listing every item), or
// sharded "items/XX/NNNNN.yaml" over 256 directories.
func itemPath(i int, sharded bool) string {
	if sharded {
		return fmt.Sprintf("items/%02x/%05d.yaml", i%256, i)
	}
	return fmt.Sprintf("items/%05d.yaml", i)
}

// benchStore returns a store whose tree holds files items.
func benchStore(b *testing.B, files int, sharded bool) *Store {
	b.Helper()
	dir := newRepo(b)
	s := openT(b, dir, Options{})
	changes := make([]Change, 0, files)
	for i := 0; i < files; i++ {
		changes = append(changes, put(itemPath(i, sharded), fmt.Sprintf("id: %d\ntitle: item number %d\nstate: open\n", i, i)))
	}
	commitT(b, s, changes...)
	return s
}

// BenchmarkCommit measures one Commit changing one file (fsyncs included),
// with the fence held, in a tree of 100 or 10,000 files.
func BenchmarkCommit(b *testing.B) {
	for _, c := range []struct {
		files   int
		sharded bool
	}{{100, false}, {10000, false}, {10000, true}} {
		name := fmt.Sprintf("files=%d", c.files)
		if c.sharded {
			name += "-sharded"
		}
		b.Run(name, func(b *testing.B) {
			files := c.files
			s := benchStore(b, files, c.sharded)
			unlock, err := s.Lock(context.Background(), true)
			if err != nil {
				b.Fatal(err)
			}
			defer unlock()
			head, _ := s.Head()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := itemPath(i%files, c.sharded)
				head, err = s.Commit(head, []Change{put(p, fmt.Sprintf("id: %d\nstate: done %d\n", i%files, i))},
					CommitInfo{Message: "update " + p, When: time.Unix(1700000000+int64(i), 0)})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSnapshotRead measures reading one file of the head, as a short
// loopx command does: warm (same Store) and cold (Open, Head, Snapshot,
// Read, Close), on a store of loose objects and on one packed by GC.
func BenchmarkSnapshotRead(b *testing.B) {
	for _, packed := range []bool{false, true} {
		s := benchStore(b, 1000, false)
		for i := 0; i < 200; i++ {
			commitT(b, s, put(fmt.Sprintf("items/%05d.yaml", i), fmt.Sprintf("v%d", i)))
		}
		name := "commit-packs" // one small pack per commit, no GC yet
		if packed {
			name = "gc"
			if _, err := s.GC(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name+"/warm", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				head, err := s.Head()
				if err != nil {
					b.Fatal(err)
				}
				sn, err := s.Snapshot(head)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := sn.Read(fmt.Sprintf("items/%05d.yaml", i%1000)); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(name+"/cold", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s2, err := Open(s.WorkDir(), Options{})
				if err != nil {
					b.Fatal(err)
				}
				head, err := s2.Head()
				if err != nil {
					b.Fatal(err)
				}
				sn, err := s2.Snapshot(head)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := sn.Read(fmt.Sprintf("items/%05d.yaml", i%1000)); err != nil || !ok {
					b.Fatal(ok, err)
				}
				s2.Close()
			}
		})
	}
}

// BenchmarkChain compares two ways of making two commits in a tree of 1,000
// files (fsyncs included): two sequential Commits under a held fence, two
// sequential Transacts, and one Transact whose Proposal.Next chains the
// second commit (one round of fsyncs and one ref update for both). One op
// is the pair of commits. git is taken off PATH once the stores are made,
// so that no variant runs the automatic GC.
func BenchmarkChain(b *testing.B) {
	ctx := context.Background()
	const files = 1000
	change := func(i, k int) []Change {
		p := itemPath((2*i+k)%files, false)
		return []Change{put(p, fmt.Sprintf("id: %d\nstate: done %d\n", (2*i+k)%files, i))}
	}
	info := func(i, k int) CommitInfo {
		return CommitInfo{Message: fmt.Sprintf("update %d.%d", i, k), When: time.Unix(1700000000+int64(i), 0)}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	}
	b.Run("2xCommit", func(b *testing.B) {
		s := benchStore(b, files, false)
		b.Setenv("PATH", b.TempDir())
		unlock, err := s.Lock(ctx, true)
		if err != nil {
			b.Fatal(err)
		}
		defer unlock()
		head, _ := s.Head()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := 0; k < 2; k++ {
				if head, err = s.Commit(head, change(i, k), info(i, k)); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("2xTransact", func(b *testing.B) {
		s := benchStore(b, files, false)
		b.Setenv("PATH", b.TempDir())
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := 0; k < 2; k++ {
				if _, err := s.Transact(ctx, func(*Snapshot) (*Proposal, error) {
					return &Proposal{Changes: change(i, k), Info: info(i, k)}, nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("chainedTransact", func(b *testing.B) {
		s := benchStore(b, files, false)
		b.Setenv("PATH", b.TempDir())
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.Transact(ctx, func(*Snapshot) (*Proposal, error) {
				return &Proposal{Changes: change(i, 0), Info: info(i, 0), Next: func(Hash) (*Proposal, error) {
					return &Proposal{Changes: change(i, 1), Info: info(i, 1)}, nil
				}}, nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}
