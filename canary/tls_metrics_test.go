package canary

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
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
// first hop's 400 ms server wait shows in processing, as in
// blackbox_exporter; the verdict (status page, API) carries the same
// phases.
func TestMetricsRedirectPhases(t *testing.T) {
	const wait = 400 * time.Millisecond
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
	if v.Connect > wait/4 || v.TLS > wait/4 || v.TTFB-v.DNS-v.Connect-v.TLS < wait {
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
	if got := phase("connect"); got <= 0 || got > (wait / 4).Seconds() {
		t.Errorf("phase connect = %gs, want the two hops' connects (> 0, well under %s)", got, wait)
	}
	if got := phase("tls"); got <= 0 || got > (wait / 4).Seconds() {
		t.Errorf("phase tls = %gs, want the two hops' handshakes (> 0, well under %s)", got, wait)
	}
	if got := phase("processing"); got < wait.Seconds() {
		t.Errorf("phase processing = %gs, want at least the first hop's %s wait", got, wait)
	}
}
