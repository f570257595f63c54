//go:build !unix

package main

import "os"

// lockDataDir is a no-op where flock(2) is not available.
func lockDataDir(dir, part, what string) (*os.File, error) { return nil, nil }

// lockDataDirShared is a no-op where flock(2) is not available.
func lockDataDirShared(dir, part, what string) (*os.File, error) { return nil, nil }

// partHeld reports false where flock(2) is not available.
func partHeld(dir, part string) bool { return false }
