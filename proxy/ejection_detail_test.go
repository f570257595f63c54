package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// adminOrigins reads GET /api/v1/origins from the admin API on a socket.
func adminOrigins(t *testing.T, p *Proxy) []OriginStatus {
	t.Helper()
	srv := httptest.NewServer(p.AdminHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/origins")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []OriginStatus
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// /api/v1/origins explains a passive ejection with the numbers that
// triggered it, beside the rule's name in why.passive.
func TestEjectionDetail(t *testing.T) {
	t.Run("consecutive_5xx", func(t *testing.T) {
		bad, good := newBackend(t, "bad"), newBackend(t, "good")
		bad.mode.Store(mode503)
		cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
		cfg.Pools[0].Passive.Consecutive5xx = 3
		h := start(t, cfg, nil, false)
		for i := 0; i < 10; i++ {
			h.do("GET", "/", "")
		}
		st := adminOrigins(t, h.p)[0]
		want := "3 consecutive failed tries (3 status_5xx), consecutive_5xx 3"
		if !st.PassiveEjected || st.Why["passive"] != ReasonConsecutive5xx || st.EjectionDetail != want {
			t.Fatalf("why %q detail %q, want %q and %q", st.Why["passive"], st.EjectionDetail, ReasonConsecutive5xx, want)
		}
	})
	t.Run("failure_rate", func(t *testing.T) {
		partial, good := newBackend(t, "partial"), newBackend(t, "good")
		partial.mode.Store(modePartial) // every 5th request answers 503
		cfg := pool1(PolicyRoundRobin, urls(partial, good)...)
		cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: -1, SuccessRateStdev: -1, FailureRate: 15, MinRequests: 20}
		h := start(t, cfg, nil, false)
		for i := 0; i < 100; i++ { // 50 reach the partial origin, 10 of them fail
			h.do("GET", "/", "")
		}
		h.pool("web").evaluate(time.Now())
		st := adminOrigins(t, h.p)[0]
		req, fail := partial.hits.Load(), partial.hits.Load()/5
		want := fmt.Sprintf("failure rate %s (%d of %d requests in 30s) ≥ failure_rate 15%%", pct(float64(fail)/float64(req)), fail, req)
		if !st.PassiveEjected || st.Why["passive"] != ReasonFailureRate || st.EjectionDetail != want {
			t.Fatalf("why %q detail %q, want %q and %q", st.Why["passive"], st.EjectionDetail, ReasonFailureRate, want)
		}
	})
	for _, tt := range []struct {
		name, reason string
		cfg          PassiveConfig
		feed         func(pl *pool, now int64)
		want         string
	}{
		{
			name: "latency_p95", reason: ReasonLatencyP95,
			cfg: PassiveConfig{Consecutive5xx: -1, SuccessRateStdev: -1, MinRequests: 20, LatencyP95: 200 * time.Millisecond},
			feed: func(pl *pool, now int64) {
				for i := 0; i < 40; i++ {
					lat := 10 * time.Millisecond
					if i%10 == 0 {
						lat = time.Second
					}
					pl.observe(pl.origins[0], false, lat, now)
					pl.observe(pl.origins[1], false, 10*time.Millisecond, now)
				}
			},
			want: "p95 1.233s > latency_p95 200ms (40 requests in 30s)",
		},
		{
			name: "success_rate", reason: ReasonSuccessRate,
			cfg: PassiveConfig{Consecutive5xx: -1, MinRequests: 20},
			feed: func(pl *pool, now int64) {
				for i := 0; i < 100; i++ { // 80% vs 100%, 100%, 99%, at success_rate_min_requests
					pl.observe(pl.origins[0], i%5 == 0, time.Millisecond, now)
					pl.observe(pl.origins[1], false, time.Millisecond, now)
					pl.observe(pl.origins[2], i == 0, time.Millisecond, now)
					pl.observe(pl.origins[3], false, time.Millisecond, now)
				}
			},
			want: "success rate 80% (20 of 100 requests failed in 30s) vs pool median 99.5% (4 origins with ≥ 100 requests), below 83.3% (median − max(1.9 × stdev 8.5%, 5%)); the other origins failed 1 of 300 (0.3%): chance of as many failures p 3.2e-12 < 0.00025",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3", "http://127.0.0.1:4")
			cfg.Pools[0].Passive = tt.cfg
			h := start(t, cfg, nil, false)
			pl := h.pool("web")
			now := time.Now()
			tt.feed(pl, now.UnixNano())
			pl.evaluate(now)
			st := adminOrigins(t, h.p)[0]
			if !st.PassiveEjected || st.Why["passive"] != tt.reason || st.EjectionDetail != tt.want {
				t.Fatalf("why %q detail %q, want %q and %q", st.Why["passive"], st.EjectionDetail, tt.reason, tt.want)
			}
		})
	}
	// Not ejected: no detail.
	h := start(t, pool1(PolicyRoundRobin, "http://127.0.0.1:1"), nil, false)
	if st := adminOrigins(t, h.p)[0]; st.EjectionDetail != "" || strings.Contains(fmt.Sprint(st.Why), "passive") {
		t.Fatalf("an origin never ejected shows %+v", st)
	}
}
