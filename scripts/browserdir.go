package scripts

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		if !ownedBy(fi, uid) {
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

// removeBrowserDir removes the private directory of a browser that was
// stopped, after killing the child processes that still use its profile.
func removeBrowserDir(dir string) {
	killBrowserUsing(filepath.Join(dir, browserProfile))
	_ = os.RemoveAll(dir)
}
