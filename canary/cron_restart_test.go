package canary

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestCronResumeMissedFiring: what a cron pair's first run after a restart
// is, from when its stored run started. The review's case: "*/10 * * * * *"
// last ran at 18:50, stopped at 18:59.45, started again at 19:02.95: the
// 19:00 firing fell into the restart and runs at start (it was lost, the
// next run was 19:10). A firing that ran is not run again; a longer outage,
// no stored run, or a start past half the gap waits for the next firing.
func TestCronResumeMissedFiring(t *testing.T) {
	s, err := cronParser.Parse("*/10 * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(hms string) time.Time {
		d, err := time.Parse("15:04:05.000", hms)
		if err != nil {
			t.Fatal(err)
		}
		return t0.Add(time.Duration(d.Hour())*time.Hour + time.Duration(d.Minute())*time.Minute +
			time.Duration(d.Second())*time.Second + time.Duration(d.Nanosecond()))
	}
	for _, tc := range []struct {
		name        string
		last, start string // last stored run start ("" none), restart
		want        string // first run ("": the next firing)
	}{
		{"restart across a firing", "00:18:50.003", "00:19:02.950", "00:19:02.950"},
		{"the firing before the restart ran", "00:19:00.002", "00:19:02.000", ""},
		{"stopped during the firing's run (not stored)", "00:18:50.002", "00:19:00.500", "00:19:00.500"},
		{"two firings missed: an outage", "00:18:40.002", "00:19:02.000", ""},
		{"past half the gap", "00:18:50.002", "00:19:05.000", ""},
		{"no stored run", "", "00:19:02.000", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := at(tc.start)
			var last time.Time
			if tc.last != "" {
				last = at(tc.last)
			}
			p := plan{interval: 10 * time.Second, cron: s}
			first := p.first("k", now)
			got, ok := p.resume(last, now)
			if !ok {
				got = first
			}
			want := first
			if tc.want != "" {
				want = at(tc.want)
			}
			if !got.Equal(want) {
				t.Fatalf("first run at %s, want %s", got.Format("15:04:05.000"), want.Format("15:04:05.000"))
			}
			// After the catch-up, the pair goes on at its next firing.
			if next := p.advance(got); ok && !next.Equal(first) {
				t.Fatalf("after the catch-up: next run %s, want %s", next.Format("15:04:05.000"), first.Format("15:04:05.000"))
			}
		})
	}
}

// TestCronRestartRunsMissedFiring: a canary restarted 0.3 s after a
// firing of its "*/2 * * * * *" check, whose store says the firing before
// it ran, runs the missed firing at start and then the next one: restarts
// neither skip nor repeat cron runs (the missed firing was lost).
func TestCronRestartRunsMissedFiring(t *testing.T) {
	var mu sync.Mutex
	var hits []time.Time
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, time.Now())
		mu.Unlock()
	}))
	defer origin.Close()
	cfg := testConfig(t, map[string]string{"o1": origin.URL},
		CheckConfig{Name: "cron2", Targets: []string{"o1"}, Cron: "*/2 * * * * *", HTTP: &checks.HTTPSpec{}})
	pairs := compile(t, cfg)
	// Start 0.3 s after a firing.
	firing := cfg.Checks[0].Schedule().Next(time.Now().Add(200 * time.Millisecond))
	time.Sleep(time.Until(firing.Add(300 * time.Millisecond)))
	c, err := New(cfg, pairs, Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	last := firing.Add(-2*time.Second + 5*time.Millisecond) // the firing before it ran
	c.Restore([]reporting.Verdict{{Check: "cron2", Target: "o1", Region: "test-region", Vantage: "v1", State: reporting.StateHealthy,
		OK: true, At: last.Add(time.Millisecond), Duration: time.Millisecond, Expires: last.Add(6 * time.Second)}})
	ctx, cancel := context.WithDeadline(context.Background(), firing.Add(2*time.Second+700*time.Millisecond))
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := offsets(firing, hits)
	mu.Unlock()
	if len(got) != 2 || hits[0].Sub(firing) > time.Second || hits[1].Sub(firing) < 2*time.Second {
		t.Fatalf("runs at %v after the missed firing; want 2: the missed firing's at start (~300ms), then the next firing (2s)", got)
	}
}
