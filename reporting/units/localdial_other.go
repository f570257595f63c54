//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package units

func openFileLimit() (uint64, bool) { return 0, false }
