package alerting

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// liveSignals are n signals of pool × origin in region eu, one every
// 15s ending at end, of req requests each; fail5xx(i) gives the i-th
// one's 5xx and ejected(i) whether the passive detector held it out.
func liveSignals(pool, origin string, end time.Time, n, req int, fail5xx func(int) int, ejected func(int) bool) []reporting.Signal {
	out := make([]reporting.Signal, n)
	for i := range out {
		at := end.Add(-time.Duration(n-1-i) * 15 * time.Second)
		s := reporting.Signal{Pool: pool, Origin: origin, Region: "eu", Vantage: "proxy-1", At: at, Window: 15 * time.Second,
			Requests: req, Status5xx: fail5xx(i)}
		if ejected != nil && ejected(i) {
			s.Ejected, s.Out, s.OutBy, s.Reason = true, true, "passive_ejected", "consecutive_5xx"
		}
		out[i] = s
	}
	return out
}

// healthz is the shallow check's fresh verdict of target in eu.
func healthz(target string, at time.Time, state reporting.State) reporting.Verdict {
	return reporting.Verdict{Check: "healthz", Target: target, Tier: reporting.TierShallow, Region: "eu", Vantage: "eu-1",
		State: state, OK: state == reporting.StateHealthy, At: at, Expires: at.Add(time.Minute), Interval: 15 * time.Second,
		StatusCode: 200}
}

func liveAlerts(a *Alerter) map[string]Alert {
	out := map[string]Alert{}
	for _, al := range a.Active() {
		if al.Rule == RuleLiveErrors {
			out[al.Check+"/"+al.Target] = al
		}
	}
	return out
}

// TestLiveErrorsFiresWhileChecksPass replays the seed incident through the
// embedded store: the shallow /healthz check passes while the proxy's
// signals say 48% of the live requests to sg-b failed. The live_errors
// alert fires after its `for` with a summary naming both; an origin under
// min_requests does not alert; recovery resolves it.
func TestLiveErrorsFiresWhileChecksPass(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hook := newRecorder(t)
	cfg := Config{DeadMan: DeadManRule{Disabled: true}, StatusPageURL: "http://127.0.0.1:9470",
		Retry:     RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "hook", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
	a, err := New(cfg, nil, st, Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	ctx := context.Background()
	// 20 signals of 49 requests over 5m: 980 requests, 470 of them 5xx
	// (24 and 23 in turn) for sg-b; sg-a is fine; sg-c fails half of
	// its 4 requests a window: 80 requests, under min_requests (100).
	publish := func(end time.Time, n int, failing bool) {
		t.Helper()
		var sigs []reporting.Signal
		first := int(end.Unix()/15) - n + 1 // the first signal's number
		b := func(i int) int { return 24 - (first+i)%2 }
		if !failing {
			b = func(int) int { return 0 }
		}
		sigs = append(sigs, liveSignals("web", "sg-b", end, n, 49, b, nil)...)
		sigs = append(sigs, liveSignals("web", "sg-a", end, n, 49, func(int) int { return 0 }, nil)...)
		sigs = append(sigs, liveSignals("web", "sg-c", end, n, 4, func(int) int { return 2 }, nil)...)
		if err := st.PublishSignals(ctx, sigs); err != nil {
			t.Fatal(err)
		}
		vs := []reporting.Verdict{healthz("sg-a", end, reporting.StateHealthy), healthz("sg-b", end, reporting.StateHealthy),
			healthz("sg-c", end, reporting.StateHealthy)}
		if err := st.Publish(ctx, vs); err != nil {
			t.Fatal(err)
		}
	}
	t0 := clock.Now()
	publish(t0, 20, true)
	if err := a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := liveAlerts(a); len(got) != 0 {
		t.Fatalf("fired before live_errors.for (2m): %v", got)
	}
	// Two minutes on, the same traffic: it fires.
	for i := 1; i <= 8; i++ {
		clock.Set(t0.Add(time.Duration(i) * 15 * time.Second))
		publish(clock.Now(), 1, true)
		if err := a.Evaluate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := liveAlerts(a)
	al, ok := got["web/sg-b"]
	if !ok || len(got) != 1 {
		t.Fatalf("want one live_errors alert for web/sg-b, got %v", got)
	}
	want := "pool web origin sg-b: 48% of live requests failed over 5m (470 of 980: 470 5xx) while its checks pass (healthz: healthy in eu)"
	if al.Summary != want {
		t.Fatalf("summary:\n got %q\nwant %q", al.Summary, want)
	}
	if al.Name != "VigilLiveTrafficFailing" || al.Severity != SeverityPage || al.Cause != "status_5xx" ||
		al.Labels["check"] != "web" || al.Labels["target"] != "sg-b" || al.StatusURL != "http://127.0.0.1:9470/" {
		t.Fatalf("alert: %+v", al)
	}
	waitFor(t, 5*time.Second, "the webhook's firing notification", func() bool {
		for _, p := range hook.webhooks(t) {
			if p.Status == StatusFiring && len(p.Alerts) == 1 && p.Alerts[0].Summary == want {
				return true
			}
		}
		return false
	})
	// Recovery: 5 minutes of clean traffic resolve it.
	for i := 9; i <= 9+20; i++ {
		clock.Set(t0.Add(time.Duration(i) * 15 * time.Second))
		publish(clock.Now(), 1, false)
	}
	if err := a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := liveAlerts(a); len(got) != 0 {
		t.Fatalf("still firing after recovery: %v", got)
	}
}

// TestLiveErrorsFlappingEjection: an origin the passive detector keeps
// ejecting (let back by a return probe that passes, ejected again) fails
// few live requests, since the proxy retries them away; held out in most
// of its signals, it alerts all the same, and the summary says no check
// covers it.
func TestLiveErrorsFlappingEjection(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a, err := New(Config{DeadMan: DeadManRule{Disabled: true}, LiveErrors: LiveErrorsRule{For: time.Nanosecond}}, nil, st,
		Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Out 3 windows of every 4; 5 failed tries (ejected) when let back.
	sigs := liveSignals("web", "sg-b", clock.Now(), 20, 5, func(i int) int {
		if i%4 == 3 {
			return 5
		}
		return 0
	}, func(i int) bool { return i%4 != 3 })
	for i := range sigs {
		if sigs[i].Ejected {
			sigs[i].Requests = 0 // out of rotation: no traffic
		}
	}
	// A one-off ejection of one window in 20 is no alert.
	sigs = append(sigs, liveSignals("web", "sg-a", clock.Now(), 20, 50, func(int) int { return 0 }, func(i int) bool { return i == 4 })...)
	if err := st.PublishSignals(ctx, sigs); err != nil {
		t.Fatal(err)
	}
	if err := a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	if err := a.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	got := liveAlerts(a)
	al, ok := got["web/sg-b"]
	if !ok || len(got) != 1 {
		t.Fatalf("want one live_errors alert for web/sg-b, got %v", got)
	}
	want := "pool web origin sg-b: ejected by the proxy's passive detector in 15 of 20 signals over 5m (consecutive_5xx), " +
		"100% of live requests failed over 5m (25 of 25: 25 5xx); no check covers sg-b: add one that fetches what users fetch"
	if al.Summary != want {
		t.Fatalf("summary:\n got %q\nwant %q", al.Summary, want)
	}
}

// TestLiveErrorsConfig: defaults, and errors naming the key.
func TestLiveErrorsConfig(t *testing.T) {
	var c Config
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	r := c.LiveErrors
	if r.Ratio != 5 || r.MinRequests != 100 || r.Window != 5*time.Minute || r.For != 2*time.Minute ||
		r.EjectedShare != 50 || r.Severity != SeverityPage || r.Disabled {
		t.Fatalf("defaults: %+v", r)
	}
	c = Config{}
	c.SetKeys([]string{"live_errors.ratio", "live_errors.for"})
	if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), "live_errors.ratio: 0%") {
		t.Fatalf("ratio 0%%: %v", err)
	}
	if c.LiveErrors.For != 0 {
		t.Fatalf("an explicit for: 0s is kept: %s", c.LiveErrors.For)
	}
	c = Config{LiveErrors: LiveErrorsRule{Severity: "urgent", Window: -time.Second}}
	err := c.ValidateAndSetDefaults()
	for _, want := range []string{`live_errors.severity: "urgent"`, "live_errors.window: -1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("want %q in %v", want, err)
		}
	}
}
