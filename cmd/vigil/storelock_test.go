//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestStoreLockOneCanary: a second canary (vigil canary, or vigil run with
// alerting disabled, so the alerter's lock does not stop it) on the data
// dir of a running canary refuses to start, exit 1, naming the dir and the
// process; before, both ran and wrote every verdict twice into vigil.db.
// vigil check and vigil validate, which do not write the store, still run
// beside it, and once the first stops a canary starts there.
func TestStoreLockOneCanary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the vigil binary (-short)")
	}
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()
	dir := filepath.Join(t.TempDir(), "data")
	path := writeConfig(t, healthzConfig(dir, o.URL())+"alerting: {disabled: true}\n")

	first := startLogged(t, bin, "canary", "-c", path, "--listen", "127.0.0.1:0")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(first.stderr.String(), "vigil started"); time.Sleep(20 * time.Millisecond) {
		first.alive(t)
		if time.Now().After(deadline) {
			t.Fatalf("the first canary did not start:\n%s", first.stderr.String())
		}
	}
	want := fmt.Sprintf("vigil: agent.data_dir: %s: the store (vigil.db) is in use by process %d (give each process its own data_dir)",
		dir, first.cmd.Process.Pid)
	for _, role := range []string{"canary", "run"} {
		out, code := runCLIWithin(t, 20*time.Second, role, "-c", path, "--listen", "127.0.0.1:0", "--log-level", "error")
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("vigil %s beside a running canary: exit %d, %q\nwant exit 1 with %q", role, code, out, want)
		}
	}
	first.alive(t)

	if out, code := runCLI(t, "check", "-c", path); code != 0 || !strings.Contains(out, "healthz") {
		t.Errorf("vigil check beside a running canary: exit %d, %q; want 0", code, out)
	}
	if out, code := runCLI(t, "validate", "-c", path); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("vigil validate beside a running canary: exit %d, %q; want 0, ok", code, out)
	}

	if code := first.stop(t); code != 0 {
		t.Fatalf("the first canary exited %d:\n%s", code, first.stderr.String())
	}
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true, page: true}, log: discardLogger()})
	if err != nil {
		t.Fatalf("a canary after the first stopped: %v", err)
	}
	a.close(context.Background())
}

// TestStoreLockShards: the shards of one check set may share a store
// (vigil canary --shard i/n), but not with a second copy of a shard, with
// an unsharded canary or with shards of another count, which would write
// some verdicts twice.
func TestStoreLockShards(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := filepath.Join(t.TempDir(), "data")
	path := writeConfig(t, healthzConfig(dir, o.URL()))
	start := func(shard canary.Shard) (*app, error) {
		cfg, err := loadConfig(path, os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		return newApp(cfg, appOptions{roles: roles{canary: true, page: true}, shard: shard, log: discardLogger()})
	}
	var running []*app
	defer func() {
		for _, a := range running {
			a.close(context.Background())
		}
	}()
	for _, s := range []canary.Shard{{Index: 0, Of: 2}, {Index: 1, Of: 2}} {
		a, err := start(s)
		if err != nil {
			t.Fatalf("shard %d/2 beside the other: %v", s.Index+1, err)
		}
		running = append(running, a)
	}
	if _, err := start(canary.Shard{Index: 1, Of: 2}); err == nil ||
		err.Error() != fmt.Sprintf("agent.data_dir: %s: shard 2/2 of the store (vigil.db) is in use by process %d (give each process its own data_dir)", dir, os.Getpid()) {
		t.Errorf("a second shard 2/2: %v, want a refusal naming the shard and the process", err)
	}
	if _, err := start(canary.Shard{}); err == nil ||
		err.Error() != fmt.Sprintf("agent.data_dir: %s: the store (vigil.db) is in use by another process (give each process its own data_dir)", dir) {
		t.Errorf("an unsharded canary beside the shards: %v, want a refusal", err)
	}
	if _, err := start(canary.Shard{Index: 0, Of: 3}); err == nil ||
		err.Error() != fmt.Sprintf("agent.data_dir: %s: the store (vigil.db) is in use by canaries sharded 2 ways, not 3 (run every shard of one check set with the same --shard i/n, or give each its own data_dir)", dir) {
		t.Errorf("shard 1/3 beside shards of 2: %v, want a refusal naming both counts", err)
	}
	for _, a := range running {
		a.close(context.Background())
	}
	running = nil
	a, err := start(canary.Shard{})
	if err != nil {
		t.Fatalf("an unsharded canary after the shards stopped: %v", err)
	}
	running = append(running, a)
	if _, err := start(canary.Shard{Index: 0, Of: 2}); err == nil ||
		err.Error() != fmt.Sprintf("agent.data_dir: %s: the store (vigil.db) is in use by process %d (give each process its own data_dir)", dir, os.Getpid()) {
		t.Errorf("a shard beside an unsharded canary: %v, want a refusal naming the process", err)
	}
}
