//go:build unix

package scripts

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"
)

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

// ownedBy reports whether fi's owner is the user uid.
func ownedBy(fi fs.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
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
