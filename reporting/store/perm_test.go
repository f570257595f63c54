package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestPermStorePrivate: a new store's directory is 0700 and vigil.db,
// -wal and -shm are 0600; files an older version left 0644 are tightened
// when the store is opened again.
func TestPermStorePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	db := filepath.Join(dir, store.FileName)
	files := []string{db, db + "-wal", db + "-shm"}
	publish := func(s *store.Store) {
		if err := s.Publish(context.Background(), []reporting.Verdict{{Check: "c", Target: "t", State: reporting.StateHealthy, OK: true}}); err != nil {
			t.Fatal(err)
		}
	}

	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	publish(s)
	if got := modeOf(t, dir); got != 0o700 {
		t.Errorf("data dir: mode %#o, want 0700", got)
	}
	for _, f := range files {
		if got := modeOf(t, f); got != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", filepath.Base(f), got)
		}
	}

	// As an older version left them (the store still open, so -wal and
	// -shm exist): the next Open makes them private.
	for _, f := range files {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	publish(s2)
	for _, f := range files {
		if got := modeOf(t, f); got != 0o600 {
			t.Errorf("reopened: %s: mode %#o, want 0600", filepath.Base(f), got)
		}
	}
	s2.Close()
	s.Close()
}
