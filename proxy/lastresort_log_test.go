package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// lastResort, as the request path drives it (its first pick of each
// request): an incident is logged once when the first request finds no
// available origin, naming why each origin is out, and once when a request
// finds one again, with how many requests went to the last resort; the
// pool's vigil_proxy_last_resort_total counts them.
func TestLastResortIncident(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.Pools[0].MaxEjected = 100
	h, logs := startCapturing(t, cfg, EngineFast)
	pl := h.pool("web")
	lr := &lastResort{total: h.p.m.forLastResort("web")}
	count := func() float64 {
		t.Helper()
		n, ok := h.metric("vigil_proxy_last_resort_total", map[string]string{"pool": "web"})
		if !ok {
			t.Fatal("vigil_proxy_last_resort_total{pool=web} missing")
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("vigil_proxy_last_resort_total starts at %v, want 0", n)
	}
	lr.first(pl, true)
	if got := logs.lines("last resort"); len(got) != 0 || count() != 0 {
		t.Fatalf("available pick: lines %q, count %v; want none and 0", got, count())
	}
	now := time.Now()
	pl.applyVerdicts([]reporting.Verdict{verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
	h.p.Drain("o1", "deploy")
	for i := 0; i < 3; i++ {
		lr.first(pl, false)
	}
	if n := count(); n != 3 {
		t.Errorf("vigil_proxy_last_resort_total = %v, want 3", n)
	}
	checkIncidentBegan(t, logs, `origins="o0: verdict_down; o1: drained"`)
	lr.first(pl, true)
	lr.first(pl, true)
	ended := logs.lines("pool has an available origin again; last resort over")
	if len(ended) != 1 || !strings.Contains(ended[0], "requests=3") || !strings.Contains(ended[0], "pool=web") {
		t.Fatalf("want one last-resort-over line with pool=web requests=3, got %q", ended)
	}
	lr.first(pl, false) // a new incident
	if got := logs.lines("pool has no available origin"); len(got) != 2 || count() != 4 {
		t.Errorf("second incident: %d warnings, count %v; want 2 and 4", len(got), count())
	}
}

// A pool with no available origin sends requests to origins out of
// rotation as a last resort: that is logged once when it begins, naming why
// each origin is out, and once when an available origin takes requests
// again; vigil_proxy_last_resort_total counts the requests, from 0. Was:
// no trace at all. Both engines.
func TestLastResortLoggedAndCounted(t *testing.T) {
	for _, eng := range bothEngines {
		t.Run(eng, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			cfg := pool1(PolicyFirst, urls(a, b)...)
			cfg.Pools[0].MaxEjected = 100
			h, logs := startCapturing(t, cfg, eng)
			count := func() float64 {
				t.Helper()
				n, ok := h.metric("vigil_proxy_last_resort_total", map[string]string{"pool": "web"})
				if !ok {
					t.Fatal("vigil_proxy_last_resort_total{pool=web} missing")
				}
				return n
			}
			if code, _, _ := h.do("GET", "/", ""); code != 200 || count() != 0 {
				t.Fatalf("all available: %d, last resort count %v; want 200 and 0", code, count())
			}
			now := time.Now()
			h.pool("web").applyVerdicts([]reporting.Verdict{
				verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
				verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
			h.p.Drain("o1", "deploy") // drained: never tried, but named
			for i := 0; i < 3; i++ {
				if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
					t.Fatalf("last-resort request %d: %d %q, want o0's 200", i, code, body)
				}
			}
			if n := count(); n != 3 {
				t.Errorf("vigil_proxy_last_resort_total = %v, want 3", n)
			}
			checkIncidentBegan(t, logs, `origins="o0: verdict_down; o1: drained,verdict_down"`)
			// A reload during the incident continues it: no second warning.
			if err := h.p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
				t.Fatalf("last-resort request after a reload: %d %q", code, body)
			}
			if got := logs.lines("level=WARN", "pool has no available origin"); len(got) != 1 {
				t.Fatalf("a reload reopened the incident: %q", got)
			}
			h.pool("web").applyVerdicts(nil, now)
			if code, _, _ := h.do("GET", "/", ""); code != 200 {
				t.Fatalf("after o0 returned: %d", code)
			}
			ended := logs.lines("last resort over")
			if len(ended) != 1 || !strings.Contains(ended[0], "requests=4") || !strings.Contains(ended[0], "pool=web") {
				t.Fatalf("want one last-resort-over line with requests=4, got %q", ended)
			}
			if n := count(); n != 4 {
				t.Errorf("after the return vigil_proxy_last_resort_total = %v, want still 4", n)
			}
		})
	}
}

// checkIncidentBegan checks that exactly one last-resort warning was logged,
// naming pool web and why each origin was out (want).
func checkIncidentBegan(t *testing.T, logs *tryLogs, want string) {
	t.Helper()
	began := logs.lines("level=WARN", "pool has no available origin")
	if len(began) != 1 {
		t.Fatalf("want one last-resort warning, got %q", began)
	}
	if !strings.Contains(began[0], want) || !strings.Contains(began[0], "pool=web") {
		t.Errorf("warning lacks pool=web or %s:\n%s", want, began[0])
	}
}
