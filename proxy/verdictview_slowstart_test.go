package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// /api/v1/origins shows a returning origin's slow start (when its ramp
// ends, and its weight's fraction now) and max_conns even when 0 (no cap).
// Was: neither; max_conns was left out at 0.
func TestOriginsShowSlowStartAndMaxConns(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.Pools[0].SlowStart = 10 * time.Second
	h := start(t, cfg, nil, false)
	h.p.Drain("o1", "deploy")
	h.p.Undrain("o1")
	back := time.Now()

	srv := httptest.NewServer(h.p.AdminHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/origins")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var all []map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	for i, o := range all {
		if mc, ok := o["max_conns"]; !ok || mc != 0.0 {
			t.Errorf("origin %d: max_conns = %v (present %v), want 0 (no cap) shown", i, mc, ok)
		}
	}
	if _, ok := all[0]["slow_start_until"]; ok {
		t.Errorf("o0 never left, yet shows slow_start_until: %s", raw)
	}
	until, err := time.Parse(time.RFC3339Nano, all[1]["slow_start_until"].(string))
	if err != nil {
		t.Fatalf("o1 slow_start_until: %v in %s", err, raw)
	}
	if d := until.Sub(back); d < 9*time.Second || d > 10*time.Second {
		t.Errorf("o1 slow_start_until %v is %v after its return, want 10s", until, d)
	}
	if f, _ := all[1]["weight_fraction"].(float64); f < 0.1 || f > 0.2 {
		t.Errorf("o1 weight_fraction = %v just after its return, want 0.1 to 0.2: %s", all[1]["weight_fraction"], raw)
	}
	if _, ok := all[0]["weight_fraction"]; ok {
		t.Errorf("o0 shows weight_fraction: %s", raw)
	}
}
