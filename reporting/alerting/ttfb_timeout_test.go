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

// TestTTFBTimeoutsCountAboveObjective, through the embedded store, over a
// 5-minute window (raw verdicts) and a 2-hour one (per-minute rollups):
//
//   - origin-a cycles TTFB 50/100/150/200 ms and a run that times out
//     before its first byte (400 ms timeout): one run in five. The p95
//     falls on a timed-out run: above any objective, so the SLO breaches
//     and the alert fires (left out, the p95 read 200 ms and met 400 ms);
//   - origin-b, per 20 runs: 15 at 80 ms, one at 700 ms and 4 refused
//     connections. The refused runs are no TTFB sample: the p95 is 700 ms
//     (counted as zeros, the rollups' p95 read 80 ms);
//   - origin-c, per 20 runs: 16 at 80 ms and 4 refused: a refused
//     connection is not a timeout, the p95 is 80 ms and the SLO is met.
func TestTTFBTimeoutsCountAboveObjective(t *testing.T) {
	clock := &fakeClock{t: t0.Add(-3 * time.Hour)}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 30 * 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const every = 3 * time.Second
	const timeout = 400 * time.Millisecond
	refused := func(v *reporting.Verdict) {
		v.OK, v.State, v.Cause, v.Err, v.TTFB, v.Duration = false, reporting.StateUnhealthy, "connect_refused", "connection refused", 0, time.Millisecond
	}
	var vs []reporting.Verdict
	n := 0
	for at := t0.Add(-2 * time.Hour); at.Before(t0); at = at.Add(every) {
		a := verdict("asset", "origin-a", "eu", at, H, every)
		if i := n % 5; i < 4 {
			a.TTFB = time.Duration(i+1) * 50 * time.Millisecond
		} else {
			a.OK, a.State, a.Cause, a.Err = false, reporting.StateUnhealthy, reporting.CauseTimeout, "timeout: no response within 400ms"
			a.TTFB, a.Duration = 0, timeout+300*time.Microsecond
		}
		b := verdict("asset", "origin-b", "eu", at, H, every)
		switch i := n % 20; {
		case i < 15:
			b.TTFB = 80 * time.Millisecond
		case i == 15:
			b.TTFB = 700 * time.Millisecond
		default:
			refused(&b)
		}
		c := verdict("asset", "origin-c", "eu", at, H, every)
		if c.TTFB = 80 * time.Millisecond; n%20 >= 16 {
			refused(&c)
		}
		vs = append(vs, a, b, c)
		n++
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(time.Second))

	for _, window := range []time.Duration{5 * time.Minute, 2 * time.Hour} {
		t.Run(window.String(), func(t *testing.T) {
			slo := SLO{Name: "asset-ttfb", Check: "asset", TTFBP95: timeout, Window: window}
			a, err := New(Config{DeadMan: DeadManRule{Disabled: true}}, []SLO{slo}, st,
				Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			if err := a.Evaluate(context.Background()); err != nil {
				t.Fatal(err)
			}
			firing := map[string]Alert{}
			for _, al := range a.Active() {
				if al.Rule == RuleTTFB {
					firing[al.Target] = al
				}
			}
			status, err := a.SLOStatus(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]SLOStatus{}
			for _, s := range status {
				got[s.Target] = s
			}
			// The rollups' histogram keeps the wait within 1.6 %.
			if s := got["origin-a"]; s.Met || !s.TTFBP95TimedOut || s.TTFBP95 < timeout*98/100 {
				t.Errorf("origin-a (one run in five timed out): p95 %s, timed out %v, met %v; want the wait, about 400ms, timed out, not met",
					s.TTFBP95, s.TTFBP95TimedOut, s.Met)
			}
			if al, ok := firing["origin-a"]; !ok || !strings.Contains(al.Summary, "timed out before their first byte") {
				t.Errorf("origin-a: no ttfb alert naming the timeouts: %+v", al)
			}
			if s := got["origin-b"]; s.Met || s.TTFBP95TimedOut || s.TTFBP95 < 690*time.Millisecond || s.TTFBP95 > 710*time.Millisecond {
				t.Errorf("origin-b (refused runs are no sample): p95 %s, timed out %v, met %v; want 700ms, not met",
					s.TTFBP95, s.TTFBP95TimedOut, s.Met)
			}
			if _, ok := firing["origin-b"]; !ok {
				t.Errorf("origin-b: no ttfb alert at p95 700ms")
			}
			if s := got["origin-c"]; !s.Met || s.TTFBP95TimedOut || s.TTFBP95 < 79*time.Millisecond || s.TTFBP95 > 81*time.Millisecond {
				t.Errorf("origin-c (refused is no timeout): p95 %s, timed out %v, met %v; want 80ms, met",
					s.TTFBP95, s.TTFBP95TimedOut, s.Met)
			}
			if _, ok := firing["origin-c"]; ok {
				t.Errorf("origin-c: ttfb alert with every sample at 80ms")
			}
		})
	}
}
