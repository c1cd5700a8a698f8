package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestZZDebug(t *testing.T) {
	dir := newRepo(t)
	s := openT(t, dir, Options{})
	ctx := context.Background()
	var seed []Change
	for i := 0; i < 200; i++ {
		seed = append(seed, put(fmt.Sprintf("todos/%04d.yaml", i), todoYAML(i, 0)))
	}
	commitT(t, s, seed...)
	s.GC(ctx)
	phase := func(label string) {
		var tOpen, tHead, tSnap, tRead time.Duration
		N := 200
		for i := 0; i < N; i++ {
			t0 := time.Now()
			s2, _ := Open(dir, Options{})
			t1 := time.Now()
			h, _ := s2.Head()
			t2 := time.Now()
			sn, _ := s2.Snapshot(h)
			t3 := time.Now()
			sn.Read(fmt.Sprintf("todos/%04d.yaml", i%200))
			t4 := time.Now()
			s2.Close()
			tOpen += t1.Sub(t0); tHead += t2.Sub(t1); tSnap += t3.Sub(t2); tRead += t4.Sub(t3)
		}
		d := time.Duration(N)
		t.Logf("%s: open %v head %v snap %v read %v", label, tOpen/d, tHead/d, tSnap/d, tRead/d)
	}
	phase("fresh")
	unlock, _ := s.Lock(ctx, true)
	for i := 0; i < 2000; i++ {
		id := (i * 7919) % (200 + i/10)
		h, _ := s.Head()
		if _, err := s.Commit(h, []Change{put(fmt.Sprintf("todos/%04d.yaml", id), todoYAML(id, i))}, CommitInfo{}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			s.gcLocked(ctx, false)
		}
	}
	unlock()
	s.GC(ctx)
	phase("after")
}
