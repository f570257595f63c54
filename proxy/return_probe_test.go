package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/grpchealth"
)

// TestReturnProbeKeepsBrokenOriginOut: a passively ejected origin whose
// ejection time is up returns only once its return probe passes. While it
// still answers 503, no client request reaches it and a POST (never replayed
// after a 5xx) gets no 503; it is probed again every return_probe_interval
// without its ejection count growing, and /api/v1/origins, the log (once per
// episode, not once per probe) and vigil_proxy_return_probes_total say why.
// Once it heals, the next probe passes and it takes traffic again. Without
// the probe it returned when its time was up and got a share of the POSTs,
// which its 503 reached the client.
func TestReturnProbeKeepsBrokenOriginOut(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 2, Ejection: 150 * time.Millisecond, MaxEjection: 450 * time.Millisecond,
		Window: time.Second, ReturnProbeInterval: 100 * time.Millisecond}
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

	// 1.5 s of POSTs: the ejection ends after 150 ms, then a probe about
	// every 100 ms (the detector evaluates every 100 ms here).
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
	if n := bad.probes.Load(); n < 4 {
		t.Fatalf("%d return probes in 1.5s, want at least 4 (one every return_probe_interval)", n)
	}
	st := adminOrigins(t, h.p)[0]
	if !st.PassiveEjected || st.Ejections != 1 || !strings.Contains(st.EjectionDetail, "; return probe failed: GET /: status 503 in ") ||
		!strings.HasPrefix(st.EjectionDetail, "2 consecutive failed tries") {
		t.Fatalf("status: passive_ejected %v, ejections %d (failed probes must not add ejections), ejection_detail %q", st.PassiveEjected, st.Ejections, st.EjectionDetail)
	}
	if strings.Count(st.EjectionDetail, "return probe") != 1 {
		t.Fatalf("ejection_detail repeats the probe: %q", st.EjectionDetail)
	}
	failed := logs.lines("return probe failed; origin stays out", "origin=o0", `probe="GET /: status 503 in `)
	if len(failed) != 1 || !strings.Contains(failed[0], "failed_probes=1 next_probe_in=100ms") {
		t.Fatalf("want one log line for the episode's first failed probe (the next ones a minute apart), got %q", failed)
	}
	if v, _ := h.metric("vigil_proxy_return_probes_total", map[string]string{"origin": "o0", "result": "fail"}); v < 4 {
		t.Errorf("return_probes_total{result=fail} = %v", v)
	}
	if v, ok := h.metric("vigil_proxy_return_probes_total", map[string]string{"origin": "o0", "result": "pass"}); !ok || v != 0 {
		t.Errorf("return_probes_total{result=pass} = %v (present %v), want 0", v, ok)
	}

	bad.mode.Store(modeOK)
	eventually(t, "the healed origin returning after a passed probe", func() bool { return o.Available() })
	if got := logs.lines("origin returned after ejection", "origin=o0", `probe="GET /: status 200 in `, "failed_probes="); len(got) != 1 {
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
	pc.Passive = PassiveConfig{Consecutive5xx: 1, Ejection: 100 * time.Millisecond, MaxEjection: time.Second, ReturnProbe: "/healthz?deep=1", ReturnProbeInterval: 100 * time.Millisecond}
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
		{"healthz", "", `passive.return_probe: "healthz": want a path starting with / (a query is allowed), "grpc" (the gRPC health service), or "off" for no probe`},
		{"//evil.example/x", "", `passive.return_probe: "//evil.example/x": want a path`},
		{"http://evil.example/", "", `passive.return_probe: "http://evil.example/": want a path`},
		{"/a b", "", `passive.return_probe: "/a b": want a path`},
		{"/healthz", "/healthz", ""},
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

// TestReturnProbeGRPC: on an origin_protocol http2 pool, return_probe: grpc
// asks grpc.health.v1.Health/Check and takes the origin back only when it
// answers SERVING: a gRPC server answers GET / with 415 even while it fails
// every call, so a path probe would pass. A path probe whose answer carries
// a grpc-status of grpc_failure_statuses fails too.
func TestReturnProbeGRPC(t *testing.T) {
	var serving atomic.Int32 // 0: every call UNAVAILABLE, health NOT_SERVING; 1: fine
	var mu sync.Mutex
	var checks []string
	bad := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		if r.URL.Path == grpchealth.Path {
			mu.Lock()
			checks = append(checks, r.Method+" "+r.Header.Get("Content-Type"))
			mu.Unlock()
			w.Header().Set("Trailer", "Grpc-Status")
			if serving.Load() == 1 {
				w.Write([]byte("\x00\x00\x00\x00\x02\x08\x01")) // SERVING
			} else {
				w.Write([]byte("\x00\x00\x00\x00\x02\x08\x02")) // NOT_SERVING
			}
			w.Header().Set("Grpc-Status", "0")
			return
		}
		if serving.Load() == 1 {
			w.Header().Set("Trailer", "Grpc-Status")
			w.Write([]byte("\x00\x00\x00\x00\x00"))
			w.Header().Set("Grpc-Status", "0")
			return
		}
		w.Header().Set("Grpc-Status", "14")
	})
	good := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.Write([]byte("\x00\x00\x00\x00\x00"))
		w.Header().Set("Grpc-Status", "0")
	})
	cfg := pool1(PolicyFirst, bad, good)
	pc := &cfg.Pools[0]
	pc.OriginProtocol = OriginHTTP2
	pc.Passive = PassiveConfig{Consecutive5xx: 2, Ejection: 100 * time.Millisecond, MaxEjection: time.Second,
		Window: time.Second, ReturnProbe: ReturnProbeGRPC, ReturnProbeInterval: 100 * time.Millisecond}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	o := h.origin("web", "o0")
	pl := h.pool("web")
	for i := 0; i < 2; i++ {
		pl.observeCause(o, CauseGRPCStatus, time.Millisecond, time.Now().UnixNano())
	}
	if !o.has(flagPassive) {
		t.Fatal("not ejected")
	}
	time.Sleep(700 * time.Millisecond)
	if !o.has(flagPassive) {
		t.Fatalf("the NOT_SERVING origin returned: %q", logs.lines("origin returned"))
	}
	if l := logs.lines("return probe failed", `probe="gRPC /grpc.health.v1.Health/Check: NOT_SERVING in `); len(l) != 1 {
		t.Fatalf("want the failed health check logged, got %q", logs.lines("return probe"))
	}
	serving.Store(1)
	eventually(t, "the SERVING origin returning", func() bool { return o.Available() })
	if l := logs.lines("origin returned after ejection", `probe="gRPC /grpc.health.v1.Health/Check: SERVING in `); len(l) != 1 {
		t.Errorf("return line: %q", logs.lines("origin returned"))
	}
	mu.Lock()
	if len(checks) < 2 || checks[0] != "POST application/grpc" {
		t.Errorf("health checks %q, want POSTs with Content-Type application/grpc", checks)
	}
	mu.Unlock()

	// A path probe answered with UNAVAILABLE (trailers-only, HTTP 200) fails.
	serving.Store(0)
	cfg2 := pool1(PolicyFirst, bad, good)
	cfg2.Pools[0].OriginProtocol = OriginHTTP2
	cfg2.Pools[0].Passive = PassiveConfig{ReturnProbe: "/svc/Ping"}
	if err := cfg2.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	h2 := start(t, cfg2, nil, false)
	p2 := h2.pool("web")
	what, ok := p2.probe(context.Background(), p2.origins[0])
	if ok || what == "" || !strings.Contains(what, "grpc-status 14 (UNAVAILABLE)") {
		t.Errorf("path probe of an UNAVAILABLE gRPC origin: %q pass=%v, want a failure naming grpc-status 14", what, ok)
	}

	bad1 := pool1(PolicyFirst, "http://127.0.0.1:1")
	bad1.Pools[0].Passive.ReturnProbe = ReturnProbeGRPC
	if err := bad1.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), "passive.return_probe: grpc needs origin_protocol: http2") {
		t.Errorf("grpc probe on an http1 pool: %v", err)
	}
}

// TestReturnProbeAcrossReloads: a passive ejection survives a reload that
// renames the origin's pool (it returned untested before), and a probe
// that ends after a reload applies its result to the generation in
// service: one return, counted once.
func TestReturnProbeAcrossReloads(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 2, Ejection: 150 * time.Millisecond, MaxEjection: time.Second,
		Window: time.Second, ReturnProbeInterval: 100 * time.Millisecond}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	for i := 0; i < 10 && !h.origin("web", "o0").has(flagPassive); i++ {
		h.do("GET", "/", "")
	}
	if !h.origin("web", "o0").has(flagPassive) {
		t.Fatal("not ejected")
	}
	renamed := cfg
	renamed.Pools = []PoolConfig{cfg.Pools[0]}
	renamed.Pools[0].Name = "web-renamed"
	if err := h.p.Reload(renamed); err != nil {
		t.Fatal(err)
	}
	o := h.origin("web-renamed", "o0")
	if !o.has(flagPassive) || o.ejections != 1 {
		t.Fatalf("after renaming the pool: passive %v, ejections %d; want the ejection kept", o.has(flagPassive), o.ejections)
	}
	hits := bad.hits.Load()
	for i := 0; i < 20; i++ {
		if code, _, _ := h.do("POST", "/", "x"); code != 200 {
			t.Fatalf("POST %d after the rename: %d", i, code)
		}
	}
	if bad.hits.Load() != hits {
		t.Fatal("the broken origin got client requests after the rename")
	}
	// Reload again and again while probes go out, then heal: one return.
	for i := 0; i < 5; i++ {
		if err := h.p.Reload(renamed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond)
	}
	bad.mode.Store(modeOK)
	eventually(t, "the healed origin returning", func() bool { return h.origin("web-renamed", "o0").Available() })
	time.Sleep(300 * time.Millisecond)
	if n := len(logs.lines("origin returned after ejection", "origin=o0")); n != 1 {
		t.Errorf("%d return lines, want 1: %q", n, logs.lines("origin returned"))
	}
	if v, _ := h.metric("vigil_proxy_return_probes_total", map[string]string{"pool": "web-renamed", "origin": "o0", "result": "pass"}); v != 1 {
		t.Errorf("return_probes_total{result=pass} = %v, want 1", v)
	}
}

// TestReturnProbeResultAfterReload: a probe still out when a reload swaps in
// a new generation returns the origin of that new generation, once; it
// used to return only the old one, so the new one stayed out for another
// probe and the return was logged and counted twice.
func TestReturnProbeResultAfterReload(t *testing.T) {
	var healed atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") == probeUserAgent {
			time.Sleep(400 * time.Millisecond)
		}
		if !healed.Load() {
			w.WriteHeader(503)
		}
	}))
	defer slow.Close()
	good := newBackend(t, "good")
	cfg := pool1(PolicyRoundRobin, slow.URL, good.srv.URL)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 2, Ejection: 100 * time.Millisecond, MaxEjection: time.Second,
		Window: time.Second, ReturnProbeInterval: 100 * time.Millisecond}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	for i := 0; i < 10 && !h.origin("web", "o0").has(flagPassive); i++ {
		h.do("GET", "/", "")
	}
	healed.Store(true)
	time.Sleep(250 * time.Millisecond) // the first probe is out (it takes 400ms)
	if st := adminOrigins(t, h.p)[0]; !st.PassiveEjected || !st.ReturnProbing {
		t.Errorf("while the probe is out: passive_ejected %v, return_probing %v; want both", st.PassiveEjected, st.ReturnProbing)
	}
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the origin returning", func() bool { return h.origin("web", "o0").Available() })
	time.Sleep(800 * time.Millisecond)
	if n := len(logs.lines("origin returned after ejection", "origin=o0")); n != 1 {
		t.Errorf("%d return lines, want 1: %q", n, logs.lines("origin returned"))
	}
	if v, _ := h.metric("vigil_proxy_return_probes_total", map[string]string{"origin": "o0", "result": "pass"}); v != 1 {
		t.Errorf("return_probes_total{result=pass} = %v, want 1", v)
	}
}

// TestReturnProbeHost: return_probe_host is the probes' Host, on a pool
// that names only wildcards too (its probes otherwise carry the origin's
// host:port, which a name-based origin may answer with its default site);
// a value that is not a host is refused, naming the key.
func TestReturnProbeHost(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	o0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != probeUserAgent {
			w.WriteHeader(502)
			return
		}
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
	}))
	defer o0.Close()
	cfg := pool1(PolicyFirst, o0.URL, newBackend(t, "good").srv.URL)
	pc := &cfg.Pools[0]
	pc.Hosts = []string{"*"}
	pc.Passive = PassiveConfig{Consecutive5xx: 1, Ejection: 100 * time.Millisecond, MaxEjection: time.Second,
		ReturnProbeHost: "health.example.com:8080", ReturnProbeInterval: 100 * time.Millisecond}
	h := start(t, cfg, nil, true)
	o := h.origin("web", "o0")
	if code, _, _ := h.do("GET", "/", ""); code != 200 {
		t.Fatalf("GET: %d", code)
	}
	if !o.has(flagPassive) {
		t.Fatal("not ejected")
	}
	eventually(t, "the probe passed", func() bool { return o.Available() })
	mu.Lock()
	if len(hosts) != 1 || hosts[0] != "health.example.com:8080" {
		t.Errorf("probe hosts %q, want health.example.com:8080", hosts)
	}
	mu.Unlock()

	for _, bad := range []string{"a b", "x/y", "*.example.com", "user@host", " example.com"} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.Pools[0].Passive.ReturnProbeHost = bad
		err := cfg.ValidateAndSetDefaults()
		if want := fmt.Sprintf("pools[0].passive.return_probe_host: %q: want a host name", bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", bad, err, want)
		}
	}
}
