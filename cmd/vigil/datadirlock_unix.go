//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes an exclusive lock on <dir>/<part>.lock for the life of
// the process, for a part of the data dir that one process at a time may
// use: the InfluxDB outbox (two writers would corrupt each other's cursor
// and delay or duplicate points), the alerter's state, and the embedded
// store's verdicts (two canaries would write every verdict twice; a proxy
// may still share the store: it reads verdicts and writes its own
// signals). A second process refuses to start and names the holder. The
// kernel drops the lock when the process exits, even on kill -9.
func lockDataDir(dir, part, what string) (*os.File, error) {
	return flockPart(dir, part, what, syscall.LOCK_EX)
}

// lockDataDirShared takes a shared lock on <dir>/<part>.lock: processes
// holding it may run together, but none while another holds lockDataDir's
// exclusive lock on the part, and the other way round (sharded canaries on
// one store: each shard also locks its own part exclusively).
func lockDataDirShared(dir, part, what string) (*os.File, error) {
	return flockPart(dir, part, what, syscall.LOCK_SH)
}

func flockPart(dir, part, what string, how int) (*os.File, error) {
	path := filepath.Join(dir, part+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &dataDirLockError{dir: dir, err: err}
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		} else {
			who = "process " + who
		}
		return nil, &dataDirLockError{dir: dir, what: what, holder: who}
	}
	// The file names the exclusive holder; shared holders are several, and
	// clear a name left by an earlier exclusive holder.
	f.Truncate(0)
	if how == syscall.LOCK_EX {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// partHeld reports whether another process holds a lock (shared or
// exclusive) on <dir>/<part>.lock. The file is neither created nor changed.
func partHeld(dir, part string) bool {
	f, err := os.Open(filepath.Join(dir, part+".lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
