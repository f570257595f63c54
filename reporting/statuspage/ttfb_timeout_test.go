package statuspage

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestCheckPageTTFBCountsTimeouts: through the embedded store, a target
// cycling TTFB 50/100/150/200 ms and a run that timed out before its first
// byte (400 ms timeout) reads, on its check page, p95 "≥ 400 ms" with the
// timed-out runs counted, from raw history (1h) and from the rollups (6h);
// its phase table lists the timed-out runs. A target whose failed runs were
// refused connections keeps its p95 at its runs' TTFB: they are no sample.
func TestCheckPageTTFBCountsTimeouts(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var vs []reporting.Verdict
	n := 0
	for at := t0.Add(-time.Hour + 5*time.Second); at.Before(t0); at = at.Add(10 * time.Second) {
		a := verdict("asset", "origin-a", "eu", reporting.StateHealthy, "", t0.Sub(at))
		if i := n % 5; i < 4 {
			a.TTFB = time.Duration(i+1) * 50 * time.Millisecond
		} else {
			a.OK, a.State, a.Cause, a.Err = false, reporting.StateUnhealthy, reporting.CauseTimeout, "timeout: no response within 400ms"
			a.TTFB, a.Duration = 0, 400*time.Millisecond+200*time.Microsecond
		}
		b := verdict("asset", "origin-b", "eu", reporting.StateHealthy, "", t0.Sub(at))
		if b.TTFB = 60 * time.Millisecond; n%5 == 4 {
			b.OK, b.State, b.Cause, b.Err, b.TTFB = false, reporting.StateUnhealthy, "connect_refused", "connection refused", 0
		}
		vs = append(vs, a, b)
		n++
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	for _, tc := range []struct {
		window       string
		wantA, wantB string
	}{
		// 360 runs per target: 72 timed out (origin-a), 72 refused (origin-b).
		{"1h", "p50 150 ms · p95 ≥ 400 ms (360 runs, 72 timed out)", "p50 60 ms · p95 60 ms (288 runs)"},
		// Rollups: the mean is over the runs with a TTFB; the p95 is the
		// minutes' (timed out, at their wait: the histogram keeps it
		// within 1.6 %).
		{"6h", "mean 125 ms · p95≈ ≥ 39", "mean 60 ms · p95≈ 60 ms (288 runs)"},
	} {
		code, _, body := get(t, srv, "/check/asset?window="+tc.window)
		if code != http.StatusOK {
			t.Fatalf("GET /check/asset?window=%s = %d\n%s", tc.window, code, body)
		}
		doc := parseHTML(t, body)
		legends := map[string]string{}
		for _, fig := range findAll(doc, "data-chart-target") {
			tg, _ := attr(fig, "data-chart-target")
			for _, li := range findAll(fig, "data-region") {
				if li.Data == "li" {
					legends[tg] = strings.Join(strings.Fields(text(li)), " ")
				}
			}
		}
		if g := legends["origin-a"]; !strings.Contains(g, tc.wantA) {
			t.Errorf("window %s: origin-a legend %q, want it to hold %q", tc.window, g, tc.wantA)
		}
		if tc.window == "6h" && !strings.Contains(legends["origin-a"], "(360 runs, 72 timed out)") {
			t.Errorf("window 6h: origin-a legend %q, want (360 runs, 72 timed out)", legends["origin-a"])
		}
		if g := legends["origin-b"]; !strings.Contains(g, tc.wantB) {
			t.Errorf("window %s: origin-b legend %q, want it to hold %q", tc.window, g, tc.wantB)
		}
		if tc.window == "1h" {
			var timedOut []string
			for _, c := range findAll(doc, "data-timed-out") {
				v, _ := attr(c, "data-timed-out")
				timedOut = append(timedOut, v)
			}
			// The phase table covers the last 15 minutes: 90 runs, 18 timed out.
			if len(timedOut) != 1 || timedOut[0] != "18" {
				t.Errorf("phase table: timed-out counts %v, want [18] (origin-a only)", timedOut)
			}
		}
	}
}

// TestTTFBSLOTimedOutAtLeast: a TTFB SLO whose p95 falls on runs that
// timed out before their first byte reads as a lower bound: "≥ 400 ms
// (timeouts)" on the check page, current_at_least in GET /api/v1/slos.
func TestTTFBSLOTimedOutAtLeast(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Publish(context.Background(), runs("web", "o1", "eu", time.Minute, 10, 0)); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st, SLOs: func() []SLOStatus {
		return []SLOStatus{
			{Name: "web-ttfb · o1 (TTFB p95)", SLO: "web-ttfb", Check: "web", Target: "o1", Objective: "400ms",
				Current: 0.4003, CurrentAtLeast: true, BudgetLeft: 0, Window: 5 * time.Minute},
			{Name: "web-fast · o1 (TTFB p95)", SLO: "web-fast", Check: "web", Target: "o1", Objective: "600ms",
				Current: 0.212, BudgetLeft: 1, Window: 5 * time.Minute},
		}
	}})
	code, _, body := get(t, srv, "/api/v1/slos?check=web&target=o1")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/slos: %d\n%s", code, body)
	}
	for _, want := range []string{`"name":"web-ttfb"`, `"current":0.4003,"current_at_least":true`, `"current":0.212,"current_at_least":false`} {
		if !strings.Contains(strings.ReplaceAll(body, " ", ""), want) {
			t.Errorf("GET /api/v1/slos lacks %s:\n%s", want, body)
		}
	}
	_, _, page := get(t, srv, "/check/web")
	doc := parseHTML(t, page)
	cur := map[string]string{}
	for _, tr := range findAll(doc, "data-slo") {
		name, _ := attr(tr, "data-slo")
		cur[name] = strings.Join(strings.Fields(text(tr)), " ")
	}
	if g := cur["web-ttfb · o1 (TTFB p95)"]; !strings.Contains(g, "≥ 400 ms (timeouts)") {
		t.Errorf("check page SLO row %q, want ≥ 400 ms (timeouts)", g)
	}
	if g := cur["web-fast · o1 (TTFB p95)"]; !strings.Contains(g, "212 ms") || strings.Contains(g, "≥") {
		t.Errorf("check page SLO row %q, want 212 ms", g)
	}
}
