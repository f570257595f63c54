package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Verdicts that arrive dated more than max_age in the past (a canary whose
// clock is 15s slow, max_age 10s) still count, from when the proxy saw
// them, and the proxy says so: one warning naming the source, the region,
// how late and max_age, not one per poll, until that region's verdicts
// arrive on time again (logged once); a relapse within 10 minutes is not
// warned again. Was: counted without a word.
func TestLateVerdictsWarnedOncePerRegion(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var behind atomic.Int64 // how far behind the canary's clock is
	behind.Store(int64(15 * time.Second))
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().Add(-time.Duration(behind.Load()))
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: at, Expires: at.Add(time.Hour)}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = 10 * time.Second
	h, log := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))

	const warning = "verdicts arrive dated more than max_age in the past"
	eventually(t, "the late-verdicts warning", func() bool { return strings.Contains(log.String(), warning) })
	eventually(t, "the late verdicts to take the origin out", func() bool { return h.p.Origins()[0].VerdictDown })
	time.Sleep(300 * time.Millisecond) // ~15 more polls
	out := log.String()
	if n := strings.Count(out, warning); n != 1 {
		t.Fatalf("%d late-verdict warnings in ~15 polls, want 1:\n%s", n, out)
	}
	for _, want := range []string{"source=" + canary.URL + "/api/v1/verdicts", "region=eu", "late=15s", "max_age=10s", "target=o0"} {
		if !strings.Contains(out, want) {
			t.Errorf("late-verdict warning lacks %q:\n%s", want, out)
		}
	}

	const again = "verdicts arrive dated within max_age again"
	behind.Store(0)
	eventually(t, "the on-time line", func() bool { return strings.Contains(log.String(), again) })
	behind.Store(int64(15 * time.Second))
	time.Sleep(300 * time.Millisecond)
	out = log.String()
	if n, m := strings.Count(out, warning), strings.Count(out, again); n != 1 || m != 1 {
		t.Fatalf("after recovering and relapsing within 10 minutes: %d warnings, %d on-time lines; want 1 and 1:\n%s", n, m, out)
	}
}
