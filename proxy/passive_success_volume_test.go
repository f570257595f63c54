package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rateOrigin is a real origin that answers 503 to the requests fail picks
// (by their 1-based number) and 200 to the others.
type rateOrigin struct {
	srv        *httptest.Server
	hits, errs atomic.Int64
}

func newRateOrigin(t *testing.T, fail func(n int64) bool) *rateOrigin {
	t.Helper()
	o := &rateOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") == probeUserAgent {
			return // a return probe: 200, not counted
		}
		n := o.hits.Add(1)
		if fail != nil && fail(n) {
			o.errs.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func rateURLs(os ...*rateOrigin) []string {
	var out []string
	for _, o := range os {
		out = append(out, o.srv.URL)
	}
	return out
}

// driveUntil sends GETs through the proxy until done says so, at most max.
func driveUntil(t *testing.T, h *harness, max int, done func() bool) {
	t.Helper()
	for i := 0; !done(); i++ {
		if i >= max {
			t.Fatalf("still not done after %d requests (%v)", max, adminOrigins(t, h.p))
		}
		if code, body, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("request %d: %d %q, want 200 (a failed GET moves on to a healthy origin)", i, code, body)
		}
	}
}

// A pool of 3 origins, one of which fails 2 of its 20 requests: with the
// defaults the success-rate rule does not judge it (20 requests are below
// success_rate_min_requests, 100), where it used to eject it as an outlier
// (90% against a median of 100%). Nor does any other default rule:
// its failures are not consecutive.
func TestSuccessRateIgnoresLowVolume(t *testing.T) {
	a := newRateOrigin(t, func(n int64) bool { return n == 7 || n == 14 })
	b, c := newRateOrigin(t, nil), newRateOrigin(t, nil)
	cfg := pool1(PolicyRoundRobin, rateURLs(a, b, c)...)
	h := start(t, cfg, nil, false)
	pl := h.pool("web")
	if got := pl.cfg.Passive; got.SuccessRateMinHosts != 3 || got.SuccessRateMinRequests != 100 || got.MinRequests != 20 {
		t.Fatalf("defaults: success_rate_min_hosts %d, success_rate_min_requests %d, min_requests %d; want 3, 100, 20",
			got.SuccessRateMinHosts, got.SuccessRateMinRequests, got.MinRequests)
	}
	driveUntil(t, h, 200, func() bool { return a.hits.Load() >= 20 && b.hits.Load() >= 20 && c.hits.Load() >= 20 })
	if a.hits.Load() != 20 || a.errs.Load() != 2 {
		t.Fatalf("origin a: %d requests, %d failed; want 20, 2", a.hits.Load(), a.errs.Load())
	}
	pl.evaluate(time.Now())
	if st := adminOrigins(t, h.p)[0]; st.PassiveEjected {
		t.Fatalf("2 failures in 20 requests ejected origin a: why %q, detail %q", st.Why["passive"], st.EjectionDetail)
	}
	if v, _ := h.metric("vigil_proxy_ejections_total", map[string]string{"origin": "o0", "reason": ReasonSuccessRate}); v != 0 {
		t.Fatalf("ejections_total{reason=success_rate} = %v, want 0", v)
	}
}

// A pool of 3 origins with 100+ requests each, one failing 30% of them: the
// success-rate rule ejects it, and /api/v1/origins says with what counts.
func TestSuccessRateEjectsWithVolume(t *testing.T) {
	a := newRateOrigin(t, func(n int64) bool { return n%10 == 3 || n%10 == 6 || n%10 == 9 })
	b, c := newRateOrigin(t, nil), newRateOrigin(t, nil)
	cfg := pool1(PolicyRoundRobin, rateURLs(a, b, c)...)
	h := start(t, cfg, nil, false)
	pl := h.pool("web")
	driveUntil(t, h, 1000, func() bool { return a.hits.Load() >= 120 && b.hits.Load() >= 100 && c.hits.Load() >= 100 })
	pl.evaluate(time.Now())
	st := adminOrigins(t, h.p)[0]
	req, fail := a.hits.Load(), a.errs.Load()
	prefix := fmt.Sprintf("success rate %s (%d of %d requests failed in 30s) vs pool median 100%% (3 origins with ≥ 100 requests), below ",
		pct(1-float64(fail)/float64(req)), fail, req)
	if !st.PassiveEjected || st.Why["passive"] != ReasonSuccessRate || !strings.HasPrefix(st.EjectionDetail, prefix) {
		t.Fatalf("origin a (%d of %d failed): ejected %v, why %q, detail %q; want %s, detail starting %q",
			fail, req, st.PassiveEjected, st.Why["passive"], st.EjectionDetail, ReasonSuccessRate, prefix)
	}
	for _, o := range adminOrigins(t, h.p)[1:] {
		if o.PassiveEjected {
			t.Fatalf("healthy origin %s ejected: %s", o.Name, o.EjectionDetail)
		}
	}
}

// An origin below success_rate_min_requests does not count towards
// success_rate_min_hosts: with 4 origins and success_rate_min_hosts 4, the
// 30% failing origin is kept while the fourth (a quarter of the traffic)
// has fewer than 100 requests, and ejected once it has them.
func TestSuccessRateMinHosts(t *testing.T) {
	a := newRateOrigin(t, func(n int64) bool { return n%10 == 3 || n%10 == 6 || n%10 == 9 })
	b, c, d := newRateOrigin(t, nil), newRateOrigin(t, nil), newRateOrigin(t, nil)
	cfg := pool1(PolicyRoundRobin, rateURLs(a, b, c, d)...)
	for i, w := range []int{4, 4, 4, 1} {
		cfg.Pools[0].Origins[i].Weight = w
	}
	cfg.Pools[0].Passive.SuccessRateMinHosts = 4
	h := start(t, cfg, nil, false)
	pl := h.pool("web")
	driveUntil(t, h, 2000, func() bool { return min(a.hits.Load(), b.hits.Load(), c.hits.Load()) >= 120 })
	if n := d.hits.Load(); n >= 100 {
		t.Fatalf("origin d got %d requests, want fewer than 100 for this step", n)
	}
	pl.evaluate(time.Now())
	if st := adminOrigins(t, h.p)[0]; st.PassiveEjected {
		t.Fatalf("ejected with 3 origins at volume, success_rate_min_hosts 4 (d had %d requests): why %q, detail %q",
			d.hits.Load(), st.Why["passive"], st.EjectionDetail)
	}
	driveUntil(t, h, 2000, func() bool { return d.hits.Load() >= 100 })
	pl.evaluate(time.Now())
	st := adminOrigins(t, h.p)[0]
	if !st.PassiveEjected || st.Why["passive"] != ReasonSuccessRate || !strings.Contains(st.EjectionDetail, "(4 origins with ≥ 100 requests)") {
		t.Fatalf("4 origins at volume: ejected %v, why %q, detail %q; want %s among 4 origins", st.PassiveEjected, st.Why["passive"], st.EjectionDetail, ReasonSuccessRate)
	}
}

func TestSuccessRateConfig(t *testing.T) {
	origins := func(n int) []OriginConfig {
		var out []OriginConfig
		for i := range n {
			out = append(out, OriginConfig{Target: fmt.Sprintf("o%d", i), URL: fmt.Sprintf("http://127.0.0.1:%d", i+1)})
		}
		return out
	}
	validate := func(pc PassiveConfig, n int, keys ...string) (*Config, error) {
		c := &Config{Pools: []PoolConfig{{Name: "web", Origins: origins(n), Passive: pc}}}
		if keys != nil {
			c.SetKeys(keys)
		}
		return c, c.ValidateAndSetDefaults()
	}
	t.Run("defaults", func(t *testing.T) {
		for _, tc := range []struct {
			pc              PassiveConfig
			hosts, requests int
		}{
			{PassiveConfig{}, 3, 100},
			{PassiveConfig{MinRequests: 50}, 3, 100},
			{PassiveConfig{MinRequests: 250}, 3, 250}, // never laxer than min_requests
			{PassiveConfig{MinRequests: 250, SuccessRateMinRequests: 40, SuccessRateMinHosts: 5}, 5, 40},
		} {
			c, err := validate(tc.pc, 3)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Pools[0].Passive
			if got.SuccessRateMinHosts != tc.hosts || got.SuccessRateMinRequests != tc.requests {
				t.Errorf("%+v: success_rate_min_hosts %d, success_rate_min_requests %d; want %d, %d",
					tc.pc, got.SuccessRateMinHosts, got.SuccessRateMinRequests, tc.hosts, tc.requests)
			}
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, tc := range []struct {
			pc   PassiveConfig
			keys []string
			want string
		}{
			{PassiveConfig{SuccessRateMinHosts: 2}, nil, "pools[0].passive.success_rate_min_hosts: 2: want ≥ 3"},
			{PassiveConfig{SuccessRateMinHosts: -1}, nil, "pools[0].passive.success_rate_min_hosts: -1: want ≥ 3"},
			{PassiveConfig{SuccessRateMinRequests: -5}, nil, "pools[0].passive.success_rate_min_requests: -5: must be ≥ 1"},
			{PassiveConfig{}, []string{"pools[0].passive.success_rate_min_requests"}, "pools[0].passive.success_rate_min_requests: 0: "},
			{PassiveConfig{}, []string{"pools[0].passive.success_rate_min_hosts"}, "pools[0].passive.success_rate_min_hosts: 0: "},
		} {
			_, err := validate(tc.pc, 3, tc.keys...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v (keys %v): error %v, want one containing %q", tc.pc, tc.keys, err, tc.want)
			}
		}
	})
	t.Run("warnings", func(t *testing.T) {
		const warn = "the success_rate rule never runs there"
		for _, tc := range []struct {
			name    string
			pc      PassiveConfig
			origins int
			keys    []string
			want    string // "" for no warning
		}{
			{"min_hosts over the pool", PassiveConfig{SuccessRateMinHosts: 5}, 3, []string{"pools[0].passive.success_rate_min_hosts"},
				"pools[0].passive.success_rate_min_hosts: 5, but pool web has 3 origin(s): " + warn},
			{"stdev set on a pool of 2", PassiveConfig{SuccessRateStdev: 2}, 2, []string{"pools[0].passive.success_rate_stdev"},
				"pools[0].passive.success_rate_min_hosts: 3, but pool web has 2 origin(s): " + warn},
			{"nothing set, pool of 2", PassiveConfig{Window: time.Minute}, 2, []string{"pools[0].passive.window"}, ""},
			{"rule off", PassiveConfig{SuccessRateStdev: -1, SuccessRateMinHosts: 5}, 3,
				[]string{"pools[0].passive.success_rate_stdev", "pools[0].passive.success_rate_min_hosts"}, ""},
			{"enough origins", PassiveConfig{SuccessRateMinHosts: 5}, 5, []string{"pools[0].passive.success_rate_min_hosts"}, ""},
		} {
			c, err := validate(tc.pc, tc.origins, tc.keys...)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var got string
			for _, w := range c.Warnings() {
				if strings.Contains(w, "success_rate") {
					got = w
				}
			}
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: warning %q, want %q", tc.name, got, tc.want)
			}
		}
	})
}
