package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReturnProbeKeepsBrokenOriginOut: a passively ejected origin whose
// ejection time is up returns only once its return probe passes. While it
// still answers 503, no client request reaches it and a POST (never replayed
// after a 5xx) gets no 503; each failed probe keeps it out for longer, and
// /api/v1/origins, the log and vigil_proxy_return_probes_total say why. Once
// it heals, a probe passes and it takes traffic again. Without the probe it
// returned when its time was up and got a share of the POSTs, which its 503
// reached the client.
func TestReturnProbeKeepsBrokenOriginOut(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 2, Ejection: 150 * time.Millisecond, MaxEjection: 450 * time.Millisecond, Window: time.Second}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	o := h.origin("web", "o0")

	// GETs move on from the 503: the clients see 200 while bad is ejected.
	for i := 0; i < 10 && !o.has(flagPassive); i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("GET: %d %q", code, body)
		}
	}
	if !o.has(flagPassive) {
		t.Fatal("the 503 origin was not ejected")
	}
	hits := bad.hits.Load()

	// 1.5 s of POSTs: about 6 ejection periods at 150, 300, 450, 450 ms.
	var codes []int
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end) && len(codes) < 1000; {
		code, _, _ := h.do("POST", "/", "order=1")
		codes = append(codes, code)
		time.Sleep(5 * time.Millisecond)
	}
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("POST %d of %d got %d: the broken origin was back in rotation", i+1, len(codes), c)
		}
	}
	if n := bad.hits.Load() - hits; n != 0 {
		t.Fatalf("the broken origin got %d client requests after its ejection", n)
	}
	if n := bad.probes.Load(); n < 2 {
		t.Fatalf("%d return probes, want at least 2 in 1.5s", n)
	}
	st := adminOrigins(t, h.p)[0]
	if !st.PassiveEjected || st.Ejections < 3 || !strings.Contains(st.EjectionDetail, "; return probe failed: GET /: status 503 in ") ||
		!strings.HasPrefix(st.EjectionDetail, "2 consecutive failed tries") {
		t.Fatalf("status: passive_ejected %v, ejections %d, ejection_detail %q", st.PassiveEjected, st.Ejections, st.EjectionDetail)
	}
	if strings.Count(st.EjectionDetail, "return probe") != 1 {
		t.Fatalf("ejection_detail repeats the probe: %q", st.EjectionDetail)
	}
	failed := logs.lines("return probe failed; origin stays out", "origin=o0", `probe="GET /: status 503 in `)
	if len(failed) < 2 {
		t.Fatalf("want a log line per failed probe, got %q", failed)
	}
	if !strings.Contains(failed[0], "for=300ms ejections=2") {
		t.Errorf("first failed probe: %q, want the second, longer ejection (for=300ms ejections=2)", failed[0])
	}
	if v, _ := h.metric("vigil_proxy_return_probes_total", map[string]string{"origin": "o0", "result": "fail"}); v < 2 {
		t.Errorf("return_probes_total{result=fail} = %v", v)
	}
	if v, ok := h.metric("vigil_proxy_return_probes_total", map[string]string{"origin": "o0", "result": "pass"}); !ok || v != 0 {
		t.Errorf("return_probes_total{result=pass} = %v (present %v), want 0", v, ok)
	}

	bad.mode.Store(modeOK)
	eventually(t, "the healed origin returning after a passed probe", func() bool { return o.Available() })
	if got := logs.lines("origin returned after ejection", "origin=o0", `probe="GET /: status 200 in `); len(got) != 1 {
		t.Errorf("want one return line naming the probe, got %q", got)
	}
	if v, _ := h.metric("vigil_proxy_return_probes_total", map[string]string{"origin": "o0", "result": "pass"}); v != 1 {
		t.Errorf("return_probes_total{result=pass} = %v, want 1", v)
	}
	for i := 0; i < 4; i++ {
		h.do("GET", "/", "")
	}
	if bad.hits.Load() == hits {
		t.Error("the returned origin got no client request")
	}
}

// TestReturnProbeRequest: the probe is a GET of return_probe (query kept)
// with the pool's first exact host as Host, and a hung origin fails it at
// retry.try_timeout with cause timeout.
func TestReturnProbeRequest(t *testing.T) {
	var mu sync.Mutex
	var got []string
	hang := make(chan struct{})
	o0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != probeUserAgent {
			w.WriteHeader(502)
			return
		}
		mu.Lock()
		got = append(got, r.Method+" "+r.Host+" "+r.URL.RequestURI())
		n := len(got)
		mu.Unlock()
		if n == 1 {
			select {
			case <-r.Context().Done():
			case <-hang:
			}
		}
	}))
	defer o0.Close()
	defer close(hang)
	good := newBackend(t, "good")
	cfg := pool1(PolicyFirst, o0.URL, good.srv.URL)
	pc := &cfg.Pools[0]
	pc.Hosts = []string{"*.example.com", "www.example.com", "api.example.com"}
	pc.Passive = PassiveConfig{Consecutive5xx: 1, Ejection: 100 * time.Millisecond, MaxEjection: time.Second, ReturnProbe: "/healthz?deep=1"}
	pc.Retry = RetryConfig{TryTimeout: 300 * time.Millisecond}
	pc.ConnectTimeout = 200 * time.Millisecond
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	o := h.origin("web", "o0")
	req, _ := http.NewRequest("GET", h.front.URL+"/", nil)
	req.Host = "api.example.com"
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if !o.has(flagPassive) {
		t.Fatal("not ejected")
	}
	eventually(t, "a failed probe, then a passed one", func() bool { return o.Available() })
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "GET www.example.com /healthz?deep=1" || got[1] != got[0] {
		t.Fatalf("probes %q, want two GET www.example.com /healthz?deep=1", got)
	}
	if l := logs.lines("return probe failed", `probe="GET /healthz?deep=1: timeout: no answer within retry.try_timeout 300ms"`); len(l) != 1 {
		t.Fatalf("want the timed-out probe logged with its cause and limit, got %q", logs.lines("return probe"))
	}
}

// TestReturnProbeConfig: return_probe defaults to "/", takes "off", and
// refuses what is not a path, naming the key.
func TestReturnProbeConfig(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "/", ""},
		{"off", "off", ""},
		{"/healthz?full=1", "/healthz?full=1", ""},
		{"healthz", "", `passive.return_probe: "healthz": want a path starting with / (a query is allowed), or "off" for no probe`},
		{"//evil.example/x", "", `passive.return_probe: "//evil.example/x": want a path`},
		{"http://evil.example/", "", `passive.return_probe: "http://evil.example/": want a path`},
		{"/a b", "", `passive.return_probe: "/a b": want a path`},
	} {
		cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1")
		cfg.Pools[0].Passive.ReturnProbe = tc.in
		err := cfg.ValidateAndSetDefaults()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && cfg.Pools[0].Passive.ReturnProbe != tc.want:
			t.Errorf("%q: became %q, want %q", tc.in, cfg.Pools[0].Passive.ReturnProbe, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}
