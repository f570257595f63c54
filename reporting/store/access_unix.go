//go:build unix

package store

import "syscall"

// dirWritable reports whether this process may create files in dir
// (access(2) with W_OK|X_OK): nil, or an error such as "permission denied".
func dirWritable(dir string) error {
	return syscall.Access(dir, 0o2|0o1)
}
