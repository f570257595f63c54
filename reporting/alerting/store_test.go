package alerting

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// scenarioEvents runs one history through an Alerter reading src and
// returns every change of the active alerts, minute by minute: two of three
// regions fail for 10 minutes after two hours of passes.
func scenarioEvents(t *testing.T, clock *fakeClock, src reporting.HistorySource, publish func([]reporting.Verdict)) []string {
	t.Helper()
	start := t0.Add(-2 * time.Hour)
	var vs []reporting.Verdict
	for m := start; m.Before(t0.Add(50 * time.Minute)); m = m.Add(time.Minute) {
		for _, r := range []string{"eu", "us", "ap"} {
			st := H
			if r != "ap" && !m.Before(t0) && m.Before(t0.Add(10*time.Minute)) {
				st = U
			}
			vs = append(vs, verdict("asset", "origin-a", r, m.Add(10*time.Second), st, time.Minute))
		}
	}
	cfg := Config{Quorum: 2, BurnRate: BurnRateRule{NoTicket: true}, DeadMan: DeadManRule{Disabled: true}}
	cfg.SetKeys([]string{"burn_rate.keep_firing_for"}) // 0s: resolves within the scenario
	slos := []SLO{{Name: "asset-availability", Check: "asset", Objective: 99.9}}
	a, err := New(cfg, slos, src, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	var events []string
	last := ""
	published := 0
	for m := t0.Add(-5 * time.Minute); m.Before(t0.Add(45 * time.Minute)); m = m.Add(time.Minute) {
		clock.Set(m.Add(30 * time.Second))
		// publish what the canaries produced up to now
		var batch []reporting.Verdict
		for published < len(vs) && !vs[published].At.After(clock.Now()) {
			batch = append(batch, vs[published])
			published++
		}
		publish(batch)
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		var cur []string
		for _, al := range a.Active() {
			cur = append(cur, fmt.Sprintf("%s/%s[%s]%v", al.Rule, al.Severity, strings.Join(al.Windows, ","), al.Regions))
		}
		if s := strings.Join(cur, " "); s != last {
			events = append(events, fmt.Sprintf("+%s %s", m.Sub(t0), s))
			last = s
		}
	}
	return events
}

// TestEmbeddedStoreSameAlerts runs the same history through the embedded
// SQLite store and through the in-memory reference and expects the same
// alerts at the same minutes.
func TestEmbeddedStoreSameAlerts(t *testing.T) {
	clock := &fakeClock{t: t0.Add(-3 * time.Hour)}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 30 * 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	viaStore := scenarioEvents(t, clock, st, func(vs []reporting.Verdict) {
		if err := st.Publish(context.Background(), vs); err != nil {
			t.Fatal(err)
		}
	})

	clock2 := &fakeClock{t: t0.Add(-3 * time.Hour)}
	mem := &memStore{clock: clock2.Now}
	viaMem := scenarioEvents(t, clock2, mem, func(vs []reporting.Verdict) { mem.add(vs...) })

	if strings.Join(viaStore, "\n") != strings.Join(viaMem, "\n") {
		t.Fatalf("embedded store:\n%s\nin-memory:\n%s", strings.Join(viaStore, "\n"), strings.Join(viaMem, "\n"))
	}
	// down fires (for 1m) and the page burn fires; everything resolves.
	joined := strings.Join(viaStore, "\n")
	for _, want := range []string{"down/page[][eu us]", "burn_rate/page[1h/5m,6h/30m][eu us]"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %s:\n%s", want, joined)
		}
	}
	if !strings.HasSuffix(joined, " ") {
		t.Errorf("alerts still active at the end:\n%s", joined)
	}
	t.Logf("events:\n%s", joined)
}
