package canary

import (
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
)

const probeToken = "probe-test-token"

// probeAgent starts a canary whose config has the given checks (disabled:
// modules only, never scheduled) and agent.probe, and serves its
// /probe and API on a real listener.
func probeAgent(t *testing.T, pc ProbeConfig, chs ...CheckConfig) (*Canary, *memSink, string) {
	t.Helper()
	cfg := &Config{
		Agent:    AgentConfig{Region: "test-region", Vantage: "v1", Concurrency: 16, AdminToken: probeToken, Probe: pc},
		Defaults: Defaults{Interval: time.Hour, Jitter: pct(0)},
		Checks:   chs,
	}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatalf("config: %v", err)
	}
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink, PublishEvery: 10 * time.Millisecond})
	mux := http.NewServeMux()
	mux.Handle("GET /probe", c.ProbeHandler("test"))
	mux.Handle("/", c.Handler(nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return c, sink, srv.URL
}

// probeGet asks /probe and returns the status, the Content-Type and the body.
func probeGet(t *testing.T, base, module, target, token string, hdr map[string]string) (int, string, string) {
	t.Helper()
	q := url.Values{}
	if module != "" {
		q.Set("module", module)
	}
	if target != "" {
		q.Set("target", target)
	}
	req, err := http.NewRequest("GET", base+"/probe?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// parseProbe parses a /probe answer with Prometheus' text parser.
func parseProbe(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return mfs
}

// gaugeOf is the value of the series of name whose labels include want.
func gaugeOf(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no %s in the answer", name)
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no %s%v in the answer", name, want)
	return 0
}

func allowLoopback() ProbeConfig {
	return ProbeConfig{Enabled: true, Allow: []string{"127.0.0.0/8"}}
}

func httpModule(name string) CheckConfig {
	return CheckConfig{Name: name, URL: "http://127.0.0.1:9/", Disabled: true, Timeout: 5 * time.Second,
		HTTP: &checks.HTTPSpec{}, Expect: &checks.Expect{Status: checks.StatusList{"2xx"}}}
}

func TestProbeHTTPMetrics(t *testing.T) {
	var hosts atomic.Value
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts.Store(r.Host)
		if r.URL.Path == "/bad" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer origin.Close()
	c, sink, base := probeAgent(t, allowLoopback(), httpModule("web"))

	code, ct, body := probeGet(t, base, "web", origin.URL+"/ok", probeToken, nil)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	if !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want text/plain; version=0.0.4", ct)
	}
	mfs := parseProbe(t, body)
	if v := gaugeOf(t, mfs, "probe_success", nil); v != 1 {
		t.Errorf("probe_success %v, want 1\n%s", v, body)
	}
	if v := gaugeOf(t, mfs, "probe_http_status_code", nil); v != 200 {
		t.Errorf("probe_http_status_code %v, want 200", v)
	}
	if v := gaugeOf(t, mfs, "probe_duration_seconds", nil); v <= 0 || v > 5 {
		t.Errorf("probe_duration_seconds %v", v)
	}
	if v := gaugeOf(t, mfs, "probe_http_ssl", nil); v != 0 {
		t.Errorf("probe_http_ssl %v over plain http", v)
	}
	if v := gaugeOf(t, mfs, "probe_http_version", nil); v != 1.1 {
		t.Errorf("probe_http_version %v, want 1.1", v)
	}
	for _, ph := range []string{"resolve", "connect", "tls", "processing", "transfer"} {
		gaugeOf(t, mfs, "probe_http_duration_seconds", map[string]string{"phase": ph})
	}
	if _, ok := mfs["vigil_probe_cause"]; ok {
		t.Errorf("vigil_probe_cause on success:\n%s", body)
	}

	code, _, body = probeGet(t, base, "web", origin.URL+"/bad", probeToken, nil)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	mfs = parseProbe(t, body)
	if v := gaugeOf(t, mfs, "probe_success", nil); v != 0 {
		t.Errorf("probe_success %v, want 0", v)
	}
	if v := gaugeOf(t, mfs, "probe_http_status_code", nil); v != 500 {
		t.Errorf("probe_http_status_code %v, want 500", v)
	}
	if v := gaugeOf(t, mfs, "vigil_probe_cause", map[string]string{"cause": "status"}); v != 1 {
		t.Errorf("vigil_probe_cause{cause=status} %v", v)
	}

	// A name is resolved once and the allowed address dialled; the origin
	// still sees the name as Host.
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())
	code, _, body = probeGet(t, base, "web", "localhost:"+port+"/ok", probeToken, nil)
	if code != 200 || gaugeOf(t, parseProbe(t, body), "probe_success", nil) != 1 {
		t.Fatalf("localhost target: %d\n%s", code, body)
	}
	if h := hosts.Load(); h != "localhost:"+port {
		t.Errorf("origin saw Host %v, want localhost:%s", h, port)
	}
	if v := gaugeOf(t, parseProbe(t, body), "probe_ip_protocol", nil); v != 4 {
		t.Errorf("probe_ip_protocol %v, want 4 (only 127.0.0.0/8 is allowed)", v)
	}

	// Counted, and never published as verdicts.
	mfsReg, err := c.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, mf := range mfsReg {
		if mf.GetName() != "vigil_probe_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var mod, out string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "module":
					mod = l.GetValue()
				case "outcome":
					out = l.GetValue()
				}
			}
			counts[mod+"/"+out] = m.GetCounter().GetValue()
		}
	}
	if counts["web/success"] != 2 || counts["web/failure"] != 1 {
		t.Errorf("vigil_probe_requests_total: %v, want web/success 2, web/failure 1", counts)
	}
	if _, ok := counts["/forbidden"]; !ok {
		t.Errorf("refusal counters do not start at 0: %v", counts)
	}
	time.Sleep(50 * time.Millisecond) // two publish periods
	sink.mu.Lock()
	n := len(sink.vs)
	sink.mu.Unlock()
	if n != 0 {
		t.Errorf("%d verdicts published; probes publish none", n)
	}
}

// countingListener is a real TCP listener on 127.0.0.1 that counts the
// connections it accepts.
func countingListener(t *testing.T) (addr string, accepts *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepts = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), accepts
}

func TestProbeAllowList(t *testing.T) {
	addr, accepts := countingListener(t)
	_, port, _ := net.SplitHostPort(addr)
	tcpModule := CheckConfig{Name: "port", URL: "tcp://127.0.0.1:9", Disabled: true, Timeout: 2 * time.Second, TCP: &checks.TCPSpec{}}
	_, _, base := probeAgent(t, ProbeConfig{Enabled: true, Allow: []string{"10.0.0.0/8", "*.example.com"}}, tcpModule)
	for _, target := range []string{
		addr,                               // host:port, an address outside the list
		"tcp://" + addr,                    // the same as a URL
		"tcp://[::ffff:127.0.0.1]:" + port, // IPv4-mapped IPv6: matched as IPv4
		"localhost:" + port,                // a name resolving outside the list
	} {
		code, _, body := probeGet(t, base, "port", target, probeToken, nil)
		if code != http.StatusForbidden {
			t.Fatalf("%s: status %d, want 403: %s", target, code, body)
		}
		if !strings.Contains(body, "agent.probe.allow") {
			t.Errorf("%s: the 403 does not name agent.probe.allow: %s", target, body)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepts.Load(); n != 0 {
		t.Fatalf("%d connections reached the listener behind refused targets", n)
	}

	// The same listener, allowed: it counts the probe's connection.
	_, _, base = probeAgent(t, ProbeConfig{Enabled: true, Allow: []string{"127.0.0.1"}}, tcpModule)
	code, _, body := probeGet(t, base, "port", addr, probeToken, nil)
	if code != 200 || gaugeOf(t, parseProbe(t, body), "probe_success", nil) != 1 {
		t.Fatalf("allowed target: %d\n%s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for accepts.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := accepts.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

func TestProbeToken(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	_, _, base := probeAgent(t, allowLoopback(), httpModule("web"))
	for _, tok := range []string{"", "wrong"} {
		code, _, body := probeGet(t, base, "web", origin.URL, tok, nil)
		if code != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401: %s", tok, code, body)
		}
		if strings.Contains(body, probeToken) {
			t.Error("the answer shows the token")
		}
	}
	if code, _, body := probeGet(t, base, "web", origin.URL, probeToken, nil); code != 200 {
		t.Errorf("right token: %d: %s", code, body)
	}

	off := false
	pc := allowLoopback()
	pc.RequireToken = &off
	_, _, base = probeAgent(t, pc, httpModule("web"))
	if code, _, body := probeGet(t, base, "web", origin.URL, "", nil); code != 200 {
		t.Errorf("require_token: false: %d: %s", code, body)
	}

	_, _, base = probeAgent(t, ProbeConfig{}, httpModule("web"))
	if code, _, body := probeGet(t, base, "web", origin.URL, probeToken, nil); code != http.StatusNotFound || !strings.Contains(body, "agent.probe.enabled") {
		t.Errorf("probe off: %d: %s", code, body)
	}
}

func TestProbeTimeoutHeader(t *testing.T) {
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer origin.Close()
	defer close(release)
	_, _, base := probeAgent(t, allowLoopback(), httpModule("web"))
	start := time.Now()
	// 1.5s scrape timeout − the 500ms offset: the run gets 1s, not the
	// check's 5s.
	code, _, body := probeGet(t, base, "web", origin.URL, probeToken, map[string]string{"X-Prometheus-Scrape-Timeout-Seconds": "1.5"})
	took := time.Since(start)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	mfs := parseProbe(t, body)
	if v := gaugeOf(t, mfs, "probe_success", nil); v != 0 {
		t.Errorf("probe_success %v, want 0", v)
	}
	if v := gaugeOf(t, mfs, "vigil_probe_cause", map[string]string{"cause": "timeout"}); v != 1 {
		t.Errorf("vigil_probe_cause{cause=timeout} %v\n%s", v, body)
	}
	if d := gaugeOf(t, mfs, "probe_duration_seconds", nil); d < 0.9 || d > 1.4 {
		t.Errorf("probe_duration_seconds %v, want about 1", d)
	}
	if took > 3*time.Second {
		t.Errorf("the answer took %s: the header did not cap the run", took)
	}
	if code, _, body := probeGet(t, base, "web", origin.URL, probeToken, map[string]string{"X-Prometheus-Scrape-Timeout-Seconds": "soon"}); code != 400 || !strings.Contains(body, "X-Prometheus-Scrape-Timeout-Seconds") {
		t.Errorf("bad header: %d: %s", code, body)
	}
}

func TestProbeBadRequests(t *testing.T) {
	script := CheckConfig{Name: "flow", URL: "http://127.0.0.1:9/", Disabled: true, Timeout: time.Second,
		Script: scripts.Script{{HTTP: &checks.HTTPSpec{Path: "/"}}}}
	_, _, base := probeAgent(t, allowLoopback(), httpModule("web"), httpModule("api"), script)
	for _, tc := range []struct{ name, module, target, want string }{
		{"unknown module", "http_2xx", "http://127.0.0.1:9", `module "http_2xx": no check of that name; known modules: api, web`},
		{"no module", "", "http://127.0.0.1:9", "module: required"},
		{"no target", "web", "", "target: required"},
		{"script", "flow", "http://127.0.0.1:9", "script check"},
		{"target of the wrong kind", "web", "tcp://127.0.0.1:9", "want an http:// or https:// URL"},
		{"bad port", "web", "http://127.0.0.1:99999", "port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := probeGet(t, base, tc.module, tc.target, probeToken, nil)
			if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("status %d, body %q; want 400 with %q", code, body, tc.want)
			}
		})
	}
}

func TestProbeDebug(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	_, _, base := probeAgent(t, allowLoopback(), httpModule("web"))
	req, _ := http.NewRequest("GET", base+"/probe?module=web&debug=true&target="+url.QueryEscape(origin.URL), nil)
	req.Header.Set("Authorization", "Bearer "+probeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"Logs for the probe:", "Target allowed", "rule=127.0.0.0/8", "Probe succeeded",
		"Metrics that would have been returned:", "probe_success 1", "Module configuration:"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("debug answer lacks %q:\n%s", want, b)
		}
	}
}

func TestProbeBusy(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}))
	defer origin.Close()
	pc := allowLoopback()
	pc.MaxConcurrent = 1
	_, _, base := probeAgent(t, pc, httpModule("web"))
	done := make(chan int, 1)
	go func() {
		code, _, _ := probeGet(t, base, "web", origin.URL, probeToken, nil)
		done <- code
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first probe never reached the origin")
	}
	code, _, body := probeGet(t, base, "web", origin.URL, probeToken, nil)
	close(release)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "agent.probe.max_concurrent") {
		t.Errorf("second probe: %d: %s", code, body)
	}
	if code := <-done; code != 200 {
		t.Errorf("first probe: %d", code)
	}
}

func TestProbeHTTPSCertExpiry(t *testing.T) {
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	m := httpModule("tls")
	m.HTTP = &checks.HTTPSpec{TLS: checks.TLSOptions{InsecureSkipVerify: true}}
	_, _, base := probeAgent(t, allowLoopback(), m)
	code, _, body := probeGet(t, base, "tls", origin.URL, probeToken, nil)
	if code != 200 {
		t.Fatalf("%d: %s", code, body)
	}
	mfs := parseProbe(t, body)
	want := float64(origin.Certificate().NotAfter.Unix())
	if v := gaugeOf(t, mfs, "probe_ssl_earliest_cert_expiry", nil); v != want {
		t.Errorf("probe_ssl_earliest_cert_expiry %v, want %v", v, want)
	}
	if v := gaugeOf(t, mfs, "probe_http_ssl", nil); v != 1 {
		t.Errorf("probe_http_ssl %v, want 1", v)
	}
}

func TestProbeConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pc    ProbeConfig
		token string
		want  string
	}{
		{"no allow", ProbeConfig{Enabled: true}, "t", "agent.probe.allow: required when enabled"},
		{"no token", ProbeConfig{Enabled: true, Allow: []string{"10.0.0.0/8"}}, "", "agent.probe.require_token"},
		{"bad cidr", ProbeConfig{Enabled: true, Allow: []string{"10.0.0.0/33"}}, "t", `agent.probe.allow[0]: "10.0.0.0/33": not a CIDR`},
		{"bad glob", ProbeConfig{Enabled: true, Allow: []string{"[a"}}, "t", `agent.probe.allow[0]: "[a"`},
		{"negative limit", ProbeConfig{Enabled: true, Allow: []string{"::1"}, MaxConcurrent: -1}, "t", "agent.probe.max_concurrent: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Agent: AgentConfig{AdminToken: tc.token, Probe: tc.pc}}
			err := cfg.ValidateAndSetDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	// Off, nothing is required.
	cfg := &Config{}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Errorf("no agent.probe: %v", err)
	}
}

// TestProbePinKeepsTLSName: a name is dialled at its pinned address, but
// the certificate is still verified against the name, not the address.
func TestProbePinKeepsTLSName(t *testing.T) {
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	ca := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	m := CheckConfig{Name: "tls_connect", URL: "tls://127.0.0.1:9", Disabled: true, Timeout: 5 * time.Second,
		TLS: &checks.TLSSpec{CAFile: ca}}
	_, _, base := probeAgent(t, allowLoopback(), m)
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())
	// The test certificate names 127.0.0.1, ::1 and example.com.
	code, _, body := probeGet(t, base, "tls_connect", "127.0.0.1:"+port, probeToken, nil)
	if code != 200 || gaugeOf(t, parseProbe(t, body), "probe_success", nil) != 1 {
		t.Fatalf("127.0.0.1: %d\n%s", code, body)
	}
	code, _, body = probeGet(t, base, "tls_connect", "localhost:"+port, probeToken, nil)
	if code != 200 {
		t.Fatalf("localhost: %d\n%s", code, body)
	}
	mfs := parseProbe(t, body)
	if v := gaugeOf(t, mfs, "probe_success", nil); v != 0 {
		t.Fatalf("localhost verified against the certificate of 127.0.0.1: the pinned address replaced the name\n%s", body)
	}
	if v := gaugeOf(t, mfs, "vigil_probe_cause", map[string]string{"cause": "cert"}); v != 1 {
		t.Errorf("want cause cert (the name does not match):\n%s", body)
	}
	if v := gaugeOf(t, mfs, "probe_ssl_earliest_cert_expiry", nil); v != float64(origin.Certificate().NotAfter.Unix()) {
		t.Errorf("probe_ssl_earliest_cert_expiry %v", v)
	}
}

// TestProbeFollowsNoRedirect: a redirect's host would be dialled without
// the allow check, so a probe reports the 3xx even when the module follows
// redirects.
func TestProbeFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	origin := httptest.NewServer(http.RedirectHandler(other.URL+"/landing", http.StatusFound))
	defer origin.Close()
	m := httpModule("follow")
	m.HTTP = &checks.HTTPSpec{FollowRedirects: true}
	m.Expect = &checks.Expect{Status: checks.StatusList{"2xx", "3xx"}}
	_, _, base := probeAgent(t, allowLoopback(), m)
	code, _, body := probeGet(t, base, "follow", origin.URL, probeToken, nil)
	if code != 200 {
		t.Fatalf("%d: %s", code, body)
	}
	if v := gaugeOf(t, parseProbe(t, body), "probe_http_status_code", nil); v != 302 {
		t.Errorf("probe_http_status_code %v, want 302 (not followed)", v)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed (%d requests)", n)
	}
}

// TestProbeDNSModule: blackbox's dns module, the target the server asked
// (a bare host:port reads as dns://), answered over a real UDP socket; a
// server outside the allow list gets no query.
func TestProbeDNSModule(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var queries atomic.Int64
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		queries.Add(1)
		m := new(dns.Msg)
		m.SetReply(q)
		rr, _ := dns.NewRR("www.example.com. 60 IN A 192.0.2.1")
		m.Answer = append(m.Answer, rr)
		_ = w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	defer srv.Shutdown()
	m := CheckConfig{Name: "dns_a", URL: "dns://127.0.0.1:9", Disabled: true, Timeout: 2 * time.Second,
		DNS: &checks.DNSSpec{QueryName: "www.example.com", QueryType: "A"}}
	_, _, base := probeAgent(t, allowLoopback(), m)
	code, _, body := probeGet(t, base, "dns_a", pc.LocalAddr().String(), probeToken, nil)
	if code != 200 || gaugeOf(t, parseProbe(t, body), "probe_success", nil) != 1 {
		t.Fatalf("%d\n%s", code, body)
	}
	if queries.Load() == 0 {
		t.Fatal("the server got no query")
	}
	_, _, base = probeAgent(t, ProbeConfig{Enabled: true, Allow: []string{"192.0.2.0/24"}}, m)
	before := queries.Load()
	if code, _, body := probeGet(t, base, "dns_a", pc.LocalAddr().String(), probeToken, nil); code != http.StatusForbidden {
		t.Errorf("outside the allow list: %d %s", code, body)
	}
	time.Sleep(50 * time.Millisecond)
	if queries.Load() != before {
		t.Error("a refused server was asked")
	}
}
