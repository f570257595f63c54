//go:build linux

package checktest

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// ExhaustFDs lowers this process's open-file limit to a little above what
// is open and opens /dev/null until the limit is reached, so that the next
// socket() fails with EMFILE. It returns the lowered limit and the function
// that frees the descriptors and restores the limit.
func ExhaustFDs(t testing.TB) (uint64, func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(len(ents)) + 64
	if lim.Cur > old.Cur {
		t.Fatalf("only %d descriptors allowed, %d open", old.Cur, len(ents))
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	release := func() {
		for _, f := range files {
			f.Close()
		}
		files = nil
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring the open-file limit: %v", err)
		}
	}
	for i := 0; i < 1000; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				release()
				t.Fatalf("opening %s: %v, want EMFILE", os.DevNull, err)
			}
			return lim.Cur, release
		}
		files = append(files, f)
	}
	release()
	t.Fatal("the open-file limit was never reached")
	return 0, nil
}
