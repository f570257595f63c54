package proxy

import (
	"strings"
	"testing"
)

// TestMetricsSeriesPerOriginFromStart: each origin has 42 series in
// /metrics before any request, as the README counts them: 17 of the
// request duration histogram (15 buckets, sum, count), 11 tries_total
// results, 5 ejection reasons, 5 refused-ejection reasons, 2 return probe
// results, 1 availability and 1 drained gauge (the README's list left the
// drained gauge out and added up to 41).
func TestMetricsSeriesPerOriginFromStart(t *testing.T) {
	h := start(t, pool1(PolicyFirst, newBackend(t, "a").srv.URL), nil, false)
	byName := map[string]int{}
	n := 0
	for _, line := range strings.Split(h.scrape(), "\n") {
		if strings.HasPrefix(line, "#") || !strings.Contains(line, `origin="o0"`) {
			continue
		}
		n++
		name, _, _ := strings.Cut(line, "{")
		byName[name]++
	}
	want := map[string]int{
		"vigil_proxy_request_duration_seconds_bucket": 15,
		"vigil_proxy_request_duration_seconds_sum":    1,
		"vigil_proxy_request_duration_seconds_count":  1,
		"vigil_proxy_tries_total":                     11,
		"vigil_proxy_ejections_total":                 5,
		"vigil_proxy_ejections_refused_total":         5,
		"vigil_proxy_return_probes_total":             2,
		"vigil_proxy_origin_available":                1,
		"vigil_proxy_origin_drained":                  1,
	}
	if n != 42 || len(byName) != len(want) {
		t.Errorf("origin o0 has %d series from the start, want 42: %v", n, byName)
	}
	for k, v := range want {
		if byName[k] != v {
			t.Errorf("%s: %d series, want %d", k, byName[k], v)
		}
	}
}
