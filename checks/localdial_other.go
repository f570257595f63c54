//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package checks

func openFileLimit() (uint64, bool) { return 0, false }
