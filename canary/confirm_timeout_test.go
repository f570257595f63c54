package canary

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestConfirmRunsTimedFromRunStart: after a healthy pair's run times out,
// its confirm runs start interval/4 after the previous run started, or as
// soon as it ends when it lasted longer: a hung origin is confirmed in
// about fall × timeout. Before, each confirm run started interval/4 after
// the previous one ended (or at the next regular slot, if sooner): with a
// 2 s interval and a 1.5 s timeout the failing runs started 2 s apart, and
// the outage took fall × (timeout + interval/4), as long as without the
// fast confirm cadence.
func TestConfirmRunsTimedFromRunStart(t *testing.T) {
	var hang atomic.Bool
	var mu sync.Mutex
	var hung []time.Time // when each hung request arrived
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hang.Load() {
			return
		}
		mu.Lock()
		hung = append(hung, time.Now())
		mu.Unlock()
		<-r.Context().Done()
	}))
	defer origin.Close()
	cfg := testConfig(t, map[string]string{"o1": origin.URL},
		CheckConfig{Name: "c", Targets: []string{"o1"}, Interval: 2 * time.Second, Timeout: 1500 * time.Millisecond,
			Jitter: pct(0), Rise: 1, Fall: 3, HTTP: &checks.HTTPSpec{}})
	c := start(t, cfg, compile(t, cfg), Options{})
	if v, err := c.Trigger("c", "o1"); err != nil || v.State != reporting.StateHealthy {
		t.Fatalf("trigger: %s %v", v.State, err)
	}
	hang.Store(true)
	waitFor(t, "unhealthy", stateIs(c, "c", "o1", reporting.StateUnhealthy))
	mu.Lock()
	defer mu.Unlock()
	if len(hung) < 3 {
		t.Fatalf("%d timed-out runs before unhealthy, want 3", len(hung))
	}
	for i := 1; i < 3; i++ {
		if gap := hung[i].Sub(hung[i-1]); gap > 1800*time.Millisecond {
			t.Errorf("failing run %d started %s after the previous one, want about the 1.5s timeout (confirm runs are due interval/4 = 1s after the previous start)",
				i+1, gap.Round(time.Millisecond))
		}
	}
}
