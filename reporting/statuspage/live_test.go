package statuspage

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestOverviewMarksLiveTrafficFailing replays the seed incident on the
// overview, over the real embedded store: origin sg-b's /healthz check is
// healthy while the proxy's signals say 48% of its live requests failed.
// The proxy section marks it with both, the summary counts it, the firing
// live_errors alert is listed (linking the proxy section, not a check page
// named after the pool), and the signals are read once per 5 seconds
// however often the page is loaded.
func TestOverviewMarksLiveTrafficFailing(t *testing.T) {
	now := t0
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return now }, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	var sigs []reporting.Signal
	for i := 0; i < 20; i++ {
		at := now.Add(-time.Duration(19-i) * 15 * time.Second)
		sigs = append(sigs,
			reporting.Signal{Pool: "web", Origin: "sg-b", Region: "eu", Vantage: "p1", At: at, Window: 15 * time.Second,
				Requests: 49, Status5xx: 24 - i%2},
			reporting.Signal{Pool: "web", Origin: "sg-a", Region: "eu", Vantage: "p1", At: at, Window: 15 * time.Second,
				Requests: 49})
	}
	if err := st.PublishSignals(ctx, sigs); err != nil {
		t.Fatal(err)
	}
	healthz := func(target string) reporting.Verdict {
		return reporting.Verdict{Check: "healthz", Target: target, Tier: reporting.TierShallow, Region: "eu", Vantage: "eu-1",
			State: reporting.StateHealthy, OK: true, StatusCode: 200, Interval: 10 * time.Second, At: now, Expires: now.Add(time.Minute)}
	}
	if err := st.Publish(ctx, []reporting.Verdict{healthz("sg-a"), healthz("sg-b")}); err != nil {
		t.Fatal(err)
	}
	// What cmd/vigil wires: the store's signals over the rule's window,
	// judged by the live_errors thresholds.
	rule := alerting.LiveErrorsRule{}.WithDefaults()
	var reads atomic.Int64
	live := func(ctx context.Context) ([]LiveOrigin, error) {
		reads.Add(1)
		ss, err := st.Signals(ctx, now.Add(-rule.Window))
		if err != nil {
			return nil, err
		}
		var out []LiveOrigin
		for _, f := range alerting.LiveFigures(ss, now, rule.Window) {
			out = append(out, LiveOrigin{Pool: f.Pool, Origin: f.Origin, Requests: f.Requests, Failed: f.Failed(),
				Breakdown: f.Breakdown(), Ejected: f.Ejected, Signals: f.Signals, Window: rule.Window, Failing: f.Failing(rule)})
		}
		return out, nil
	}
	flags := []Flag{{Source: FlagVerdict}, {Source: FlagPassive}, {Source: FlagDrained}}
	srv := serve(t, Options{Verdicts: st, Now: func() time.Time { return now }, Live: live,
		Origins: func() []Origin {
			return []Origin{{Pool: "web", Name: "sg-a", Available: true, Flags: flags},
				{Pool: "web", Name: "sg-b", Available: true, Flags: flags}}
		},
		Alerts: func() []Alert {
			return []Alert{{Rule: "live_errors", Check: "web", Target: "sg-b", Severity: "page", Regions: []string{"eu"},
				Summary: "pool web origin sg-b: 48% of live requests failed over 5m (470 of 980: 470 5xx) while its checks pass (healthz: healthy in eu)"}}
		}})
	code, _, body := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d", code)
	}
	doc := parseHTML(t, body)
	marks := map[string]string{}
	for _, row := range findAll(doc, "data-origin") {
		name, _ := attr(row, "data-origin")
		for _, n := range findAll(row, "data-live-failing") {
			marks[name] = strings.Join(strings.Fields(text(n)), " ")
		}
	}
	want := "✕ live traffic failing: 48% of 980 requests failed over 5m (470 5xx); checks pass (healthz)"
	if marks["sg-b"] != want || len(marks) != 1 {
		t.Fatalf("origin marks %q, want sg-b alone: %q", marks, want)
	}
	var count string
	for _, n := range findAll(doc, "data-count") {
		if v, _ := attr(n, "data-count"); v == "live-failing" {
			count = strings.Join(strings.Fields(text(n)), " ")
		}
	}
	if count != "1 origins failing live traffic" {
		t.Errorf("summary count %q", count)
	}
	if !strings.Contains(body, `<a href="#proxy">pool web</a> · sg-b`) || strings.Contains(body, `href="/check/web"`) {
		t.Errorf("the live_errors alert row does not link the proxy section")
	}
	for i := 0; i < 3; i++ {
		get(t, srv, "/")
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("signals read %d times for 4 loads within 5s, want 1", n)
	}
	now = now.Add(6 * time.Second)
	get(t, srv, "/")
	if n := reads.Load(); n != 2 {
		t.Errorf("signals read %d times after 6s, want 2", n)
	}
}
