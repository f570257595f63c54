package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

func verdict(target, check, region string, state reporting.State, at time.Time) reporting.Verdict {
	return reporting.Verdict{Check: check, Target: target, Tier: reporting.TierShallow, Region: region,
		State: state, At: at, Expires: at.Add(5 * time.Minute), Cause: "status"}
}

func TestPassiveConsecutive5xx(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive.Consecutive5xx = 3
	h := start(t, cfg, nil, false)
	for i := 0; i < 20; i++ {
		if code, _, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("request %d: %d; GETs should fail over", i, code)
		}
	}
	o := h.origin("web", "o0")
	if !o.has(flagPassive) {
		t.Fatal("origin answering 503 was not ejected")
	}
	if n := bad.hits.Load(); n != 3 {
		t.Fatalf("bad origin saw %d requests, want exactly 3 before ejection", n)
	}
	if v, _ := h.metric("vigil_proxy_ejections_total", map[string]string{"origin": "o0", "reason": ReasonConsecutive5xx}); v != 1 {
		t.Fatalf("ejections_total = %v", v)
	}
	if v, _ := h.metric("vigil_proxy_origin_available", map[string]string{"origin": "o0"}); v != 0 {
		t.Fatalf("origin_available = %v", v)
	}
	st := h.p.Origins()[0]
	if !st.PassiveEjected || st.Why["passive"] != ReasonConsecutive5xx || st.Ejections != 1 || st.EjectedUntil == nil {
		t.Fatalf("status %+v", st)
	}
}

func TestPassiveEjectionEndsAndGrows(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 2, Ejection: time.Minute, MaxEjection: 3 * time.Minute, ReturnProbe: ReturnProbeOff}
	h := start(t, cfg, nil, false)
	pl, o := h.pool("web"), h.origin("web", "o0")
	now := time.Now()
	for round, want := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 3 * time.Minute} {
		pl.observe(o, true, time.Millisecond, now.UnixNano())
		pl.observe(o, true, time.Millisecond, now.UnixNano())
		if !o.has(flagPassive) {
			t.Fatalf("round %d: not ejected", round)
		}
		if got := o.ejectUntil.Sub(now); got < want-time.Second || got > want {
			t.Fatalf("round %d: ejected for %v, want %v (base × count, capped)", round, got, want)
		}
		pl.evaluate(now.Add(want - time.Second))
		if !o.has(flagPassive) {
			t.Fatalf("round %d: returned early", round)
		}
		now = now.Add(want)
		pl.evaluate(now)
		if !o.Available() {
			t.Fatalf("round %d: did not return after its ejection", round)
		}
	}
	// Healthy for a while: the count decays one step per ejection period.
	before := o.ejections
	pl.evaluate(now.Add(time.Minute))
	pl.evaluate(now.Add(2 * time.Minute))
	if o.ejections != before-2 {
		t.Fatalf("ejections %d → %d, want decay by 2", before, o.ejections)
	}
}

func TestPassiveWindowRules(t *testing.T) {
	tests := []struct {
		name   string
		cfg    PassiveConfig
		feed   func(pl *pool, now int64) // observations
		reason string
	}{
		{
			name: "failure_rate",
			cfg:  PassiveConfig{Consecutive5xx: -1, SuccessRateStdev: -1, FailureRate: 30, MinRequests: 20},
			feed: func(pl *pool, now int64) {
				for i := 0; i < 40; i++ { // 40% failures on o0, spread so none is consecutive enough
					pl.observe(pl.origins[0], i%5 < 2, time.Millisecond, now)
					pl.observe(pl.origins[1], false, time.Millisecond, now)
					pl.observe(pl.origins[2], false, time.Millisecond, now)
				}
			},
			reason: ReasonFailureRate,
		},
		{
			name: "success_rate outlier",
			cfg:  PassiveConfig{Consecutive5xx: -1, MinRequests: 20},
			feed: func(pl *pool, now int64) {
				for i := 0; i < 100; i++ { // 80% vs 100%, 100%, 99%, at success_rate_min_requests
					pl.observe(pl.origins[0], i%5 == 0, time.Millisecond, now)
					pl.observe(pl.origins[1], false, time.Millisecond, now)
					pl.observe(pl.origins[2], i == 0, time.Millisecond, now)
					pl.observe(pl.origins[3], false, time.Millisecond, now)
				}
			},
			reason: ReasonSuccessRate,
		},
		{
			name: "latency_p95",
			cfg:  PassiveConfig{Consecutive5xx: -1, SuccessRateStdev: -1, MinRequests: 20, LatencyP95: 200 * time.Millisecond},
			feed: func(pl *pool, now int64) {
				for i := 0; i < 40; i++ {
					lat := 10 * time.Millisecond
					if i%10 == 0 {
						lat = time.Second // 10% slow: p95 is slow
					}
					pl.observe(pl.origins[0], false, lat, now)
					pl.observe(pl.origins[1], false, 10*time.Millisecond, now)
				}
			},
			reason: ReasonLatencyP95,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3", "http://127.0.0.1:4")
			cfg.Pools[0].Passive = tt.cfg
			h := start(t, cfg, nil, false)
			pl := h.pool("web")
			now := time.Now()
			tt.feed(pl, now.UnixNano())
			pl.evaluate(now)
			for i, o := range pl.origins {
				if want := i == 0; o.has(flagPassive) != want {
					t.Fatalf("origin %d ejected=%v, want %v (%v)", i, !want, want, h.p.Origins())
				}
			}
			if got := h.p.Origins()[0].Why["passive"]; got != tt.reason {
				t.Fatalf("reason %q, want %q", got, tt.reason)
			}
		})
	}
}

func TestPassiveMinRequests(t *testing.T) {
	cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1", "http://127.0.0.1:2")
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: -1, FailureRate: 10, MinRequests: 50}
	h := start(t, cfg, nil, false)
	pl := h.pool("web")
	now := time.Now()
	for i := 0; i < 49; i++ {
		pl.observe(pl.origins[0], true, time.Millisecond, now.UnixNano())
	}
	pl.evaluate(now)
	if !pl.origins[0].Available() {
		t.Fatal("ejected below min_requests")
	}
	// Old observations leave the window. 45s is 15 buckets of 3s later: the
	// new observation lands in another bucket of the ring than the old ones
	// (31s would reuse their bucket two times in three and clear them that
	// way instead).
	later := now.Add(45 * time.Second)
	pl.evaluate(later)
	pl.observe(pl.origins[0], true, time.Millisecond, later.UnixNano())
	pl.evaluate(later)
	if !pl.origins[0].Available() {
		t.Fatal("observations older than the window still counted")
	}
}

func TestMaxEjected(t *testing.T) {
	bs := []*backend{newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c"), newBackend(t, "d")}
	for _, b := range bs {
		b.mode.Store(mode503)
	}
	cfg := pool1(PolicyRoundRobin, urls(bs...)...)
	cfg.Pools[0].Passive.Consecutive5xx = 1
	src := &memSource{}
	h := start(t, cfg, src, false)
	for i := 0; i < 40; i++ {
		h.do("GET", "/", "")
	}
	count := func() int {
		n := 0
		for _, o := range h.pool("web").origins {
			if !o.Available() {
				n++
			}
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("%d of 4 origins out, want 2 (max_ejected 50%%)", n)
	}
	// Verdicts share the cap with the passive detector.
	now := time.Now()
	var vs []reporting.Verdict
	for _, o := range []string{"o0", "o1", "o2", "o3"} {
		vs = append(vs, verdict(o, "healthz", "eu", reporting.StateUnhealthy, now))
	}
	h.pool("web").applyVerdicts(vs, now)
	if n := count(); n != 2 {
		t.Fatalf("%d of 4 origins out after verdicts, want still 2", n)
	}
	// Each refused verdict ejection is counted, per poll.
	h.pool("web").applyVerdicts(vs, now)
	refused := 0.0
	for _, o := range []string{"o0", "o1", "o2", "o3"} {
		v, _ := h.metric("vigil_proxy_ejections_refused_total", map[string]string{"origin": o, "reason": ReasonVerdict})
		refused += v
	}
	if refused != 4 {
		t.Fatalf("ejections_refused_total{reason=verdict} sums to %v over two polls, want 4 (two origins kept in service each time)", refused)
	}
	// Drained origins do not count against the cap.
	h.p.Drain("o0", "x")
	h.p.Drain("o1", "x")
	h.p.Drain("o2", "x")
	h.p.Drain("o3", "x")
	if n := count(); n != 4 {
		t.Fatalf("%d out, want 4 (drain is not capped)", n)
	}
}

func TestVerdictQuorumAndStaleness(t *testing.T) {
	now := time.Now()
	old := now.Add(-2 * time.Minute)
	tests := []struct {
		name     string
		verdicts []reporting.Verdict
		down     bool
	}{
		{"one region of quorum 2", []reporting.Verdict{verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now)}, false},
		{"two regions", []reporting.Verdict{
			verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
			verdict("o0", "asset", "us", reporting.StateUnhealthy, now)}, true},
		{"two checks one region", []reporting.Verdict{
			verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
			verdict("o0", "asset", "eu", reporting.StateUnhealthy, now)}, false},
		{"degraded does not eject", []reporting.Verdict{
			verdict("o0", "healthz", "eu", reporting.StateDegraded, now),
			verdict("o0", "healthz", "us", reporting.StateDegraded, now)}, false},
		{"stale by max_age", []reporting.Verdict{
			verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
			verdict("o0", "healthz", "us", reporting.StateUnhealthy, old)}, false},
		{"expired", []reporting.Verdict{
			verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
			func() reporting.Verdict {
				v := verdict("o0", "healthz", "us", reporting.StateUnhealthy, now)
				v.Expires = now.Add(-time.Second)
				return v
			}()}, false},
		{"check not counted", []reporting.Verdict{
			verdict("o0", "login", "eu", reporting.StateUnhealthy, now),
			verdict("o0", "login", "us", reporting.StateUnhealthy, now)}, false},
		{"tier counted", []reporting.Verdict{
			func() reporting.Verdict {
				v := verdict("o0", "login", "eu", reporting.StateUnhealthy, now)
				v.Tier = reporting.TierDeep
				return v
			}(),
			func() reporting.Verdict {
				v := verdict("o0", "login", "us", reporting.StateUnhealthy, now)
				v.Tier = reporting.TierDeep
				return v
			}()}, true},
		{"other target", []reporting.Verdict{
			verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now),
			verdict("o1", "healthz", "us", reporting.StateUnhealthy, now)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3")
			cfg.Pools[0].Verdicts = VerdictConfig{Checks: []string{"healthz", "asset"}, Tiers: []string{reporting.TierDeep}, Quorum: 2, MaxAge: time.Minute}
			h := start(t, cfg, nil, false)
			pl := h.pool("web")
			pl.applyVerdicts(tt.verdicts, now)
			if got := pl.origins[0].has(flagVerdict); got != tt.down {
				t.Fatalf("verdict-down %v, want %v", got, tt.down)
			}
			// Clearing: with no verdicts the origin returns.
			pl.applyVerdicts(nil, now)
			if !pl.origins[0].Available() {
				t.Fatal("origin did not return when verdicts cleared")
			}
		})
	}
}

func TestVerdictPollerOverHTTP(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var vs []reporting.Verdict
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/verdicts" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(vs)
	}))
	defer canary.Close()
	vs = []reporting.Verdict{verdict("o0", "healthz", "eu", reporting.StateUnhealthy, time.Now())}
	src := HTTPSource(canary.URL, nil)
	got, err := src.Verdicts(context.Background(), time.Minute)
	if err != nil || len(got) != 1 || got[0].Target != "o0" || got[0].State != reporting.StateUnhealthy {
		t.Fatalf("HTTPSource: %v %v", got, err)
	}
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	h := start(t, cfg, src, true)
	eventually(t, "origin o0 verdict-down", func() bool { return h.origin("web", "o0").has(flagVerdict) })
	for i := 0; i < 10; i++ {
		if _, body, _ := h.do("GET", "/", ""); body != "ok b" {
			t.Fatalf("traffic went to %q, want only the healthy origin", body)
		}
	}
}

func TestDrainAdminAPI(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	for _, token := range []string{"", "t0ken"} {
		cfg := pool1(PolicyRoundRobin, urls(a, b)...)
		cfg.AdminToken = token
		h := start(t, cfg, nil, false)
		admin := httptest.NewServer(h.p.AdminHandler())
		var lastBody string
		var lastHeader http.Header
		post := func(path, auth string) int {
			req, _ := http.NewRequest("POST", admin.URL+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lastBody, lastHeader = string(b), resp.Header
			return resp.StatusCode
		}
		if token == "" {
			// No token configured: 403 whatever the request carries.
			for _, auth := range []string{"", "Bearer anything", "Bearer "} {
				if code := post("/api/v1/origins/o0/drain", auth); code != http.StatusForbidden || !strings.Contains(lastBody, "admin writes are disabled: set agent.admin_token") {
					t.Fatalf("no token configured, auth %q: got %d %s, want 403 admin writes are disabled", auth, code, lastBody)
				}
			}
		} else {
			for _, auth := range []string{"", "Bearer wrong", "t0ken", "Basic t0ken", "Bearer t0ken2"} {
				if code := post("/api/v1/origins/o0/drain", auth); code != http.StatusUnauthorized || lastHeader.Get("WWW-Authenticate") == "" {
					t.Fatalf("auth %q: got %d (WWW-Authenticate %q), want 401 with a challenge", auth, code, lastHeader.Get("WWW-Authenticate"))
				}
			}
			// The scheme is case-insensitive, as on /api/v1/trigger.
			if code := post("/api/v1/origins/o0/undrain", "bearer t0ken"); code != http.StatusOK {
				t.Fatalf("lower-case scheme: %d %s", code, lastBody)
			}
			if code := post("/api/v1/origins/nope/drain", "Bearer t0ken"); code != http.StatusNotFound {
				t.Fatalf("unknown origin: %d", code)
			}
			if code := post("/api/v1/origins/o0/drain", "Bearer t0ken"); code != http.StatusOK {
				t.Fatalf("drain with token: %d", code)
			}
			before := a.hits.Load()
			for i := 0; i < 10; i++ {
				h.do("GET", "/", "")
			}
			if a.hits.Load() != before {
				t.Fatal("drained origin still got traffic")
			}
			resp, err := http.Get(admin.URL + "/api/v1/origins")
			if err != nil {
				t.Fatal(err)
			}
			var st []OriginStatus
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if len(st) != 2 || !st[0].Drained || st[0].Available || st[0].Why["drained"] == "" || st[1].Drained {
				t.Fatalf("origins: %+v", st)
			}
			if code := post("/api/v1/origins/o0/undrain", "Bearer t0ken"); code != http.StatusOK || !h.origin("web", "o0").Available() {
				t.Fatalf("undrain: %d", code)
			}
		}
		if !h.origin("web", "o0").Available() {
			t.Fatal("origin left drained")
		}
		admin.Close()
	}
}

func TestReloadKeepsOriginState(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	h := start(t, cfg, nil, false)
	h.p.Drain("o1", "maintenance")
	cfg2 := pool1(PolicyRoundRobin, urls(a, b, c)...)
	if err := h.p.Reload(cfg2); err != nil {
		t.Fatal(err)
	}
	if h.origin("web", "o1").Available() {
		t.Fatal("drain lost on reload")
	}
	for i := 0; i < 10; i++ {
		h.do("GET", "/", "")
	}
	if b.hits.Load() != 0 || c.hits.Load() == 0 {
		t.Fatalf("after reload: b=%d c=%d", b.hits.Load(), c.hits.Load())
	}
	bad := cfg2
	bad.Pools = nil
	if err := h.p.Reload(bad); err == nil {
		t.Fatal("invalid reload accepted")
	}
}

func TestSignalsPublished(t *testing.T) {
	a, bad := newBackend(t, "a"), newBackend(t, "bad")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(a, bad)...)
	cfg.SignalWindow = 50 * time.Millisecond
	cfg.Region, cfg.Vantage = "eu-west", "proxy-1"
	cfg.Pools[0].Passive.Consecutive5xx = -1
	h := start(t, cfg, nil, true)
	for i := 0; i < 10; i++ {
		h.do("GET", "/", "")
	}
	var total, fivexx int
	eventually(t, "signals with the 10 requests", func() bool {
		total, fivexx = 0, 0
		for _, s := range h.signals.all() {
			if s.Pool != "web" || s.Region != "eu-west" || s.Vantage != "proxy-1" {
				t.Fatalf("signal %+v", s)
			}
			total += s.Requests
			fivexx += s.Status5xx
		}
		return total >= 15 // 10 requests, 5 of which retried after a 503
	})
	if fivexx != 5 {
		t.Fatalf("5xx in signals = %d, want 5", fivexx)
	}
}

func TestRunServesAndStops(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	p, err := New(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	eventually(t, "listening", func() bool { return len(p.Addrs()) == 1 })
	resp, err := http.Get("http://" + p.Addrs()[0].String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestReloadSameConfigWhileServing(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	h := start(t, cfg, nil, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			h.do("GET", "/", "")
		}
	}()
	for i := 0; i < 20; i++ {
		if err := h.p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if a.hits.Load()+b.hits.Load() != 50 {
		t.Fatalf("hits %d+%d, want 50", a.hits.Load(), b.hits.Load())
	}
}

// A reload that changes a key applied only at start says so, naming it.
func TestReloadWarnsAboutRestartOnlyKeys(t *testing.T) {
	a := newBackend(t, "a")
	var logs checktest.SyncBuffer
	cfg := pool1(PolicyFirst, a.srv.URL)
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(&logs, nil)), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "take effect on restart") {
		t.Fatalf("an unchanged reload warned: %s", logs.String())
	}
	cfg.Listen = "127.0.0.1:1"
	cfg.MaxHeaderBytes = 1 << 10
	cfg.Pools[0].Retry.Tries = 1 // applied by the reload: not named
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "take effect on restart") ||
		!strings.Contains(out, "proxy.listen, proxy.max_header_bytes") {
		t.Fatalf("log after changing listen and max_header_bytes:\n%s", out)
	}
}

// Requests the proxy refuses before choosing a pool are counted by code,
// whether the engine (a malformed head) or the router (CONNECT, a bad Host)
// refused them.
func TestRefusedRequestsCounted(t *testing.T) {
	a := newBackend(t, "a")
	reg := prometheus.NewRegistry()
	p, err := New(pool1(PolicyFirst, a.srv.URL), nil, testLogger(t), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	addr := runProxy(t, p)
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: ..x\r\n\r\n",                                             // router: 400
		"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",                   // router: 405
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",     // engine: 400
		"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 70<<10) + "\r\n\r\n", // engine: 431
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, raw)
		io.Copy(io.Discard, c)
		c.Close()
	}
	want := map[string]float64{"400": 2, "405": 1, "431": 1, "421": 0}
	got := map[string]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "vigil_proxy_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	for code, n := range want {
		if v, ok := got[code]; !ok || v != n {
			t.Errorf("vigil_proxy_refused_total{code=%q} = %v (present %v), want %v", code, v, ok, n)
		}
	}
}

// The restart-only warning compares with what the listeners run, not with
// the last reload: a second reload of a changed listen still warns, and a
// reload back to the running value does not.
func TestReloadWarnsAgainstRunningListeners(t *testing.T) {
	a := newBackend(t, "a")
	var logs checktest.SyncBuffer
	cfg := pool1(PolicyFirst, a.srv.URL)
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(&logs, nil)), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	runProxy(t, p)
	warnings := func() int { return strings.Count(logs.String(), "take effect on restart") }
	moved := cfg
	moved.Listen = "127.0.0.1:1"
	for i, tc := range []struct {
		cfg  Config
		want int
	}{{moved, 1}, {moved, 2}, {cfg, 2}} {
		if err := p.Reload(tc.cfg); err != nil {
			t.Fatal(err)
		}
		if got := warnings(); got != tc.want {
			t.Fatalf("after reload %d: %d warnings, want %d\n%s", i+1, got, tc.want, logs.String())
		}
	}
}

// runProxy runs p.Run until the test ends and returns the plain listener's
// address once it listens.
func runProxy(t *testing.T, p *Proxy) string {
	t.Helper()
	return runProxyOn(t, p, 1)[0]
}

// runProxyOn runs p.Run until the test ends and returns the addresses of
// its n listeners (plain first, then TLS) once all of them listen.
func runProxyOn(t *testing.T, p *Proxy, n int) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "listening", func() bool { return len(p.Addrs()) == n })
	var addrs []string
	for _, a := range p.Addrs() {
		addrs = append(addrs, a.String())
	}
	return addrs
}
