//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes an exclusive lock on <dir>/<part>.lock for the life of
// the process, for a part of the data dir that one process at a time may
// use: the InfluxDB outbox (two writers would corrupt each other's cursor
// and delay or duplicate points) and the alerter's state. The embedded
// SQLite store may be shared (a proxy can read what a canary on the same
// host writes). A second process refuses to start and names the holder. The
// kernel drops the lock when the process exits, even on kill -9.
func lockDataDir(dir, part, what string) (*os.File, error) {
	path := filepath.Join(dir, part+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent.data_dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		} else {
			who = "process " + who
		}
		return nil, fmt.Errorf("agent.data_dir: %s: %s is in use by %s (give each process its own data_dir)", dir, what, who)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}
