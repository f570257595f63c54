package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// poolSeries lists the series of h's registry labelled pool=name.
func poolSeries(t *testing.T, h *harness, name string) []string {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			has := false
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
				has = has || lp.GetName() == "pool" && lp.GetValue() == name
			}
			if has {
				out = append(out, mf.GetName()+"{"+strings.Join(labels, ",")+"}")
			}
		}
	}
	return out
}

// TestReloadForgetsRemovedPool: a reload that removes a pool removes every
// series labelled with it — the proxy's own answers (origin "none"),
// retries, last resort, retry budget, the verdict date (whose frozen age
// would fire an alert forever) — as it removed only its origins' before.
// The pools kept keep theirs.
func TestReloadForgetsRemovedPool(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Hosts = []string{"www.example.test"}
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools = append(cfg.Pools, PoolConfig{Name: "api", Hosts: []string{"api.example.test"},
		Origins: []OriginConfig{{Target: "api0", URL: deadURL(t)}, {Target: "api1", URL: b.srv.URL}}})
	src := &memSource{}
	now := time.Now()
	src.set(reporting.Verdict{Check: "asset", Target: "api1", Region: "eu", State: reporting.StateHealthy,
		At: now, Expires: now.Add(time.Hour)},
		reporting.Verdict{Check: "asset", Target: "o0", Region: "eu", State: reporting.StateHealthy,
			At: now, Expires: now.Add(time.Hour)})
	h := start(t, cfg, src, true)
	if c, _, _ := h.doHost("api.example.test", "GET", "/"); c != 200 {
		t.Fatalf("api after failover: %d", c)
	}
	if c, _, _ := h.doHost("www.example.test", "GET", "/"); c != 200 {
		t.Fatalf("www: %d", c)
	}
	eventually(t, "the api pool's verdict date", func() bool {
		_, ok := h.metric("vigil_proxy_pool_verdict_timestamp_seconds", map[string]string{"pool": "api"})
		return ok
	})
	before := poolSeries(t, h, "api")
	for _, want := range []string{"vigil_proxy_retries_total", "vigil_proxy_last_resort_total", "vigil_proxy_pool_verdict_timestamp_seconds", "origin=none"} {
		if !strings.Contains(strings.Join(before, " "), want) {
			t.Fatalf("before the reload, no series with %s among the api pool's: %q", want, before)
		}
	}
	www := len(poolSeries(t, h, "web"))

	cfg.Pools = cfg.Pools[:1]
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if got := poolSeries(t, h, "api"); len(got) != 0 {
		t.Errorf("%d series of the removed pool api left after the reload: %q", len(got), got)
	}
	if got := len(poolSeries(t, h, "web")); got != www {
		t.Errorf("the kept pool web has %d series after the reload, want %d", got, www)
	}
}
