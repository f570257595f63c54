//go:build unix

package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestDataDirLock: a second alerter on the same data dir refuses to start
// and names the holder; once the first stops, it starts.
func TestDataDirLock(t *testing.T) {
	path := proxyOnlyConfig(t, "http://127.0.0.1:1")
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	first, err := newApp(cfg, appOptions{roles: roles{alerter: true}, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cfg2, _ := loadConfig(path, os.LookupEnv)
	_, err = newApp(cfg2, appOptions{roles: roles{alerter: true}, log: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "the alerter's state (alerts.json) is in use by process") ||
		!strings.Contains(err.Error(), cfg.Agent.DataDir) {
		t.Fatalf("second alerter on one data dir: %v, want a refusal naming the dir and the holder", err)
	}
	// A proxy may share the dir (it reads the embedded store, holds no lock).
	p, err := newApp(cfg2, appOptions{roles: roles{proxy: true}, log: discardLogger()})
	if err != nil {
		t.Fatalf("a proxy beside the alerter: %v", err)
	}
	p.close(context.Background())
	first.close(context.Background())
	again, err := newApp(cfg2, appOptions{roles: roles{alerter: true}, log: discardLogger()})
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	again.close(context.Background())
}
