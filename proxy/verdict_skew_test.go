package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// skewLog is a log the test reads back.
type skewLog = checktest.SyncBuffer

// startSkewLogged is start (with background loops) with the proxy's log kept
// for the test to read.
func startSkewLogged(t *testing.T, cfg Config, src reporting.Source) (*harness, *skewLog) {
	t.Helper()
	lb := &skewLog{}
	h := &harness{t: t, reg: prometheus.NewRegistry(), signals: &signalRecorder{}, bgDone: make(chan struct{})}
	p, err := New(cfg, src, slog.New(slog.NewTextHandler(lb, nil)), WithRegistry(h.reg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	h.front = newTestFront(t, p)
	h.client = &http.Client{Timeout: 20 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { defer close(h.bgDone); p.background(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-h.bgDone
		h.front.CloseClientConnections()
		h.front.Close()
	})
	return h, lb
}

// A verdict is fresh from max_age ago to max_age ahead: within that a
// canary's clock may be off. An unhealthy verdict dated further ahead (a
// canary whose clock is an hour fast) is ignored, with one warning naming
// the source and the skew, not one per poll.
func TestVerdictFromTheFutureIgnored(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var ahead atomic.Int64 // how far ahead the canary dates its verdict
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: time.Now().Add(time.Duration(ahead.Load()))}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = 10 * time.Second
	ahead.Store(int64(time.Hour))
	h, log := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))

	eventually(t, "the skew warning", func() bool { return strings.Contains(log.String(), "dated in the future") })
	time.Sleep(300 * time.Millisecond) // ~15 more polls
	if st := h.p.Origins(); st[0].VerdictDown || !st[0].Available {
		t.Fatalf("an unhealthy verdict dated 1h ahead (max_age 10s) took the origin out: %+v", st[0])
	}
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
		t.Fatalf("GET: %d %q", code, body)
	}
	out := log.String()
	if n := strings.Count(out, "dated in the future"); n != 1 {
		t.Fatalf("%d skew warnings in ~15 polls, want 1:\n%s", n, out)
	}
	for _, want := range []string{"source=" + canary.URL + "/api/v1/verdicts", "skew=1h0m0s", "max_age=10s", "target=o0"} {
		if !strings.Contains(out, want) {
			t.Errorf("skew warning lacks %q:\n%s", want, out)
		}
	}

	// Within the tolerance (5s ahead, max_age 10s) the verdict counts.
	ahead.Store(int64(5 * time.Second))
	eventually(t, "a verdict 5s ahead to take the origin out", func() bool { return h.p.Origins()[0].VerdictDown })
	// Back beyond it: the origin returns although the canary keeps answering.
	ahead.Store(int64(time.Hour))
	eventually(t, "the origin to return", func() bool { return h.p.Origins()[0].Available })
}

// fresh is the window [now-max_age, now+max_age].
func TestVerdictFreshWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {-10 * time.Second, true}, {-11 * time.Second, false}, {10 * time.Second, true}, {11 * time.Second, false}, {365 * 24 * time.Hour, false}} {
		if got := fresh(now.Add(tc.at), now, 10*time.Second); got != tc.want {
			t.Errorf("At now%+v, max_age 10s: fresh %v, want %v", tc.at, got, tc.want)
		}
	}
}
