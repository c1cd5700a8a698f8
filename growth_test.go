package loopx_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

func dirSize(t testing.TB, dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestGrowthPerMutation measures how much the repository grows per todo add
// (state commit + board commit, automatic gc included). Run it with
// LOOPX_GROWTH=10000; it is skipped otherwise (it takes minutes).
func TestGrowthPerMutation(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("LOOPX_GROWTH"))
	if n == 0 {
		t.Skip("set LOOPX_GROWTH=N to measure")
	}
	dir := newStore(t, "g", "agent-a")
	if keep := os.Getenv("LOOPX_GROWTH_KEEP"); keep != "" {
		dir = keep // keep the repository for inspection
		must(t, dir, "init")
		must(t, dir, "goal", "create", "--goal-id", "g")
	}
	s, err := lx.Open(lx.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	objects := filepath.Join(dir, ".git", "objects")
	before := dirSize(t, objects)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := s.AddTodo(lease.AddRequest{Goal: "g", Todo: fmt.Sprintf("todo_growth_%06d", i), Text: fmt.Sprintf("grow %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	after := dirSize(t, objects)
	t.Logf("%d todo adds in %v (%.1f ms/op in process): objects grew %d bytes, %.0f B/mutation", n, elapsed,
		float64(elapsed.Milliseconds())/float64(n), after-before, float64(after-before)/float64(n))
}
