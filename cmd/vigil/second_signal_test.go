package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuf is a bytes.Buffer safe for the child's stderr copier and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestSecondSignalCancelsRunsInFlight runs the binary: after SIGTERM a
// canary waits for its runs in flight, each up to its timeout (20 s here,
// against an origin that never answers); a second SIGTERM cancels them
// and vigil exits at once (0), without keeping their results. Before, the
// second signal was ignored and the stop took the whole timeout.
func TestSecondSignalCancelsRunsInFlight(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a blackhole: accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer ln.Close()

	dir := t.TempDir()
	agent := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1))
	// A scheduled run (Run waits for those, not for triggered ones): a
	// cron check that fires once a minute, 5 s from now.
	fire := time.Now().Add(5 * time.Second)
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {listen: %q, data_dir: %q}
targets: [{name: bh, url: "http://%s"}]
checks:
  - {name: hang, targets: [bh], cron: "%d * * * * *", timeout: 20s, http: {path: /}}
`, agent, filepath.Join(dir, "data"), ln.Addr(), fire.Second())), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuf
	cmd, exited := startReady(t, exec.Command(bin, "canary", "-c", path), &stderr, agent)
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(time.Until(fire.Add(5 * time.Second))):
		t.Fatal("the scheduled run did not reach the origin")
	}

	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("exited %v after the first SIGTERM with a 20s run in flight (%v)", time.Since(sent), err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, stderr.String())
		}
		if d := time.Since(sent); d > 5*time.Second {
			t.Errorf("exited %v after the first SIGTERM, want within ~1s of the second", d)
		}
	case <-time.After(12 * time.Second):
		t.Fatalf("still running %v after two SIGTERMs with a 20s run in flight\n%s", time.Since(sent), stderr.String())
	}
	if !strings.Contains(stderr.String(), "second signal: cancelling the checks in flight") {
		t.Errorf("the log does not say the second signal cancelled the runs in flight:\n%s", stderr.String())
	}
}
