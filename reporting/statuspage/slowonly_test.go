package statuspage

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestUptimeIgnoresSlowOnlyRuns: a target whose runs all answered 200 but
// one in four too slowly (cause ttfb, state degraded) shows 100% uptime
// with no failed run on its check page; a run that failed its status
// assertion still counts. Through the embedded store's rollups.
func TestUptimeIgnoresSlowOnlyRuns(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var vs []reporting.Verdict
	n := 0
	for at := t0.Add(-time.Hour + 5*time.Second); at.Before(t0); at = at.Add(10 * time.Second) {
		for _, target := range []string{"slow", "broken"} {
			v := verdict("asset", target, "eu", reporting.StateHealthy, "", t0.Sub(at))
			if n%4 == 0 {
				v.OK, v.State, v.TTFB = false, reporting.StateDegraded, 700*time.Millisecond
				v.Cause, v.Err = reporting.CauseTTFB, "ttfb 700ms over 500ms"
				if target == "broken" {
					v.Cause, v.Err, v.StatusCode = "status", "status 503, want 200", 503
				}
			}
			vs = append(vs, v)
		}
		n++
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	code, _, body := get(t, srv, "/check/asset")
	if code != http.StatusOK {
		t.Fatalf("GET /check/asset = %d\n%s", code, body)
	}
	doc := parseHTML(t, body)
	got := map[string][2]string{}
	for _, c := range findAll(doc, "data-uptime-target") {
		if w, _ := attr(c, "data-window"); w != "24h" {
			continue
		}
		tg, _ := attr(c, "data-uptime-target")
		f, _ := attr(c, "data-failed")
		got[tg] = [2]string{f, text(c)}
	}
	if g := got["slow"]; g != [2]string{"0", "100.000% 0 of 360 runs failed, over the last 1h 0m only"} {
		t.Errorf("slow-only target: data-failed %q, text %q; want 0 failed, 100%%", g[0], g[1])
	}
	if g := got["broken"]; g != [2]string{"90", "75.000% 90 of 360 runs failed, over the last 1h 0m only"} {
		t.Errorf("target failing its status assertion: data-failed %q, text %q; want 90 failed", g[0], g[1])
	}
}
