//go:build unix

package proxy

import "syscall"

// openFileLimit is this process's open-file limit (RLIMIT_NOFILE, soft),
// 0 when unknown or unlimited. Go's syscall package raised the soft limit
// to the hard one less 1 when the process started (Go 1.19, issue 46279;
// less 1 so that it can tell when another process changed the limit), so
// this is about the most the process can have.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	// Cur is int64 on some systems; RLIM_INFINITY is all ones (Linux) or
	// 1<<63-1 (macOS, BSDs).
	if cur := uint64(rl.Cur); cur < 1<<62 {
		return cur
	}
	return 0
}
