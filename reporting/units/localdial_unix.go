//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package units

import "syscall"

// openFileLimit is this process's soft open-file limit (RLIMIT_NOFILE).
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
