//go:build !unix

package store

// dirWritable is not checked ahead here; SQLite reports the failure.
func dirWritable(string) error { return nil }
