//go:build !unix

package main

import (
	"fmt"
	"log/slog"
	"os"
)

// privateDataDir prepares agent.data_dir (prepareDataDir with that key).
func privateDataDir(dir string, log *slog.Logger) error {
	return prepareDataDir("agent.data_dir", dir, log)
}

// prepareDataDir creates the data dir dir. Where Unix permissions do not
// exist it cannot restrict the directory to this user: the directory's ACL
// (inherited from its parent) decides who may read it.
func prepareDataDir(key, dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", key, dir)
	}
	return nil
}
