package alerting

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// burnFlapRuns is an error ratio that hovers at the 6× page threshold of a
// 99% objective (6% of runs failed): 100 passes, 7 failures (7/107 =
// 6.5%: the 6h/30m pair holds), 10 passes (the 10th makes 7/117 = 5.98%:
// it does not), a failure (8/118 = 6.8%: it holds again), 16 passes (the
// 16th makes 8/134 = 5.97%). Every run is inside every window (one a
// second, fewer than 300).
func burnFlapRuns() []reporting.State {
	var out []reporting.State
	add := func(n int, st reporting.State) {
		for range n {
			out = append(out, st)
		}
	}
	add(100, H)
	add(7, U)
	add(10, H)
	add(1, U)
	add(16, H)
	return out
}

// burnFlapHarness is one region running a check every second, its
// burn-rate page rule the only rule on; keep is applied when keepSet.
func burnFlapHarness(t *testing.T, keep time.Duration, keepSet bool) *harness {
	t.Helper()
	cfg := Config{Down: DownRule{Disabled: true}, DeadMan: DeadManRule{Disabled: true}, Cert: CertRule{Disabled: true},
		BurnRate: BurnRateRule{NoTicket: true, KeepFiringFor: keep}}
	if keepSet {
		cfg.SetKeys([]string{"burn_rate.keep_firing_for"})
	}
	h := newHarness(t, t0, cfg, []SLO{{Name: "asset-availability", Check: "asset", Objective: 99}})
	h.interval = time.Second
	// The ratios below are of the few runs made (a 6h window of 1s runs
	// would need 21,600 of them for the expected-runs floor).
	h.unknownInterval = true
	return h
}

// burnStatuses lists the webhook notifications as "status:windows of the first alert".
func burnStatuses(t *testing.T, h *harness) string {
	t.Helper()
	var out []string
	for _, p := range h.hook.webhooks(t) {
		out = append(out, p.Status+":"+strings.Join(p.Alerts[0].Windows, ","))
	}
	return strings.Join(out, " ")
}

// TestBurnRateKeepsFiringAtThreshold: an error ratio that crosses the 6×
// factor back and forth pages once, not once per crossing (it used to
// fire, resolve and fire again a second later: each a new PagerDuty
// incident). By default the alert keeps firing for the short window of
// the slowest pair that held (30m for 6h/30m) after no pair holds, and
// then resolves once.
func TestBurnRateKeepsFiringAtThreshold(t *testing.T) {
	h := burnFlapHarness(t, 0, false)
	for _, st := range burnFlapRuns() {
		h.tick(map[string]reporting.State{"eu": st})
	}
	// The last run's evaluation is the first where the pair does not hold.
	cleared := h.clock.Now()
	if got := burnStatuses(t, h); got != "firing:6h/30m" {
		t.Fatalf("notifications while the ratio crosses 6× three times: %q, want one firing", got)
	}
	act := h.a.Active()
	if len(act) != 1 || act[0].Rule != RuleBurnRate || !strings.Contains(act[0].Summary, "burning 6.0× over 6h/30m") {
		t.Fatalf("active below the factor (5.97×): %+v, want the page kept firing", act)
	}
	// No run since: the ratio stays at 5.97× until the runs leave the
	// windows.
	h.clock.Set(cleared.Add(30*time.Minute - time.Second))
	h.eval()
	if got := burnStatuses(t, h); got != "firing:6h/30m" || len(h.a.Active()) != 1 {
		t.Fatalf("29m59s after the pair stopped holding: notifications %q, active %d", got, len(h.a.Active()))
	}
	h.clock.Set(cleared.Add(30 * time.Minute))
	h.eval()
	if got := burnStatuses(t, h); got != "firing:6h/30m resolved:6h/30m" || len(h.a.Active()) != 0 {
		t.Fatalf("30m after the pair stopped holding: notifications %q, active %+v", got, h.a.Active())
	}
}

// TestBurnRateKeepFiringFor: burn_rate.keep_firing_for replaces the
// default hold; an explicit 0s resolves at the first evaluation where no
// pair holds, as Prometheus without keep_firing_for.
func TestBurnRateKeepFiringFor(t *testing.T) {
	t.Run("0s", func(t *testing.T) {
		h := burnFlapHarness(t, 0, true)
		for _, st := range burnFlapRuns() {
			h.tick(map[string]reporting.State{"eu": st})
		}
		want := "firing:6h/30m resolved:6h/30m firing:6h/30m resolved:6h/30m"
		if got := burnStatuses(t, h); got != want {
			t.Fatalf("notifications %q, want %q", got, want)
		}
	})
	t.Run("5s", func(t *testing.T) {
		h := burnFlapHarness(t, 5*time.Second, true)
		for _, st := range burnFlapRuns() {
			h.tick(map[string]reporting.State{"eu": st})
		}
		cleared := h.clock.Now()
		// The first dip lasted one evaluation: kept firing through it.
		h.clock.Set(cleared.Add(4 * time.Second))
		h.eval()
		if got := burnStatuses(t, h); got != "firing:6h/30m" {
			t.Fatalf("4s after the pair stopped holding: notifications %q, want one firing", got)
		}
		h.clock.Set(cleared.Add(5 * time.Second))
		h.eval()
		if got := burnStatuses(t, h); got != "firing:6h/30m resolved:6h/30m" {
			t.Fatalf("5s after the pair stopped holding: notifications %q", got)
		}
	})
}

// TestDownKeepFiringFor: down.keep_firing_for (default 0s) keeps a down
// page open through a recovery shorter than it; the generated Prometheus
// rule carries it.
func TestDownKeepFiringFor(t *testing.T) {
	cfg := Config{Down: DownRule{KeepFiringFor: time.Minute}, DeadMan: DeadManRule{Disabled: true}}
	cfg.SetKeys([]string{"down.for"}) // 0s: fires at once
	h := newHarness(t, t0, cfg, nil)
	h.tick(map[string]reporting.State{"eu": U})
	h.tick(map[string]reporting.State{"eu": H}) // 15s
	h.tick(map[string]reporting.State{"eu": U}) // back within the minute: same alert
	for range 4 {
		h.tick(map[string]reporting.State{"eu": H}) // cleared 0s … 45s
	}
	if n := len(h.hook.all()); n != 1 || len(h.a.Active()) != 1 {
		t.Fatalf("45s after the recovery: %d notifications, active %d; want the page kept open", n, len(h.a.Active()))
	}
	h.tick(map[string]reporting.State{"eu": H}) // 60s
	var got []string
	for _, p := range h.hook.webhooks(t) {
		got = append(got, p.Status)
	}
	if strings.Join(got, " ") != "firing resolved" {
		t.Fatalf("down.keep_firing_for 1m: notifications %v, want one firing and its resolve 1m after the recovery", got)
	}
	if len(h.a.Active()) != 0 {
		t.Fatalf("active: %+v", h.a.Active())
	}

	b, err := PrometheusRules(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "keep_firing_for: 1m\n") {
		t.Fatalf("generated down rule lacks keep_firing_for: 1m:\n%s", b)
	}
}

// TestKeepFiringForNegative: a negative keep_firing_for is a config error
// naming the key.
func TestKeepFiringForNegative(t *testing.T) {
	cfg := Config{Down: DownRule{KeepFiringFor: -time.Second}, TTFB: TTFBRule{KeepFiringFor: -time.Second},
		BurnRate: BurnRateRule{KeepFiringFor: -time.Second}}
	err := cfg.ValidateAndSetDefaults()
	for _, want := range []string{"down.keep_firing_for: -1s: must be positive", "ttfb.keep_firing_for: -1s", "burn_rate.keep_firing_for: -1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
}

// TestKeepFiringForSurvivesRestart: an alert kept firing by
// keep_firing_for resolves keep_firing_for after its condition stopped
// holding, across a restart in between (alerts.json keeps when), not
// keep_firing_for after the restart; the restart sends nothing.
func TestKeepFiringForSurvivesRestart(t *testing.T) {
	hook := newRecorder(t)
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	cfg := Config{Down: DownRule{KeepFiringFor: time.Minute}, DeadMan: DeadManRule{Disabled: true},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
	cfg.SetKeys([]string{"down.for"})
	statePath := filepath.Join(t.TempDir(), "alerts.json")
	open := func() *Alerter {
		a, err := New(cfg, nil, store, Options{Now: clock.Now, StatePath: statePath,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	eval := func(a *Alerter, st reporting.State) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		if st != "" {
			store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), st, time.Minute))
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a := open()
	eval(a, U)
	eval(a, H) // the condition stops holding: kept firing until +1m
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := open()
	defer b.Close(context.Background())
	eval(b, H) // +15s
	eval(b, H) // +30s
	eval(b, H) // +45s
	if n := len(hook.all()); n != 1 || len(b.Active()) != 1 {
		t.Fatalf("45s after the recovery, restarted: %d notifications, active %d; want the page kept open", n, len(b.Active()))
	}
	eval(b, H) // +60s
	var got []string
	for _, p := range hook.webhooks(t) {
		got = append(got, p.Status)
	}
	if strings.Join(got, " ") != "firing resolved" {
		t.Fatalf("1m after the recovery, across a restart: notifications %v, want firing resolved", got)
	}
}
