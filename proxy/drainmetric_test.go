package proxy

import (
	"strings"
	"testing"
)

// TestDrainedMetric: vigil_proxy_origin_drained is 0 for every origin from
// the start and 1 while one is drained (vigil_proxy_origin_available says
// only that it is out, not why): the generated live_errors rules leave a
// drained origin out by it, as the alerter leaves out the signals whose
// out_by says drained.
func TestDrainedMetric(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h := start(t, pool1(PolicyRoundRobin, a.srv.URL, b.srv.URL), nil, false)
	series := func(origin, v string) string {
		return `vigil_proxy_origin_drained{origin="` + origin + `",pool="web"} ` + v
	}
	text := h.scrape()
	for _, want := range []string{series("o0", "0"), series("o1", "0")} {
		if !strings.Contains(text, want) {
			t.Errorf("before the drain, /metrics lacks %s", want)
		}
	}
	if !h.p.Drain("o1", "maintenance") {
		t.Fatal("Drain(o1) found no origin")
	}
	text = h.scrape()
	for _, want := range []string{series("o0", "0"), series("o1", "1"), `vigil_proxy_origin_available{origin="o1",pool="web"} 0`} {
		if !strings.Contains(text, want) {
			t.Errorf("drained, /metrics lacks %s", want)
		}
	}
	h.p.Undrain("o1")
	if text = h.scrape(); !strings.Contains(text, series("o1", "0")) {
		t.Errorf("undrained, /metrics lacks %s", series("o1", "0"))
	}
}
