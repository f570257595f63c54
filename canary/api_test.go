package canary

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

func apiCanary(t *testing.T, token string) (*Canary, *checktest.Origin, *httptest.Server) {
	t.Helper()
	o := checktest.NewOrigin()
	t.Cleanup(o.Close)
	cfg := testConfig(t, map[string]string{"o1": o.URL(), "o2": o.URL()},
		CheckConfig{Name: "home", Targets: []string{"o1", "o2"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	cfg.Agent.AdminToken = token
	c := start(t, cfg, compile(t, cfg), Options{})
	srv := httptest.NewServer(c.Handler(nil))
	t.Cleanup(srv.Close)
	return c, o, srv
}

func do(t *testing.T, method, url, auth, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTriggerAPI(t *testing.T) {
	const token = "s3cret-token"
	_, o, srv := apiCanary(t, token)
	url := srv.URL + "/api/v1/trigger"
	body := `{"check":"home","target":"o1"}`
	// The interval is an hour: the first scheduled runs may still happen
	// within it, so count requests around each refused call.
	for _, tc := range []struct{ name, auth string }{
		{"no header", ""},
		{"wrong token", "Bearer nope"},
		{"token prefix", "Bearer s3cret"},
		{"basic auth", "Basic czNjcmV0LXRva2Vu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := o.Count("GET", "/healthz")
			code, resp := do(t, "POST", url, tc.auth, body)
			if code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", code, resp)
			}
			if strings.Contains(resp, token) {
				t.Fatal("response leaks the token")
			}
			if got := o.Count("GET", "/healthz"); got > n+2 { // at most the two scheduled first runs
				t.Fatalf("refused trigger ran the check (%d → %d)", n, got)
			}
		})
	}
	t.Run("valid token", func(t *testing.T) {
		n := o.Count("GET", "/healthz")
		code, resp := do(t, "POST", url, "Bearer "+token, body)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, resp)
		}
		var v reporting.Verdict
		if err := json.Unmarshal([]byte(resp), &v); err != nil {
			t.Fatal(err)
		}
		if v.Check != "home" || v.Target != "o1" || !v.OK || v.StatusCode != 200 {
			t.Fatalf("verdict %+v", v)
		}
		if got := o.Count("GET", "/healthz"); got <= n {
			t.Fatal("trigger did not run the check")
		}
	})
	t.Run("query parameters", func(t *testing.T) {
		code, resp := do(t, "POST", url+"?check=home&target=o2", "bearer "+token, "")
		if code != http.StatusOK || !strings.Contains(resp, `"target":"o2"`) {
			t.Fatalf("status %d: %s", code, resp)
		}
	})
	t.Run("unknown pair", func(t *testing.T) {
		if code, resp := do(t, "POST", url, "Bearer "+token, `{"check":"home","target":"nope"}`); code != http.StatusNotFound {
			t.Fatalf("status %d: %s", code, resp)
		}
	})
	t.Run("bad body", func(t *testing.T) {
		if code, _ := do(t, "POST", url, "Bearer "+token, `{"check":"home","target":"o1","x":1}`); code != http.StatusBadRequest {
			t.Fatalf("status %d", code)
		}
	})
	t.Run("GET not allowed", func(t *testing.T) {
		if code, _ := do(t, "GET", url, "Bearer "+token, ""); code != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", code)
		}
	})
}

// TestTriggerBodies: what a user's client sends. curl -d '{…}' (the
// README's example) labels the JSON application/x-www-form-urlencoded; a
// real form and query parameters work too; a request naming nothing gets a
// 400 that says what was expected.
func TestTriggerBodies(t *testing.T) {
	const token = "s3cret-token"
	_, _, srv := apiCanary(t, token)
	for _, tc := range []struct {
		name, query, ctype, body string
		code                     int
		want                     string
	}{
		{"curl -d JSON (form content type)", "", "application/x-www-form-urlencoded", `{"check":"home","target":"o1"}`, 200, `"target":"o1"`},
		{"JSON with no content type", "", "", ` {"check":"home","target":"o2"}`, 200, `"target":"o2"`},
		{"JSON as text/plain", "", "text/plain", `{"check":"home","target":"o1"}`, 200, `"target":"o1"`},
		{"form values", "", "application/x-www-form-urlencoded", `check=home&target=o2`, 200, `"target":"o2"`},
		{"form check, query target", "?target=o1", "application/x-www-form-urlencoded", `check=home`, 200, `"target":"o1"`},
		{"nothing", "", "", "", 400, `want a JSON body {\"check\": \"<check>\"`},
		{"nothing says what is missing", "?check=home", "", "", 400, `missing target`},
		{"JSON missing target", "", "application/json", `{"check":"home"}`, 400, `query parameters ?check=`},
		{"unknown JSON field", "", "application/x-www-form-urlencoded", `{"check":"home","target":"o1","x":1}`, 400, `unknown field \"x\"`},
		{"neither JSON nor form", "", "text/plain", `home o1`, 400, `neither a JSON object nor a form`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest("POST", srv.URL+"/api/v1/trigger"+tc.query, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
				t.Fatalf("status %d, body %s; want %d containing %s", resp.StatusCode, b, tc.code, tc.want)
			}
		})
	}
}

// TestTriggerRefusedWithoutConfiguredToken: with agent.admin_token empty the
// trigger is disabled: 403 whatever the request carries (as the proxy's
// drain answers), never 401, which would suggest a token could work.
func TestTriggerRefusedWithoutConfiguredToken(t *testing.T) {
	_, o, srv := apiCanary(t, "")
	n := o.Count("GET", "/healthz")
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		code, resp := do(t, "POST", srv.URL+"/api/v1/trigger?check=home&target=o1", auth, "")
		if code != http.StatusForbidden || !strings.Contains(resp, "admin writes are disabled: set agent.admin_token") {
			t.Fatalf("auth %q: status %d %s, want 403 admin writes are disabled", auth, code, resp)
		}
	}
	if got := o.Count("GET", "/healthz"); got > n+2 {
		t.Fatalf("refused trigger ran the check (%d → %d)", n, got)
	}
}

func TestVerdictsJSON(t *testing.T) {
	c, _, srv := apiCanary(t, "tok")
	triggerAll(t, c)
	code, body := do(t, "GET", srv.URL+"/api/v1/verdicts", "", "")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(raw) != 2 {
		t.Fatalf("%d verdicts: %s", len(raw), body)
	}
	for _, k := range []string{"check", "target", "tier", "region", "vantage", "state", "ok", "cause",
		"status_code", "ttfb_ms", "duration_ms", "dns_ms", "connect_ms", "tls_ms", "transfer_ms",
		"streak", "interval_ms", "at", "expires"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("key %q missing: %s", k, body)
		}
	}
	if raw[0]["state"] != "healthy" || raw[0]["region"] != "test-region" || raw[0]["interval_ms"] != 3.6e6 {
		t.Fatalf("values: %v", raw[0])
	}
	// max_age filters by the run time.
	time.Sleep(20 * time.Millisecond)
	if code, body := do(t, "GET", srv.URL+"/api/v1/verdicts?max_age=10ms", "", ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("max_age=10ms: %d %s", code, body)
	}
	if code, _ := do(t, "GET", srv.URL+"/api/v1/verdicts?max_age=soon", "", ""); code != http.StatusBadRequest {
		t.Fatalf("bad max_age: %d", code)
	}
	// A number without its unit says which units there are.
	if code, body := do(t, "GET", srv.URL+"/api/v1/verdicts?max_age=5", "", ""); code != http.StatusBadRequest || !strings.Contains(body, `\"5\": not a duration (use ms, s, m, h or d)`) {
		t.Fatalf("max_age=5: %d %s", code, body)
	}
	if code, _ := do(t, "GET", srv.URL+"/api/v1/checks/home/history", "", ""); code != http.StatusNotImplemented {
		t.Fatalf("history without a store: %d", code)
	}
}

func TestHealthz(t *testing.T) {
	c, _, srv := apiCanary(t, "")
	if code, body := do(t, "GET", srv.URL+"/healthz", "", ""); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("%d %q", code, body)
	}
	c.SetReloadError(errors.New("checks[1].cron: bad cron schedule"))
	code, body := do(t, "GET", srv.URL+"/healthz", "", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "checks[1].cron") {
		t.Fatalf("%d %q", code, body)
	}
	c.SetReloadError(nil)
	if code, _ := do(t, "GET", srv.URL+"/healthz", "", ""); code != 200 {
		t.Fatalf("after a good reload: %d", code)
	}
}

func TestHealthzSinkDrops(t *testing.T) {
	cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "p", Targets: []string{"x"}, HTTP: &checks.HTTPSpec{}})
	var dropped uint64
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t), Dropped: func() uint64 { return dropped }})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(); err != nil {
		t.Fatal(err)
	}
	dropped = 3
	if err := c.Health(); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("health after drops: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	c, _, srv := apiCanary(t, "")
	triggerAll(t, c)
	code, body := do(t, "GET", srv.URL+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	lbl := `check="home",region="test-region",target="o1",tier="deep"`
	for _, want := range []string{
		`probe_success{` + lbl + `} 1`,
		`probe_duration_seconds{` + lbl + `}`,
		`probe_http_duration_seconds{check="home",phase="processing",region="test-region",target="o1",tier="deep"}`,
		`probe_http_duration_seconds{check="home",phase="resolve",region="test-region",target="o1",tier="deep"}`,
		`probe_http_status_code{` + lbl + `} 200`,
		`probe_http_version{` + lbl + `} 1.1`,
		`vigil_verdict_state{check="home",region="test-region",state="healthy",target="o1",tier="deep"} 1`,
		`vigil_verdict_state{check="home",region="test-region",state="unhealthy",target="o1",tier="deep"} 0`,
		`vigil_checks_total{check="home",region="test-region",result="pass",target="o1"} 1`,
		`vigil_checks_total{check="home",region="test-region",result="fail",target="o1"} 0`,
		`vigil_checks_total{check="home",region="test-region",result="slow",target="o1"} 0`,
		`vigil_skipped_runs_total{check="home",region="test-region",target="o1"} 0`,
		`vigil_schedule_lag_seconds_bucket{le="0.1"}`,
		`vigil_config_last_reload_successful 1`,
		`vigil_canary_pairs 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

// triggerAll runs both pairs now (their interval is an hour).
func triggerAll(t *testing.T, c *Canary) {
	t.Helper()
	for _, tg := range []string{"o1", "o2"} {
		if _, err := c.Trigger("home", tg); err != nil {
			t.Fatal(err)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-01-02T03:04:05Z", "1h", "7d", "1767225600", "", "-1h", "1.5d", "d", "9999999999999999999d"} {
		f.Add(s)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := parseTime(s, now)
		if err == nil && tm.IsZero() && s != "0001-01-01T00:00:00Z" {
			t.Fatalf("%q: zero time without error", s)
		}
		if d, err := parseDur(s); err == nil && d < 0 {
			t.Fatalf("%q: negative duration %s", s, d)
		}
	})
}

func TestMetricsTCPCheck(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": "tcp://" + o.Addr()},
		CheckConfig{Name: "port", Targets: []string{"o1"}, Rise: 1, Interval: time.Hour, TCP: &checks.TCPSpec{}})
	c := start(t, cfg, compile(t, cfg), Options{})
	if v, err := c.Trigger("port", "o1"); err != nil || !v.OK || v.Tier != reporting.TierShallow {
		t.Fatalf("trigger: %+v %v", v, err)
	}
	srv := httptest.NewServer(c.Handler(nil))
	defer srv.Close()
	_, body := do(t, "GET", srv.URL+"/metrics", "", "")
	if !strings.Contains(body, `probe_success{check="port",region="test-region",target="o1",tier="shallow"} 1`) {
		t.Errorf("no probe_success for the tcp check:\n%s", body)
	}
	if strings.Contains(body, `probe_http_duration_seconds{check="port"`) || strings.Contains(body, `probe_http_status_code{check="port"`) {
		t.Errorf("HTTP series for a tcp check:\n%s", body)
	}
}

// TestMetricsSlowRunsAreNotFailures: a run that failed only its TTFB
// objective counts as result="slow" in vigil_checks_total, not "fail", so
// availability rules built on result="fail" do not count it as down.
func TestMetricsSlowRunsAreNotFailures(t *testing.T) {
	o := checktest.NewOrigin()
	t.Cleanup(o.Close)
	if err := o.SetFault("slow:200ms"); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "asset", Targets: []string{"o1"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/asset.bin"}, Expect: &checks.Expect{TTFB: 50 * time.Millisecond}},
		CheckConfig{Name: "down", Targets: []string{"o1"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/asset.bin"}, Expect: &checks.Expect{Status: checks.StatusList{"404"}}})
	c := start(t, cfg, compile(t, cfg), Options{})
	srv := httptest.NewServer(c.Handler(nil))
	t.Cleanup(srv.Close)
	for _, check := range []string{"asset", "down"} {
		if _, err := c.Trigger(check, "o1"); err != nil {
			t.Fatal(err)
		}
	}
	_, body := do(t, "GET", srv.URL+"/metrics", "", "")
	for _, want := range []string{
		`vigil_checks_total{check="asset",region="test-region",result="fail",target="o1"} 0`,
		`vigil_checks_total{check="asset",region="test-region",result="slow",target="o1"} 1`,
		`vigil_checks_total{check="down",region="test-region",result="fail",target="o1"} 1`,
		`vigil_checks_total{check="down",region="test-region",result="slow",target="o1"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}
