package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestWatchSkipsHalfWrittenFile: a config file rewritten in place (scp,
// `cat > vigil.yaml`) is first a truncated file that may still parse, here
// with origin c cut off. The watcher used to reload it at once, which
// dropped c's drain for good (the full file a moment later brought c back
// undrained, taking live traffic while under maintenance). A change is now
// applied only once the file is the same at two polls in a row: the
// truncated file, replaced within one poll, is never applied, and the drain
// survives. Several rounds, as an unfixed watcher sees the truncated file
// only when a poll falls in its window (1 in 2 here).
func TestWatchSkipsHalfWrittenFile(t *testing.T) {
	var urls []string
	for range 3 {
		o := checktest.NewOrigin()
		defer o.Close()
		urls = append(urls, o.URL())
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	full := func(round int) string {
		return fmt.Sprintf(`# round %d
agent: {region: r1, data_dir: %q}
targets:
  - {name: a, url: %s}
  - {name: b, url: %s}
  - {name: c, url: %s}
proxy:
  listen: 127.0.0.1:0
  pools:
    - name: web
      origins:
        - {target: a}
        - {target: b}
        - {target: c}
`, round, filepath.Join(dir, "data"), urls[0], urls[1], urls[2])
	}
	if err := os.WriteFile(path, []byte(full(0)), 0o600); err != nil {
		t.Fatal(err)
	}
	const every = 300 * time.Millisecond
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{proxy: true}, listener: ln, watch: every, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	stop := runApp(t, a)
	defer stop()
	if !a.prx.Drain("c", "maintenance") {
		t.Fatal("no origin c to drain")
	}
	drained := func() (n int, c bool) {
		for _, o := range a.prx.Origins() {
			n++
			if o.Name == "c" && o.Drained {
				c = true
			}
		}
		return n, c
	}
	for round := 1; round <= 6; round++ {
		before := reloads(a)
		f := full(round)
		cut := f[:strings.Index(f, "        - {target: c}")]
		// In place, as `cat > vigil.yaml` writes: truncated first, the rest
		// half a poll later.
		if err := os.WriteFile(path, []byte(cut), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(every / 2)
		if err := os.WriteFile(path, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
		want := fileStamp(path)
		waitFor(t, 10*time.Second, "the full file reloaded", func() bool {
			return a.current().stamp == want
		})
		time.Sleep(every) // a poll more: nothing else is reloaded
		if n := reloads(a) - before; n != 1 {
			t.Errorf("round %d: %v reloads, want 1 (the full file only)", round, n)
		}
		if n, c := drained(); n != 3 || !c {
			t.Fatalf("round %d: %d origins, c drained %v; want 3 and c still drained (the truncated file was applied)", round, n, c)
		}
	}
}

// reloads is the app's count of successful reloads.
func reloads(a *app) float64 {
	var m dto.Metric
	a.reloadOK.Write(&m)
	return m.GetCounter().GetValue()
}
