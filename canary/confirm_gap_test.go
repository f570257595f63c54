package canary

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestConfirmRunAndSlotKeepTheConfirmDelay: a confirm run that comes just
// before the pair's next regular slot used to be followed by that slot's
// run moments later (history: 15.95 FAIL, 15.99 FAIL), probing the origin
// twice at once. The slot's run now waits until the confirm delay has
// passed since the confirm run, so the origin's requests are never closer
// than the confirm delay and an outage is still confirmed after fall − 1
// confirm delays. A 1.5 s check (confirm delay 1 s, no jitter) whose
// origin fails from its second request on: the first failure's confirm run
// comes 0.5 s before the next slot.
func TestConfirmRunAndSlotKeepTheConfirmDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for up to 6 s (-short)")
	}
	var mu sync.Mutex
	var hits []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, time.Now())
		n := len(hits)
		mu.Unlock()
		if n > 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)

	const interval, confirm = 1500 * time.Millisecond, time.Second
	cfg := testConfig(t, map[string]string{"o1": srv.URL},
		CheckConfig{Name: "api", Targets: []string{"o1"}, Interval: interval, Jitter: pct(0), Rise: 1, Fall: 3, HTTP: &checks.HTTPSpec{}})
	c := start(t, cfg, compile(t, cfg), Options{})

	// The pass, the first failure, a confirm run, the slot's run moved to a
	// confirm delay after it (the third failure: unhealthy), and the next
	// slot's run.
	deadline := time.Now().Add(interval + 5*time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(hits)
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	got := append([]time.Time(nil), hits...)
	mu.Unlock()
	if len(got) < 5 {
		t.Fatalf("%d requests by the deadline, want 5", len(got))
	}
	got = got[:5]
	t.Logf("requests at %v after the first", offsets(got[0], got))
	for i := 1; i < len(got); i++ {
		if d := got[i].Sub(got[i-1]); d < confirm-50*time.Millisecond {
			t.Errorf("requests %d and %d came %s apart, want at least the confirm delay %s", i, i+1, d.Round(time.Millisecond), confirm)
		}
	}
	// Confirmed by the third failing run, 2 confirm delays after the first.
	if d := got[3].Sub(got[1]); d > 2*confirm+200*time.Millisecond {
		t.Errorf("third failing run %s after the first, want about %s", d.Round(time.Millisecond), 2*confirm)
	}
	// The run after them is back on the pair's slots.
	if d := got[4].Sub(got[0]); d < 3*interval-100*time.Millisecond || d > 3*interval+100*time.Millisecond {
		t.Errorf("fifth request %s after the first, want on the pair's slot %s after it", d.Round(time.Millisecond), 3*interval)
	}
	waitFor(t, "the unhealthy verdict", func() bool {
		for _, v := range c.Latest() {
			if v.Check == "api" && v.State == reporting.StateUnhealthy {
				return true
			}
		}
		return false
	})
}
