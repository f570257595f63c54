package influx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPermOutboxPrivate: the outbox directory is 0700 and its segments and
// cursor 0600, also after rotation; a directory an older version left 0755
// is tightened on open.
func TestPermOutboxPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), OutboxDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := openOutbox(dir, 1<<20) // 128 KiB segments
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	for i := 0; i < 2; i++ { // 2 × about 125 KiB: the second rotates
		if _, err := o.append(seqLines(i*1000, 1000, 100)); err != nil {
			t.Fatal(err)
		}
	}
	lines, from, to, _ := o.next(10, 1<<20)
	if err := o.ack(from, to, len(lines)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("outbox dir: mode %#o, want 0700", fi.Mode().Perm())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	segs := 0
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".lp") {
			segs++
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if segs < 2 {
		t.Errorf("%d segments, want a rotation", segs)
	}
	if _, err := os.Stat(filepath.Join(dir, cursorFile)); err != nil {
		t.Errorf("no cursor file: %v", err)
	}
}
