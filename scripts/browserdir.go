package scripts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// browserDirPrefix starts the name of the private directory of a running
// browser: vigil-cr-<pid of vigil>-<random>, under os.TempDir(). It
// holds the browser's profile (browserProfile) and Chromium's temporary
// files (its TMPDIR). The pid in the name lets a later start tell the
// directory of a vigil that was killed (kill -9, an OOM kill) from that of
// one that runs, and remove it (sweepBrowserDirs).
const browserDirPrefix = "vigil-cr-"

// browserProfile is the profile directory (--user-data-dir) in a private
// directory.
const browserProfile = "profile"

// browserDirName matches the names browserDir makes; group 1 is the pid.
var browserDirName = regexp.MustCompile(`^` + browserDirPrefix + `([0-9]+)-[0-9]+$`)

// browserDir makes the private directory of a browser that starts (0700).
// The name is short: Chromium makes a socket in its TMPDIR, and a socket's
// path is limited to 107 bytes.
func browserDir() (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", browserDirPrefix, os.Getpid()))
}

// pidRunning reports whether a process pid exists (of any user).
func pidRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sweepBrowserDirs removes, in os.TempDir(), the private directories of
// browsers whose vigil no longer runs: directories (not symbolic links)
// named like browserDir's, owned by this process's user, whose pid is no
// process. Chromium processes still using such a profile are killed first.
// It returns how many it removed.
func sweepBrowserDirs(log *slog.Logger) int {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		log.Warn("browser: listing stale browser directories", "dir", tmp, "err", err)
		return 0
	}
	uid := os.Geteuid()
	n := 0
	for _, e := range entries {
		m := browserDirName.FindStringSubmatch(e.Name())
		if m == nil || e.Type()&fs.ModeType != fs.ModeDir {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pidRunning(pid) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		killBrowserUsing(filepath.Join(dir, browserProfile))
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("browser: removing the directory of a browser whose vigil no longer runs", "dir", dir, "err", err)
			continue
		}
		log.Info("browser: removed the directory of a browser whose vigil no longer runs", "dir", dir, "pid", pid)
		n++
	}
	return n
}

// killBrowserUsing kills the processes (Chromium and its children, which
// all get --user-data-dir) that use profile as their profile, until none
// is found a few times in a row, for at most 2 s: a child can outlive the
// main process and write in the directory after it is removed.
func killBrowserUsing(profile string) {
	want := []byte("--user-data-dir=" + profile)
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
				if bytes.Equal(arg, want) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					found++
					break
				}
			}
		}
		if found == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

// removeBrowserDir removes the private directory of a browser that was
// stopped, after killing the child processes that still use its profile.
func removeBrowserDir(dir string) {
	killBrowserUsing(filepath.Join(dir, browserProfile))
	_ = os.RemoveAll(dir)
}
