//go:build unix

package store_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestOpenPermissionDenied: a vigil.db this user may not open, or a data
// dir it may not write (SQLite puts -wal and -shm beside the file), is an
// error saying "permission denied" and naming the path, not SQLite's
// "unable to open database file (14)". Root may open anything, so as root
// the test runs itself again as nobody (uid 65534).
func TestOpenPermissionDenied(t *testing.T) {
	if dir := os.Getenv("VIGIL_TEST_OPEN_DIR"); dir != "" {
		_, err := store.Open(dir, store.Options{})
		if err == nil {
			t.Fatal("Open succeeded")
		}
		os.Stdout.WriteString("OPEN ERROR: " + err.Error() + "\n")
		return
	}
	base, err := os.MkdirTemp("", "vigil-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	uid := os.Getuid()
	var cred *syscall.Credential
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if uid == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		b, err := os.ReadFile(bin) // the test binary's own dir is private to root
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(base, "store.test")
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name          string
		dirMode, mode os.FileMode
		want          string
	}{
		{"unreadable vigil.db", 0o755, 0o000, "store: open %s/vigil.db: permission denied"},
		{"read-only data dir", 0o555, 0o666, "store: data dir %s: vigil.db needs its -wal and -shm files beside it: permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(dir, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			os.Remove(filepath.Join(dir, store.FileName+"-wal"))
			os.Remove(filepath.Join(dir, store.FileName+"-shm"))
			if err := os.Chmod(filepath.Join(dir, store.FileName), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.dirMode); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			cmd := exec.Command(bin, "-test.run=^TestOpenPermissionDenied$", "-test.count=1")
			cmd.Env = append(os.Environ(), "VIGIL_TEST_OPEN_DIR="+dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			want := "OPEN ERROR: " + strings.ReplaceAll(tc.want, "%s", dir) + "\n"
			if !strings.Contains(string(out), want) {
				t.Errorf("got:\n%s\nwant the line %q", out, want)
			}
		})
	}
}
