package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecondDemoLeavesTheFirstAlone: a second `vigil demo` on the data dir
// of a running one (its own --listen, as the port-conflict message
// suggests) refuses to start, naming --data-dir and the process, before it
// writes anything: it used to rewrite demo.yaml with its own origins'
// ports, which the running demo's file watcher loaded, and the running
// proxy then answered 502 to everything.
func TestSecondDemoLeavesTheFirstAlone(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	f := demoFlags{listen: "127.0.0.1:0", proxyListen: "127.0.0.1:0", originPort: 0,
		dataDir: dir, traffic: 0, browser: false, logLevel: "warn"}
	d, err := startDemo(ctx, f, discardLogger(), io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := d.wait(); err != nil {
			t.Errorf("demo stopped with error: %v", err)
		}
	}
	defer stop()
	cfgPath := filepath.Join(dir, "demo.yaml")
	before, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	d2, err := startDemo(context.Background(), f, discardLogger(), &out)
	if err == nil {
		d2.cancel()
		d2.wait()
		t.Fatal("a second demo on the same data dir started")
	}
	for _, want := range []string{"--data-dir: " + dir + ": another vigil demo runs from it (process ", "): stop it, or pass another --data-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "agent.data_dir") {
		t.Errorf("error %q names agent.data_dir, a key the demo's user never wrote", err)
	}
	if out.Len() > 0 {
		t.Errorf("the refused demo printed %q (it started origins first)", out.String())
	}
	after, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the refused demo rewrote demo.yaml:\n%s", after)
	}

	// The running demo's proxy still reaches its origins.
	client := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 6; i++ {
		resp, err := client.Get("http://" + d.proxyAddr() + "/api/hello")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d through the running demo's proxy: %d", i, resp.StatusCode)
		}
	}

	// Once the first demo stops, the data dir is free again.
	stop()
	ctx3, cancel3 := context.WithCancel(context.Background())
	d3, err := startDemo(ctx3, f, discardLogger(), io.Discard)
	if err != nil {
		cancel3()
		t.Fatalf("a demo after the first stopped: %v", err)
	}
	cancel3()
	if err := d3.wait(); err != nil {
		t.Errorf("demo stopped with error: %v", err)
	}
}

// TestDemoBesideARunOnItsDataDir: a demo whose --data-dir holds the store
// of a running `vigil run` refuses to start, naming --data-dir (the flag its
// user passed) and the process that holds the store.
func TestDemoBesideARunOnItsDataDir(t *testing.T) {
	dir := t.TempDir()
	lock, err := lockDataDir(dir, "store", "the store (vigil.db)")
	if err != nil {
		t.Fatal(err)
	}
	if lock == nil {
		t.Skip("no flock(2) here: data dirs are not locked")
	}
	defer lock.Close()
	f := demoFlags{listen: "127.0.0.1:0", proxyListen: "127.0.0.1:0", originPort: 0,
		dataDir: dir, traffic: 0, browser: false, logLevel: "warn"}
	d, err := startDemo(context.Background(), f, discardLogger(), io.Discard)
	if err == nil {
		d.cancel()
		d.wait()
		t.Fatal("a demo started on a data dir whose store another process holds")
	}
	want := fmt.Sprintf("--data-dir: %s: the store (vigil.db) is in use by process %d (stop it, or pass another --data-dir)", dir, os.Getpid())
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
