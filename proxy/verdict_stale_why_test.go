package proxy

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestStaleVerdictsNameTheFailingSource: when a pool's verdicts go stale
// because its verdict source cannot be read (the canary or the store
// answers 502), the WARN line and the /healthz warning name that source
// and since when, instead of blaming the canaries.
func TestStaleVerdictsNameTheFailingSource(t *testing.T) {
	const maxAge = 400 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	now := time.Now()
	var down atomic.Bool
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "store unavailable", http.StatusBadGateway)
			return
		}
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "asset", Target: "o0", Region: "eu",
			State: reporting.StateHealthy, OK: true, At: time.Now(), Expires: time.Now().Add(time.Hour)}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	logs := &tryLogs{}
	h := startLog(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}), true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	eventually(t, "a verdict read", func() bool {
		w, err := h.p.VerdictReport()
		return err == nil && len(w) == 0 && time.Since(now) > 100*time.Millisecond
	})
	down.Store(true)
	eventually(t, "the stale warning", func() bool { return len(logs.lines("no fresh verdict for the pool's origins")) > 0 })
	line := logs.lines("no fresh verdict for the pool's origins")[0]
	want := "verdict source " + canary.URL + "/api/v1/verdicts cannot be read since "
	if !strings.Contains(line, want) || strings.Contains(line, "canaries stopped") {
		t.Errorf("stale line %q: want it to say %q…, not blame the canaries", line, want)
	}
	w, _ := h.p.VerdictReport()
	if len(w) != 1 || !strings.Contains(w[0], "(verdicts.max_age 400ms): "+want) {
		t.Errorf("/healthz warnings %q: want the pool's line naming the source (%q)", w, want)
	}
}

// TestAgentFaultVerdictsAreNotFresh: verdicts of runs the canary could not
// make (cause browser_unavailable, or agent) keep arriving, but bring no
// news of the origins: the pool's verdicts go stale after max_age and the
// proxy says so, as when the canaries stop.
func TestAgentFaultVerdictsAreNotFresh(t *testing.T) {
	const maxAge = 400 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	src := &memSource{}
	last := time.Now()
	src.set(reporting.Verdict{Check: "asset", Target: "o0", Region: "eu", State: reporting.StateHealthy,
		OK: true, At: last, Expires: last.Add(time.Hour)})
	logs := &tryLogs{}
	startLog(t, cfg, src, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 1000; i++ { // bounded: 1000 × 20ms, longer than eventually waits
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			src.set(reporting.Verdict{Check: "asset", Target: "o0", Region: "eu", State: reporting.StateHealthy,
				Cause: reporting.CauseBrowserUnavailable, Err: "the run did not start: no browser", At: time.Now(), Expires: last.Add(time.Hour)})
		}
	}()
	defer func() { close(stop); <-done }()
	eventually(t, "the stale warning", func() bool { return len(logs.lines("no fresh verdict for the pool's origins")) > 0 })
	line := logs.lines("no fresh verdict for the pool's origins")[0]
	if !strings.Contains(line, "the canaries stopped reporting its checks or cannot run them") {
		t.Errorf("stale line %q", line)
	}
	// The region reports nothing either, although its verdicts have not
	// expired.
	eventually(t, "the region stopped reporting", func() bool { return len(logs.lines("a region stopped reporting for the pool")) > 0 })
	if line := logs.lines("a region stopped reporting for the pool")[0]; !strings.Contains(line, "region=eu") ||
		!strings.Contains(line, "cannot run the checks") {
		t.Errorf("region line %q", line)
	}
}
