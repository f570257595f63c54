package canary

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

const pushToken = "push-token-0123456789"

// pushConfig is a config with the push check "backup" (period 2s, grace
// 1s, judged every 200ms, rise 1, fall 1) and the http check "web",
// whose state lives in dir.
func pushConfig(t *testing.T, dir string, more ...CheckConfig) *Config {
	t.Helper()
	chs := append([]CheckConfig{{Name: "backup", Interval: 200 * time.Millisecond, Rise: 1, Fall: 1,
		Push: &PushSpec{Period: 2 * time.Second, Grace: time.Second, Token: pushToken}},
		{Name: "web", URL: "http://127.0.0.1:1", Interval: time.Hour, HTTP: &checks.HTTPSpec{}}}, more...)
	cfg := testConfig(t, nil, chs...)
	cfg.Agent.DataDir = dir
	return cfg
}

// pushAgent runs a canary of cfg publishing to a real embedded store in
// dir, behind a real listener, until stop (or the test's end).
type pushAgent struct {
	c    *Canary
	st   *store.Store
	srv  *httptest.Server
	stop func()
}

func startPushAgent(t *testing.T, cfg *Config) *pushAgent {
	t.Helper()
	st, err := store.Open(cfg.Agent.DataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, compile(t, cfg), Options{Sink: st, Log: testLog(t), PublishEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	srv := httptest.NewServer(c.Handler(st))
	a := &pushAgent{c: c, st: st, srv: srv}
	var stopped bool
	a.stop = func() {
		if stopped {
			return
		}
		stopped = true
		srv.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("Run did not return")
		}
		st.Close()
	}
	t.Cleanup(a.stop)
	return a
}

// ping sends one ping and returns the status code and body.
func (a *pushAgent) ping(t *testing.T, method, path, auth string) (int, string) {
	t.Helper()
	return do(t, method, a.srv.URL+path, auth, "")
}

// latest is the canary's latest verdict of backup × backup.
func (a *pushAgent) latest() (reporting.Verdict, bool) {
	for _, v := range a.c.Latest() {
		if v.Check == "backup" && v.Target == "backup" {
			return v, true
		}
	}
	return reporting.Verdict{}, false
}

// waitVerdict waits (at most 20 s) for a verdict of backup that cond accepts.
func (a *pushAgent) waitVerdict(t *testing.T, what string, cond func(v reporting.Verdict) bool) reporting.Verdict {
	t.Helper()
	var got reporting.Verdict
	waitFor(t, what, func() bool {
		v, ok := a.latest()
		got = v
		return ok && cond(v)
	})
	return got
}

// stored is the store's latest verdict of backup × backup, as the API
// serves it.
func (a *pushAgent) stored(t *testing.T) reporting.Verdict {
	t.Helper()
	code, body := do(t, "GET", a.srv.URL+"/api/v1/verdicts", "", "")
	if code != 200 {
		t.Fatalf("verdicts: %d %s", code, body)
	}
	var vs []reporting.Verdict
	if err := json.Unmarshal([]byte(body), &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Check == "backup" {
			return v
		}
	}
	return reporting.Verdict{}
}

const bearer = "Bearer " + pushToken

func TestPushPingHealthyThenMissing(t *testing.T) {
	a := startPushAgent(t, pushConfig(t, t.TempDir()))
	// A new check is not unhealthy at once: its deadline counts from its
	// start.
	v := a.waitVerdict(t, "first judgement", func(v reporting.Verdict) bool { return true })
	if !v.OK || v.State != reporting.StateHealthy {
		t.Fatalf("new push check: %+v, want healthy", v)
	}
	// Pings every 500 ms for 4 s (twice period + grace): healthy throughout.
	var lastPing time.Time
	for i := 0; i < 8; i++ {
		lastPing = time.Now()
		code, body := a.ping(t, "POST", "/api/v1/push/backup", bearer)
		if code != 200 {
			t.Fatalf("ping: %d %s", code, body)
		}
		var ans struct {
			Check        string    `json:"check"`
			Status       string    `json:"status"`
			NextDeadline time.Time `json:"next_deadline"`
		}
		if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Check != "backup" || ans.Status != "ok" {
			t.Fatalf("ping answer %q: %v", body, err)
		}
		if d := time.Until(ans.NextDeadline); d < 2*time.Second || d > 3*time.Second+time.Second/2 {
			t.Fatalf("next_deadline %s is %s away, want period + grace = 3s", ans.NextDeadline, d)
		}
		time.Sleep(500 * time.Millisecond)
		if v, _ := a.latest(); v.State != reporting.StateHealthy {
			t.Fatalf("pinged check went %s: %s", v.State, v.Err)
		}
	}
	v = a.waitVerdict(t, "push_missing", func(v reporting.Verdict) bool { return v.State == reporting.StateUnhealthy })
	if v.Cause != string(checks.CausePushMissing) || !strings.Contains(v.Err, "no push since ") || !strings.Contains(v.Err, "(period 2s, grace 1s)") {
		t.Fatalf("missing pings: cause %q err %q", v.Cause, v.Err)
	}
	if late := v.At.Sub(lastPing); late < 3*time.Second-100*time.Millisecond || late > 6*time.Second {
		t.Fatalf("unhealthy %s after the last ping, want just after period + grace (3s)", late)
	}
	waitFor(t, "the stored verdict", func() bool { return a.stored(t).Cause == string(checks.CausePushMissing) })
	if s := a.stored(t); s.State != reporting.StateUnhealthy || s.Target != "backup" {
		t.Fatalf("stored verdict %+v", s)
	}
	// A ping brings it back.
	if code, body := a.ping(t, "GET", "/api/v1/push/backup", bearer); code != 200 {
		t.Fatalf("GET ping: %d %s", code, body)
	}
	a.waitVerdict(t, "healthy after a ping", func(v reporting.Verdict) bool { return v.State == reporting.StateHealthy })
}

func TestPushStatusFail(t *testing.T) {
	a := startPushAgent(t, pushConfig(t, t.TempDir()))
	msg := url.QueryEscape("dump failed:\n\x1b[31mdisk full\x07")
	if code, body := a.ping(t, "POST", "/api/v1/push/backup?status=fail&msg="+msg, bearer); code != 200 || !strings.Contains(body, `"status":"fail"`) {
		t.Fatalf("fail ping: %d %s", code, body)
	}
	v := a.waitVerdict(t, "push_failed", func(v reporting.Verdict) bool { return v.State == reporting.StateUnhealthy })
	if v.Cause != string(checks.CausePushFailed) || !strings.HasSuffix(v.Err, ": dump failed: [31mdisk full") ||
		!strings.HasPrefix(v.Err, "the job reported failure at ") {
		t.Fatalf("fail ping: cause %q err %q", v.Cause, v.Err)
	}
	// It stays failed, whatever the deadline, until a successful ping.
	time.Sleep(600 * time.Millisecond)
	if v, _ := a.latest(); v.Cause != string(checks.CausePushFailed) {
		t.Fatalf("after a fail ping: cause %q", v.Cause)
	}
	if code, _ := a.ping(t, "GET", "/api/v1/push/backup", bearer); code != 200 {
		t.Fatal(code)
	}
	a.waitVerdict(t, "healthy after an ok ping", func(v reporting.Verdict) bool { return v.State == reporting.StateHealthy })
	// The /fail suffix, with a form body.
	code, body := do(t, "POST", a.srv.URL+"/api/v1/push/backup/fail", bearer, "")
	if code != 200 {
		t.Fatalf("/fail: %d %s", code, body)
	}
	v = a.waitVerdict(t, "push_failed via /fail", func(v reporting.Verdict) bool { return v.State == reporting.StateUnhealthy })
	if v.Cause != string(checks.CausePushFailed) {
		t.Fatalf("/fail: cause %q", v.Cause)
	}
}

func TestPushEndpointRefusals(t *testing.T) {
	a := startPushAgent(t, pushConfig(t, t.TempDir()))
	for _, tc := range []struct {
		name, method, path, auth string
		code                     int
		want                     string
	}{
		{"no token", "POST", "/api/v1/push/backup", "", 401, "bearer token"},
		{"wrong token", "GET", "/api/v1/push/backup", "Bearer nope", 401, "bearer token"},
		{"token prefix", "GET", "/api/v1/push/backup", "Bearer push-token", 401, "bearer token"},
		{"token in query only", "GET", "/api/v1/push/backup?token=" + pushToken, "", 401, "bearer token"},
		{"token in query", "GET", "/api/v1/push/backup?token=x", bearer, 400, "not taken from the query string"},
		{"unknown check", "POST", "/api/v1/push/nope", bearer, 404, `no check named \"nope\"`},
		{"not a push check", "POST", "/api/v1/push/web", bearer, 404, "not a push check"},
		{"bad status", "POST", "/api/v1/push/backup?status=maybe", bearer, 400, "want ok or fail"},
		{"unknown parameter", "POST", "/api/v1/push/backup?stauts=fail", bearer, 400, "unknown parameter"},
		{"contradiction", "POST", "/api/v1/push/backup/fail?status=ok", bearer, 400, "contradicts"},
		{"other method", "PUT", "/api/v1/push/backup", bearer, 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := a.ping(t, tc.method, tc.path, tc.auth)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s, want %d with %q", code, body, tc.code, tc.want)
			}
			if strings.Contains(body, pushToken) {
				t.Fatal("answer shows the token")
			}
		})
	}
	// A cross-origin browser POST is refused whatever it carries.
	req, _ := http.NewRequest("POST", a.srv.URL+"/api/v1/push/backup", nil)
	req.Header.Set("Authorization", bearer)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST: %d, want 403", resp.StatusCode)
	}
	// No refused ping counted as one: the check never got a ping.
	if st, _ := a.c.push.get("backup"); !st.LastPing.IsZero() {
		t.Fatalf("a refused ping was recorded: %+v", st)
	}
	// HEAD, as `curl -I`, is a ping.
	if code, _ := a.ping(t, "HEAD", "/api/v1/push/backup", bearer); code != 200 {
		t.Fatalf("HEAD: %d", code)
	}
	a.waitVerdict(t, "a judgement", func(reporting.Verdict) bool { return true })
	_, metrics := do(t, "GET", a.srv.URL+"/metrics", "", "")
	for _, want := range []string{
		`vigil_push_received_total{check="backup",status="unauthorized"} 4`,
		`vigil_push_received_total{check="backup",status="bad_request"} 4`,
		`vigil_push_received_total{check="backup",status="ok"} 1`,
		`vigil_push_received_total{check="backup",status="fail"} 0`,
		`vigil_push_received_total{check="",status="not_found"} 2`,
		`vigil_push_last_success_timestamp_seconds{check="backup"}`,
		`probe_success{check="backup",region="test-region",target="backup",tier="synthetic"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestPushSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	a := startPushAgent(t, pushConfig(t, dir))
	if code, body := a.ping(t, "POST", "/api/v1/push/backup", bearer); code != 200 {
		t.Fatalf("ping: %d %s", code, body)
	}
	pinged, _ := a.c.push.get("backup")
	a.stop()
	fi, err := os.Stat(filepath.Join(dir, PushStateFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %04o, want 0600", PushStateFile, fi.Mode().Perm())
	}
	b := startPushAgent(t, pushConfig(t, dir))
	v := b.waitVerdict(t, "push_missing after the restart", func(v reporting.Verdict) bool { return v.State == reporting.StateUnhealthy })
	want := "no push since " + pinged.LastOK.UTC().Format(time.RFC3339) + " (period 2s, grace 1s)"
	if v.Err != want {
		t.Fatalf("after a restart: %q, want %q (the ping before it)", v.Err, want)
	}
}

func TestPushReloadKeepsAndDropsState(t *testing.T) {
	dir := t.TempDir()
	other := CheckConfig{Name: "nightly", Interval: time.Hour, Push: &PushSpec{Period: 24 * time.Hour, Token: pushToken}}
	a := startPushAgent(t, pushConfig(t, dir, other))
	for _, p := range []string{"/api/v1/push/backup", "/api/v1/push/nightly"} {
		if code, body := a.ping(t, "POST", p, bearer); code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	before, _ := a.c.push.get("backup")
	// nightly removed, backup unchanged.
	cfg := pushConfig(t, dir)
	a.c.Reload(cfg, compile(t, cfg))
	if after, ok := a.c.push.get("backup"); !ok || !after.LastOK.Equal(before.LastOK) {
		t.Fatalf("reload lost backup's ping: %+v → %+v", before, after)
	}
	if _, ok := a.c.push.get("nightly"); ok {
		t.Fatal("a removed push check kept its state")
	}
	raw, err := os.ReadFile(filepath.Join(dir, PushStateFile))
	if err != nil || strings.Contains(string(raw), "nightly") || !strings.Contains(string(raw), "backup") {
		t.Fatalf("state file after the reload: %s %v", raw, err)
	}
	if code, _ := a.ping(t, "POST", "/api/v1/push/nightly", bearer); code != 404 {
		t.Fatalf("removed check: %d, want 404", code)
	}
}

func TestPushRegion(t *testing.T) {
	cfg := pushConfig(t, t.TempDir())
	cfg.Checks[0].Push.Region = "elsewhere"
	a := startPushAgent(t, cfg)
	code, body := a.ping(t, "POST", "/api/v1/push/backup", bearer)
	if code != 404 || !strings.Contains(body, `judged in region \"elsewhere\"`) {
		t.Fatalf("ping to another region's push check: %d %s", code, body)
	}
	time.Sleep(300 * time.Millisecond)
	if _, ok := a.latest(); ok {
		t.Fatal("an agent of another region judged the push check")
	}
	if got := cfg.PairNames()["backup"]; len(got) != 1 || got[0] != "backup" {
		t.Fatalf("PairNames: %v", got)
	}
}

func TestPushConfigErrors(t *testing.T) {
	spec := func() *PushSpec { return &PushSpec{Period: time.Hour} }
	for _, tc := range []struct {
		name  string
		ch    CheckConfig
		token string
		want  string
	}{
		{"targets", CheckConfig{Targets: []string{"o1"}, Push: spec()}, "t", "checks[0].targets: a push check does not use it"},
		{"url", CheckConfig{URL: "http://127.0.0.1:1", Push: spec()}, "t", "checks[0].url: a push check does not use it"},
		{"http", CheckConfig{HTTP: &checks.HTTPSpec{}, Push: spec()}, "t", "checks[0].http: a push check does not use it"},
		{"expect", CheckConfig{Expect: &checks.Expect{Status: checks.StatusList{"200"}}, Push: spec()}, "t", "checks[0].expect: a push check does not use it"},
		{"timeout", CheckConfig{Timeout: time.Second, Push: spec()}, "t", "checks[0].timeout: a push check does not use it"},
		{"cron", CheckConfig{Cron: "@hourly", Push: spec()}, "t", "checks[0].cron: a push check does not use it"},
		{"no period", CheckConfig{Push: &PushSpec{}}, "t", "checks[0].push.period: required"},
		{"short period", CheckConfig{Push: &PushSpec{Period: time.Millisecond}}, "t", "checks[0].push.period: 1ms: must be at least 1s"},
		{"negative grace", CheckConfig{Push: &PushSpec{Period: time.Hour, Grace: -time.Second}}, "t", "checks[0].push.grace: -1s"},
		{"interval above period", CheckConfig{Interval: 2 * time.Hour, Push: spec()}, "t", "checks[0].interval: 2h > push.period 1h"},
		{"no token", CheckConfig{Push: spec()}, "", "checks[0].push.token: required"},
		{"negative max_runtime", CheckConfig{Push: &PushSpec{Period: time.Hour, MaxRuntime: -time.Second}}, "t", "checks[0].push.max_runtime: -1s: must be at least 1s"},
		{"short max_runtime", CheckConfig{Push: &PushSpec{Period: time.Hour, MaxRuntime: time.Millisecond}}, "t", "checks[0].push.max_runtime: 1ms: must be at least 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ch.Name = "job"
			cfg := &Config{Agent: AgentConfig{AdminToken: tc.token}, Checks: []CheckConfig{tc.ch},
				Targets: []TargetConfig{{Name: "o1", URL: "http://127.0.0.1:1"}}}
			err := cfg.ValidateAndSetDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(tc.want, "does not use it") && !errors.Is(err, ErrPushKey) {
				t.Fatalf("%v: not ErrPushKey", err)
			}
		})
	}
	// Defaults: grace 10% of the period, at least 1m; interval period ÷ 10,
	// 1s to 1m, and expire_after 3 × that, whatever defaults say.
	cfg := &Config{Agent: AgentConfig{AdminToken: "t"}, Defaults: Defaults{Interval: 5 * time.Second, ExpireAfter: 15 * time.Second}, Checks: []CheckConfig{
		{Name: "daily", Push: &PushSpec{Period: 24 * time.Hour}},
		{Name: "often", Push: &PushSpec{Period: 5 * time.Second}},
	}}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	d, o := cfg.Checks[0], cfg.Checks[1]
	if d.Push.Grace != 144*time.Minute || d.Interval != time.Minute || d.ExpireAfter != 3*time.Minute || d.Tier != reporting.TierSynthetic || d.Kind() != "push" {
		t.Fatalf("daily: grace %s interval %s expire_after %s tier %s", d.Push.Grace, d.Interval, d.ExpireAfter, d.Tier)
	}
	if o.Push.Grace != time.Minute || o.Interval != time.Second {
		t.Fatalf("often: grace %s interval %s", o.Push.Grace, o.Interval)
	}
}

func TestProbePushModule(t *testing.T) {
	push := CheckConfig{Name: "backup", Disabled: true, Push: &PushSpec{Period: time.Hour}}
	_, _, base := probeAgent(t, allowLoopback(), httpModule("web"), push)
	code, _, body := probeGet(t, base, "backup", "http://127.0.0.1:9", probeToken, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "a push check is judged by a running agent") ||
		!strings.Contains(body, "known modules: web") {
		t.Fatalf("push module: %d %q", code, body)
	}
}

// A ping's message is bounded, valid UTF-8 and on one line whatever the
// job sends.
func FuzzPushMessage(f *testing.F) {
	for _, s := range []string{"", "ok", "dump failed:\n\x1b[31mdisk full\x07", strings.Repeat("é", 400), "\xff\xfe", "a\u2028b\u0085c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := pushMessage(s)
		if len(m) > MaxPushMessage || !utf8.ValidString(m) {
			t.Fatalf("%q → %q: %d bytes", s, m, len(m))
		}
		for _, r := range m {
			if r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029' {
				t.Fatalf("%q → %q: control character %U", s, m, r)
			}
		}
	})
}
