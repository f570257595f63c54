package main

import "fmt"

// dataDirLockError is a data dir lock that could not be taken: the lock
// file could not be opened (err), or another process holds it (holder).
// Its text names agent.data_dir; the demo, whose data dir is a flag, words
// it for --data-dir (flagError).
type dataDirLockError struct {
	dir, what, holder string
	err               error
}

func (e *dataDirLockError) Error() string {
	if e.err != nil {
		return "agent.data_dir: " + e.err.Error()
	}
	return fmt.Sprintf("agent.data_dir: %s: %s is in use by %s (give each process its own data_dir)", e.dir, e.what, e.holder)
}

func (e *dataDirLockError) Unwrap() error { return e.err }

// flagError is the error worded for the --data-dir flag.
func (e *dataDirLockError) flagError() error {
	if e.err != nil {
		return fmt.Errorf("--data-dir: %w", e.err)
	}
	return fmt.Errorf("--data-dir: %s: %s is in use by %s (stop it, or pass another --data-dir)", e.dir, e.what, e.holder)
}
