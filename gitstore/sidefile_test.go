package gitstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSideFiles(t *testing.T) {
	t.Parallel()
	s := openT(t, newRepo(t), Options{})
	for _, bad := range []string{"", "records.gob", "../loopx-x", "loopx-a/../../x", "/loopx-a", "loopx-a/.git/x"} {
		if err := s.WriteSideFile(bad, []byte("x"), false); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("WriteSideFile(%q) = %v, want ErrInvalidPath", bad, err)
		}
	}
	if data, err := s.ReadSideFile("loopx-cache/none"); data != nil || err != nil {
		t.Fatalf("missing side file: %q, %v", data, err)
	}
	for _, durable := range []bool{false, true} {
		if err := s.WriteSideFile("loopx-remote/origin/state.json", []byte("v1"), durable); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteSideFile("loopx-remote/origin/state.json", []byte("v2"), durable); err != nil {
			t.Fatal(err)
		}
		if data, err := s.ReadSideFile("loopx-remote/origin/state.json"); string(data) != "v2" || err != nil {
			t.Fatalf("read back %q, %v", data, err)
		}
	}
	if err := s.RemoveSideFile("loopx-remote/origin/state.json"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveSideFile("loopx-remote/origin/state.json"); err != nil {
		t.Fatalf("removing an absent side file: %v", err)
	}
}

func TestLockNamed(t *testing.T) {
	t.Parallel()
	s := openT(t, newRepo(t), Options{})
	if _, err := s.LockNamed(context.Background(), fenceFile); !errors.Is(err, ErrInvalidPath) {
		t.Fatalf("the writer fence is not a side lock: %v", err)
	}
	unlock, err := s.LockNamed(context.Background(), "loopx-sync.lock")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.LockNamed(ctx, "loopx-sync.lock"); !errors.Is(err, ErrBusy) {
		t.Fatalf("second holder: %v, want ErrBusy", err)
	}
	unlock()
	again, err := s.LockNamed(context.Background(), "loopx-sync.lock")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	again()
}
