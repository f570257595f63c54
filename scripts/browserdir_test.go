//go:build unix

package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestBrowserStartSweepsDeadVigilDirs: the private directories (profile and
// temporary files) of a browser whose vigil was killed (kill -9, an OOM
// kill) are removed by the next browser start, a process still using such
// a profile killed first; those of a vigil that runs, and a symbolic link
// named like one, are left alone.
func TestBrowserStartSweepsDeadVigilDirs(t *testing.T) {
	needChromium(t)
	// Short: Chromium's socket path under it must fit in 107 bytes.
	tmp, err := os.MkdirTemp("/tmp", "vt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })

	mk := func(pid int) string {
		d := filepath.Join(tmp, fmt.Sprintf("vigil-cr-%d-123456", pid))
		if err := os.MkdirAll(filepath.Join(d, "profile", "Default"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "profile", "Default", "Cookies"), []byte("session=secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	staleDir := mk(dead.Process.Pid)
	liveDir := mk(live.Process.Pid)
	// A link named like a dead vigil's directory, pointing elsewhere.
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, fmt.Sprintf("vigil-cr-%d-654321", dead.Process.Pid))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	// A process left using the dead vigil's profile (as a Chromium child
	// that outlived it would), and one using the running vigil's.
	user := func(dir string) <-chan struct{} {
		c := exec.Command("sh", "-c", "sleep 60; true", "sh", "--user-data-dir="+filepath.Join(dir, "profile"))
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep is killed with it at the end
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { c.Wait(); close(exited) }()
		t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL); <-exited })
		return exited
	}
	staleUser, liveUser := user(staleDir), user(liveDir)

	b, err := startOwnBrowser(t, BrowserConfig{})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case <-staleUser:
	case <-time.After(5 * time.Second):
		t.Errorf("a process using the dead vigil's profile still runs after a browser start")
	}
	select {
	case <-liveUser:
		t.Errorf("a process using the running vigil's profile was killed")
	default:
	}
	if _, err := os.Stat(staleDir); !os.IsNotExist(err) {
		t.Errorf("%s (a dead vigil's) still there after a browser start (err %v)", staleDir, err)
	}
	if _, err := os.Stat(filepath.Join(liveDir, "profile", "Default", "Cookies")); err != nil {
		t.Errorf("%s (a running vigil's) was touched: %v", liveDir, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link %s was removed: %v", link, err)
	}
	if _, err := os.Stat(filepath.Join(target, "keep")); err != nil {
		t.Errorf("a file behind the symbolic link was removed: %v", err)
	}
	// The running browser's own directory is named after this process.
	p := profileDir(b.PID())
	if want := filepath.Join(tmp, fmt.Sprintf("vigil-cr-%d-", os.Getpid())); len(p) < len(want) || p[:len(want)] != want {
		t.Errorf("profile %q, want it under %s*", p, want)
	}
}
