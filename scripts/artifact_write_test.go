package scripts

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// lockedBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestArtifactWriteFailureLeavesNoFile: when the disk refuses a screenshot
// (here: a file size limit, EFBIG, as a full disk's ENOSPC), no empty or
// cut file is left under an artifact's name, the run's result names no
// artifact, and the failure is logged once (WARN, naming the file and the
// error), not once per run.
func TestArtifactWriteFailureLeavesNoFile(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	data := t.TempDir()
	dir := ArtifactsDir(data)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	artifactWarnMu.Lock()
	artifactWarnAt, artifactWarnSuppressed = time.Time{}, 0
	artifactWarnMu.Unlock()

	if os.Geteuid() == 0 {
		// root writes in a read-only directory: limit the size of the
		// files this process writes instead (Chromium, started before,
		// keeps its own limit), and ignore SIGXFSZ so a write past it
		// fails with EFBIG.
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		signal.Ignore(syscall.SIGXFSZ)
		small := lim
		small.Cur = 512
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Errorf("restoring RLIMIT_FSIZE: %v", err)
			}
			signal.Reset(syscall.SIGXFSZ)
		})
	} else {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}

	// A screenshot step, then a failing step (its failure screenshot).
	r := browserRunner(t, b, data, `
- browser: {navigate: /shop}
- browser: {screenshot: true}
`, 20*time.Second)
	f := browserRunner(t, b, data, `
- browser: {navigate: /tiny}
- {timeout: 300ms, browser: {assert_text: {selector: "#x", equals: "not there"}}}
`, 20*time.Second)
	tgt := checks.Target{Name: "x", URL: o.URL}
	res := r.Run(context.Background(), tgt)
	if res.OK || len(res.Artifacts) != 0 || !strings.Contains(res.Err, "screenshot") {
		t.Errorf("screenshot step on a full disk: ok %v, err %q, artifacts %v; want a failed step naming no artifact", res.OK, res.Err, res.Artifacts)
	}
	res = f.Run(context.Background(), tgt)
	if res.OK || len(res.Artifacts) != 0 || !strings.Contains(res.Err, "no failure screenshot: saving the screenshot: ") {
		t.Errorf("failed run on a full disk: ok %v, err %q, artifacts %v; want a failure naming no artifact, saying why", res.OK, res.Err, res.Artifacts)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, _ := e.Info()
		t.Errorf("left in the artifacts directory: %s (%d bytes)", e.Name(), fi.Size())
	}
	out := logs.String()
	if n := strings.Count(out, "artifact not written"); n != 1 {
		t.Errorf("%d log lines about the failed write, want 1 (once per minute):\n%s", n, out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "file="+filepath.Join(dir, "shop-flow~x~")) || !strings.Contains(out, "err=") {
		t.Errorf("the log does not name the file and the error:\n%s", out)
	}
}
