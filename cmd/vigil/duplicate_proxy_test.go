package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestProxyExportsDuplicateCanaries: `vigil proxy --verdicts-from A
// --verdicts-from B` with no store of its own, reading two canaries that
// run with the same region and vantage, exports
// vigil_duplicate_canaries on its /metrics (it only logged the warning).
func TestProxyExportsDuplicateCanaries(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	canary := func(inst string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			now := time.Now()
			json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "healthz", Target: "a", Region: "eu-west", Vantage: "v1",
				State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute), Instance: inst}})
		}))
		t.Cleanup(s.Close)
		return s
	}
	ca, cb := canary("vm1-aaaa"), canary("vm2-bbbb")
	path := writeConfig(t, fmt.Sprintf(`
agent: {listen: 127.0.0.1:0, data_dir: %q}
targets: [{name: a, url: %s}]
proxy:
  listen: 127.0.0.1:0
  verdict_poll: 50ms
  pools: [{name: web, origins: [{target: a}], verdicts: {checks: [healthz]}}]
`, t.TempDir(), o.URL()))
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{proxy: true}, verdictsFrom: []string{ca.URL, cb.URL},
		log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	want := `vigil_duplicate_canaries{region="eu-west",vantage="v1"} 2`
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if addr := a.Addr(); addr != "" {
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				last = string(b)
				if strings.Contains(last, want) {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	i := strings.Index(last, "vigil_duplicate")
	t.Fatalf("no %s on /metrics within 10s (found at %d)", want, i)
}
