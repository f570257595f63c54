package main

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestReloadSeesChangeBeforeWatcherStarts: a config file changed after it
// was read but before the app's file watcher started is still reloaded (the
// watcher compares against the file as it was read, not as it is when the
// watcher starts).
func TestReloadSeesChangeBeforeWatcherStarts(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	path := proxyOnlyConfig(t, o.URL())
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{proxy: true}, listener: ln, watch: 50 * time.Millisecond, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// Changed between load and Run.
	if err := os.WriteFile(path, []byte("proxy: [not, a, map\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	base := "http://" + ln.Addr().String()
	waitFor(t, 10*time.Second, "/healthz reporting the rejected reload", func() bool {
		code, body := do(t, "GET", base+"/healthz", "", nil)
		return code == 503 && strings.Contains(body, "config reload failed")
	})
}
