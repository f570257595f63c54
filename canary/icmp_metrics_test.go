package canary

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestMetricsICMPPhases: a scheduled icmp check exports
// probe_icmp_duration_seconds{phase} on /metrics as /probe and
// blackbox_exporter do: resolve, setup, and rtt (the verdict's TTFB less
// the other two); an icmp check has no HTTP series, an http check no ICMP
// ones. Pings 127.0.0.1 over a real ICMP socket.
func TestMetricsICMPPhases(t *testing.T) {
	web := closedURL(t)
	cfg := testConfig(t, map[string]string{"lo": "icmp://127.0.0.1", "web": web},
		CheckConfig{Name: "ping", Targets: []string{"lo"}, Rise: 1, Interval: time.Hour, ICMP: &checks.ICMPSpec{}},
		CheckConfig{Name: "page", Targets: []string{"web"}, Rise: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	c := start(t, cfg, compile(t, cfg), Options{})
	body := triggerAndScrape(t, c, [2]string{"ping", "lo"}, [2]string{"page", "web"})
	v, ok := latestOf(c, "ping", "lo")
	if !ok {
		t.Fatal("no verdict for ping × lo")
	}
	if v.AgentFault() {
		msg := "no ICMP socket can be opened (run as root, grant CAP_NET_RAW, or widen net.ipv4.ping_group_range): " + v.Err
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	if !v.OK || v.TTFB <= 0 {
		t.Fatalf("ping × lo: ok=%v ttfb=%s err=%q, want a reply", v.OK, v.TTFB, v.Err)
	}
	series := func(phase string) string {
		return `probe_icmp_duration_seconds{check="ping",phase="` + phase + `",region="test-region",target="lo",tier="` + v.Tier + `"}`
	}
	want := map[string]float64{
		"resolve": v.DNS.Seconds(),
		"setup":   v.Connect.Seconds(),
		"rtt":     (v.TTFB - v.DNS - v.Connect).Seconds(),
	}
	for phase, w := range want {
		if got := metricValue(t, body, series(phase)); got != w {
			t.Errorf("%s = %g, want %g", series(phase), got, w)
		}
	}
	if want["rtt"] <= 0 {
		t.Errorf("rtt %g: want the round trip (ttfb %s, dns %s, setup %s)", want["rtt"], v.TTFB, v.DNS, v.Connect)
	}
	for _, bad := range []string{`probe_http_duration_seconds{check="ping"`, `probe_icmp_duration_seconds{check="page"`} {
		if strings.Contains(body, bad) {
			t.Errorf("/metrics has %s…:\n%s", bad, body)
		}
	}
}
