package canary

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSaturatedConcurrencyWarns: with agent.concurrency 1 and a check
// whose origin hangs until its 1.5 s timeout, the other check's runs wait
// for the slot far longer than their jitter window. The log says so once,
// naming agent.concurrency, and not once per late run (it said nothing).
func TestSaturatedConcurrencyWarns(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
		}
	}))
	defer origin.Close()
	cfg := testConfig(t, map[string]string{"o1": origin.URL},
		CheckConfig{Name: "hang", Targets: []string{"o1"}, Interval: 2 * time.Second, Timeout: 1500 * time.Millisecond, HTTP: &checks.HTTPSpec{Path: "/hang"}},
		CheckConfig{Name: "fine", Targets: []string{"o1"}, Interval: 2 * time.Second, HTTP: &checks.HTTPSpec{}})
	cfg.Agent.Concurrency = 1
	log := &checktest.SyncBuffer{}
	c := start(t, cfg, compile(t, cfg), Options{Log: slog.New(slog.NewTextHandler(log, nil))})
	for range 3 { // each waits for the hung run's slot
		hung := make(chan struct{})
		go func() { c.Trigger("hang", "o1"); close(hung) }()
		time.Sleep(100 * time.Millisecond)
		if _, err := c.Trigger("fine", "o1"); err != nil {
			t.Fatal(err)
		}
		<-hung
	}
	lines := logLines(log, "agent.concurrency")
	if len(lines) != 1 {
		t.Fatalf("%d log lines name agent.concurrency, want 1 (rate-limited):\n%s", len(lines), log.String())
	}
	for _, want := range []string{"level=WARN", "concurrency=1", "check=fine", "target=o1", "more_late_runs_not_logged=0"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the warning lacks %q: %s", want, lines[0])
		}
	}
}
