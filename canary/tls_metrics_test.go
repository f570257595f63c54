package canary

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// metricValue is the value of the series named exactly series (name and
// labels as exposed) in a Prometheus text body.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in:\n%s", series, body)
	return 0
}

// TestMetricsRedirectPhases: with follow_redirects, the connect and tls
// phases of probe_http_duration_seconds are the hops' own (summed), and a
// first hop's 1 s server wait shows in processing, as in
// blackbox_exporter; the verdict (status page, API) carries the same
// phases.
func TestMetricsRedirectPhases(t *testing.T) {
	const wait = time.Second // a loaded CI machine took 136 ms for the two handshakes
	final := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "landed")
	}))
	t.Cleanup(final.Close)
	first := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(wait)
		http.Redirect(w, r, final.URL+"/landed", http.StatusFound)
	}))
	t.Cleanup(first.Close)
	cfg := testConfig(t, map[string]string{"o1": first.URL},
		CheckConfig{Name: "hops", Targets: []string{"o1"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/start", FollowRedirects: true,
				TLS: checks.TLSOptions{InsecureSkipVerify: true}}})
	c := start(t, cfg, compile(t, cfg), Options{})
	v, err := c.Trigger("hops", "o1")
	if err != nil || !v.OK {
		t.Fatalf("trigger: %+v %v", v, err)
	}
	if v.Connect > wait/2 || v.TLS > wait/2 || v.TTFB-v.DNS-v.Connect-v.TLS < wait {
		t.Errorf("verdict phases dns %s connect %s tls %s ttfb %s: want connect and tls well under %s and the wait in ttfb − dns − connect − tls",
			v.DNS, v.Connect, v.TLS, v.TTFB, wait)
	}
	srv := httptest.NewServer(c.Handler(nil))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	phase := func(p string) float64 {
		return metricValue(t, string(b), `probe_http_duration_seconds{check="hops",phase="`+p+`",region="test-region",target="o1",tier="deep"}`)
	}
	if got := phase("connect"); got <= 0 || got > (wait/2).Seconds() {
		t.Errorf("phase connect = %gs, want the two hops' connects (> 0, well under %s)", got, wait)
	}
	if got := phase("tls"); got <= 0 || got > (wait/2).Seconds() {
		t.Errorf("phase tls = %gs, want the two hops' handshakes (> 0, well under %s)", got, wait)
	}
	if got := phase("processing"); got < wait.Seconds() {
		t.Errorf("phase processing = %gs, want at least the first hop's %s wait", got, wait)
	}
}

// TestMetricsCertExpiry: probe_ssl_earliest_cert_expiry is the earliest
// NotAfter of the certificates the server presented (here its intermediate,
// 5 days, not its 90-day leaf), and
// probe_ssl_last_chain_expiry_timestamp_seconds the best verified chain's
// earliest (the client also trusts a year-long copy of the intermediate,
// so the chain through it lasts as long as the leaf), as in
// blackbox_exporter. With insecure_skip_verify nothing is verified and the
// chain series is absent.
func TestMetricsCertExpiry(t *testing.T) {
	now := time.Now()
	ch := checktest.NewChain(t, now.Add(90*24*time.Hour), now.Add(5*24*time.Hour))
	inter, leaf := ch.Inter, ch.Leaf
	origin := ch.Serve(t)
	caFile := checktest.PEMFile(t, ch.Root, ch.InterLong)
	tlsTarget := "tls://" + origin.Listener.Addr().String()
	cfg := testConfig(t, map[string]string{"web": origin.URL, "port": tlsTarget},
		CheckConfig{Name: "https", Targets: []string{"web"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile}}},
		CheckConfig{Name: "hs", Targets: []string{"port"}, Rise: 1, Interval: time.Hour,
			TLS: &checks.TLSSpec{CAFile: caFile}},
		CheckConfig{Name: "insecure", Targets: []string{"web"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{TLS: checks.TLSOptions{InsecureSkipVerify: true}}})
	c := start(t, cfg, compile(t, cfg), Options{})
	for _, p := range [][2]string{{"https", "web"}, {"hs", "port"}, {"insecure", "web"}} {
		if v, err := c.Trigger(p[0], p[1]); err != nil || !v.OK {
			t.Fatalf("trigger %s: %+v %v", p[0], v, err)
		}
	}
	srv := httptest.NewServer(c.Handler(nil))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	series := func(name, check, target, tier string) string {
		return fmt.Sprintf(`%s{check=%q,region="test-region",target=%q,tier=%q}`, name, check, target, tier)
	}
	for _, p := range []struct{ check, target, tier string }{{"https", "web", "deep"}, {"hs", "port", "shallow"}} {
		if got := metricValue(t, body, series("probe_ssl_earliest_cert_expiry", p.check, p.target, p.tier)); got != float64(inter.NotAfter.Unix()) {
			t.Errorf("%s: probe_ssl_earliest_cert_expiry = %.0f, want the intermediate's %d (the leaf's is %d)", p.check, got, inter.NotAfter.Unix(), leaf.NotAfter.Unix())
		}
		if got := metricValue(t, body, series("probe_ssl_last_chain_expiry_timestamp_seconds", p.check, p.target, p.tier)); got != float64(leaf.NotAfter.Unix()) {
			t.Errorf("%s: probe_ssl_last_chain_expiry_timestamp_seconds = %.0f, want %d (the chain through the year-long intermediate ends with the leaf)", p.check, got, leaf.NotAfter.Unix())
		}
	}
	if got := metricValue(t, body, series("probe_ssl_earliest_cert_expiry", "insecure", "web", "deep")); got != float64(inter.NotAfter.Unix()) {
		t.Errorf("insecure: probe_ssl_earliest_cert_expiry = %.0f, want %d", got, inter.NotAfter.Unix())
	}
	if strings.Contains(body, `probe_ssl_last_chain_expiry_timestamp_seconds{check="insecure"`) {
		t.Errorf("a chain expiry for a check that verifies nothing:\n%s", body)
	}
}
