package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// metricDur reads a step metric (milliseconds) back as a duration.
func metricDur(s checks.StepResult, k string) time.Duration {
	return time.Duration(s.Metrics[k] * float64(time.Millisecond))
}

// closeDur: a and b differ by at most the float round trip of the step's
// millisecond metrics.
func closeDur(a, b time.Duration) bool {
	d := a - b
	return d >= -time.Microsecond && d <= time.Microsecond
}

// TestRunPhasesFromTheTTFBStep: a script run's dns, connect, TLS and
// transfer phases are those of the step its TTFB comes from (the first
// main step that got a response). They used to stay 0 beside that step's
// TTFB, so the status page's phase breakdown counted the whole TTFB, the
// connection's set-up included, as the server's wait. The `always` step
// before it, whose request also connects, does not count.
func TestRunPhasesFromTheTTFBStep(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Close every connection: each step's request connects anew.
		w.Header().Set("Connection", "close")
		w.Write([]byte(strings.Repeat("x", 64<<10)))
	}))
	t.Cleanup(srv.Close)
	r := apiScript(t, `
- {name: warm-up, always: true, http: {path: /a}}
- {name: first, http: {path: /b}}
- {name: second, http: {path: /c}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "local", URL: srv.URL})
	if !res.OK || len(res.Steps) != 3 {
		t.Fatalf("run: %s %s, steps %+v", res.Cause, res.Err, res.Steps)
	}
	s := res.Steps[1]
	t.Logf("run phases %+v; step %q metrics %v", res.Phases, s.Name, s.Metrics)
	if s.Metrics["connect_ms"] <= 0 {
		t.Fatalf("step %q reported no connect time: %v", s.Name, s.Metrics)
	}
	if res.Phases.TTFB != s.TTFB {
		t.Errorf("run TTFB %s, want step %q's %s", res.Phases.TTFB, s.Name, s.TTFB)
	}
	for _, p := range []struct {
		name string
		got  time.Duration
	}{{"dns_ms", res.Phases.DNS}, {"connect_ms", res.Phases.Connect}, {"tls_ms", res.Phases.TLS}, {"transfer_ms", res.Phases.Transfer}} {
		if want := metricDur(s, p.name); !closeDur(p.got, want) {
			t.Errorf("run %s %s, want step %q's %s", strings.TrimSuffix(p.name, "_ms"), p.got, s.Name, want)
		}
	}
	if res.Phases.DNS+res.Phases.Connect+res.Phases.TLS > res.Phases.TTFB {
		t.Errorf("run phases %+v: dns + connect + tls exceed the TTFB", res.Phases)
	}
}

// TestBrowserRunPhasesFromTheNavigation: a browser run's phases are its
// first navigation's document request's (Navigation Timing), like its
// TTFB: the run's dns, connect, tls and transfer are that step's metrics.
func TestBrowserRunPhasesFromTheNavigation(t *testing.T) {
	b := needChromium(t)
	// The document's body comes in two parts 150 ms apart: its transfer
	// phase is at least that long.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>p</title><p id="x">first</p>` + strings.Repeat(" ", 2048)))
		w.(http.Flusher).Flush()
		time.Sleep(150 * time.Millisecond)
		w.Write([]byte(`<p id="y">second</p>`))
	}))
	t.Cleanup(srv.Close)
	r := browserRunner(t, b, "", `[{browser: {navigate: /one}}, {browser: {navigate: /two}}]`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "local", URL: srv.URL})
	if !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
	s := res.Steps[0]
	t.Logf("run phases %+v; navigation metrics %v", res.Phases, s.Metrics)
	if res.Phases.TTFB != s.TTFB || s.TTFB <= 0 {
		t.Errorf("run TTFB %s, want the first navigation's %s", res.Phases.TTFB, s.TTFB)
	}
	if _, ok := s.Metrics["connect_ms"]; !ok {
		t.Fatalf("navigation reported no connect_ms: %v", s.Metrics)
	}
	for _, p := range []struct {
		name string
		got  time.Duration
	}{{"dns_ms", res.Phases.DNS}, {"connect_ms", res.Phases.Connect}, {"tls_ms", res.Phases.TLS}, {"transfer_ms", res.Phases.Transfer}} {
		if want := metricDur(s, p.name); !closeDur(p.got, want) {
			t.Errorf("run %s %s, want the navigation's %s", strings.TrimSuffix(p.name, "_ms"), p.got, want)
		}
	}
	if res.Phases.Transfer < 100*time.Millisecond {
		t.Errorf("run transfer %s, want the navigation's document transfer, at least 150ms (metrics %v)", res.Phases.Transfer, s.Metrics)
	}
}
