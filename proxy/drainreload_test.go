package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDrainDuringReloadKept: a drain acknowledged (Drain reported the
// origin) while a reload of the same configuration runs holds afterwards,
// in what /api/v1/origins shows and in the drains file a restart reads.
func TestDrainDuringReloadKept(t *testing.T) {
	dir := t.TempDir()
	// More pools, built after web's flags were copied, widen the window in
	// which a drain of the old generation was lost.
	cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1")
	for i := range 3 {
		more := PoolConfig{Name: fmt.Sprintf("more%d", i), Policy: PolicyRoundRobin, PathPrefix: fmt.Sprintf("/more%d/", i)}
		for k := range 64 {
			port := 2 + i*64 + k
			more.Origins = append(more.Origins, OriginConfig{Target: fmt.Sprintf("m%d", port), URL: fmt.Sprintf("http://127.0.0.1:%d", port)})
		}
		cfg.Pools = append(cfg.Pools, more)
	}
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), WithRegistry(prometheus.NewRegistry()), WithStateDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	drained := func() bool {
		for _, s := range p.Origins() {
			if s.Name == "o0" {
				return s.Drained
			}
		}
		t.Fatal("o0 not in Origins()")
		return false
	}
	inFile := func() bool {
		b, err := os.ReadFile(filepath.Join(dir, drainsFile))
		if err != nil {
			t.Fatal(err)
		}
		var doc drainsDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", drainsFile, err)
		}
		return len(doc.Drains) == 1 && doc.Drains[0].Origin == "o0"
	}
	t0 := time.Now()
	for range 20 {
		if err := p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	reloadTook := time.Since(t0) / 20
	lost, fileLost, rounds := 0, 0, 0
	end := time.Now().Add(8 * time.Second)
	for ; rounds < 1000 && time.Now().Before(end); rounds++ {
		// The drain starts at a point that sweeps across the reload.
		delay := time.Duration(rounds%16) * reloadTook / 16
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); p.Reload(cfg) }()
		for t0 := time.Now(); time.Since(t0) < delay; {
		}
		ok := p.Drain("o0", "maintenance")
		wg.Wait()
		if !ok {
			t.Fatal("Drain found no origin o0")
		}
		if !drained() {
			lost++
		}
		if !inFile() {
			fileLost++
		}
		if !p.Undrain("o0") || drained() {
			t.Fatal("Undrain did not return o0 to service")
		}
	}
	t.Logf("%d rounds, a reload takes %v", rounds, reloadTook)
	if lost > 0 || fileLost > 0 {
		t.Errorf("acknowledged drain lost after a concurrent reload: in memory %d, in %s %d, of %d rounds", lost, drainsFile, fileLost, rounds)
	}
}
