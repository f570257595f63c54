package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// setFileSizeLimit sets RLIMIT_FSIZE of process pid: with 1 byte every
// write to a regular file fails (EFBIG) as on a full disk.
func setFileSizeLimit(t *testing.T, pid int, cur uint64) {
	t.Helper()
	lim := syscall.Rlimit{Cur: cur, Max: ^uint64(0)}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
}

// TestHealthzWhileStoreCannotWrite runs the binary with the embedded store
// and then forbids it to write files (as a full data dir does): /healthz
// answers 503 naming the sink and the error, /readyz stays 200, the
// failure is logged once (not per batch), and when writes work again the
// verdicts of the whole failing period reach the store and /healthz is 200.
func TestHealthzWhileStoreCannotWrite(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	port := freePorts(t, 1)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {listen: "127.0.0.1:%d", region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], interval: 1s, http: {path: /healthz}}
`, port, data, o.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	// A pipe, so the child's logging is not stopped by the file-size
	// limit that stops its store.
	logs := &checktest.SyncBuffer{}
	cmd := exec.Command(bin, "run", "-c", path)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("vigil log:\n%s", logs.String())
		}
	}()
	waitFor(t, 15*time.Second, "/healthz 200", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	time.Sleep(1500 * time.Millisecond) // a verdict or two stored

	failFrom := time.Now()
	setFileSizeLimit(t, cmd.Process.Pid, 1)
	var body string
	waitFor(t, 15*time.Second, "/healthz 503 naming the embedded sink", func() bool {
		var code int
		code, body = do(t, "GET", base+"/healthz", "", nil)
		return code == 503 && strings.Contains(body, "sink embedded: writes failing since ") &&
			strings.Contains(body, "waiting for retry, at most 1024 batches kept): ")
	})
	t.Logf("/healthz while the store cannot write:\n%s", body)
	if code, rb := do(t, "GET", base+"/readyz", "", nil); code != 200 || !strings.Contains(rb, "warning: sink embedded: writes failing") {
		t.Errorf("/readyz = %d %q, want 200 with the sink as a warning", code, rb)
	}
	time.Sleep(4 * time.Second) // several more batches fail
	if n := strings.Count(logs.String(), `msg="sink publish failed"`); n != 1 {
		t.Errorf("%d \"sink publish failed\" lines, want 1 (later ones suppressed for a minute)", n)
	}
	failTo := time.Now()
	setFileSizeLimit(t, cmd.Process.Pid, ^uint64(0))
	waitFor(t, 40*time.Second, "/healthz 200 after writes work again", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 200
	})
	if !strings.Contains(logs.String(), `msg="sink publish recovered" sink=embedded`) {
		t.Errorf("no recovery line in the log")
	}
	if _, m := do(t, "GET", base+"/metrics", "", nil); !strings.Contains(m, `vigil_sink_dropped_total{sink="embedded"} 0`) {
		t.Errorf("verdicts dropped: %s", grepLines(m, "vigil_sink_dropped_total"))
	}

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("vigil did not stop")
	}
	s, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vs, err := s.History(context.Background(), reporting.HistoryQuery{Check: "up", Target: "o", Region: "r1",
		From: failFrom.Add(time.Second), To: failTo})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 3 {
		t.Errorf("%d verdicts stored from the %s the store could not write, want every run (>= 3)", len(vs), failTo.Sub(failFrom).Round(time.Second))
	}
}
