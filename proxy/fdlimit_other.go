//go:build !unix

package proxy

// openFileLimit is 0 (unknown): no RLIMIT_NOFILE here.
func openFileLimit() uint64 { return 0 }
