package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemovedOriginSeriesStayGoneAfterInFlightTries: tries still in flight
// to an origin when a reload removes it end after the reload (a new status
// code, a 5xx, a try timeout, a body that breaks). Their outcome must not
// bring back the series the reload deleted: a series created then would stay
// in /metrics, frozen, for the life of the process.
func TestRemovedOriginSeriesStayGoneAfterInFlightTries(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		wait := func(d time.Duration) {
			select {
			case <-release:
			case <-time.After(d):
			}
		}
		switch r.URL.Path {
		case "/teapot": // a status code this origin never answered before
			wait(10 * time.Second)
			w.WriteHeader(http.StatusTeapot)
		case "/fail":
			wait(10 * time.Second)
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/hang": // past try_timeout
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "/break": // the answer begins, then the connection drops
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			wait(10 * time.Second)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		}
	}))
	t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
	other := newBackend(t, "origin-a")
	cfg := func(withD bool) Config {
		pc := PoolConfig{Name: "web", Policy: PolicyFirst}
		pc.Retry.TryTimeout = 1500 * time.Millisecond
		pc.ConnectTimeout = time.Second
		if withD {
			pc.Origins = append(pc.Origins, OriginConfig{Target: "origin-d", URL: slow.URL})
		}
		pc.Origins = append(pc.Origins, OriginConfig{Target: "origin-a", URL: other.srv.URL})
		return Config{Listen: "127.0.0.1:0", Pools: []PoolConfig{pc}}
	}
	h := start(t, cfg(true), nil, false)

	paths := []string{"/teapot", "/fail", "/hang", "/break"}
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.do("GET", p, "")
		}()
	}
	eventually(t, "the 4 requests reach origin-d", func() bool { return arrived.Load() >= int64(len(paths)) })
	if _, ok := h.metric("vigil_proxy_origin_available", map[string]string{"pool": "web", "origin": "origin-d"}); !ok {
		t.Fatal("no vigil_proxy_origin_available for origin-d before the reload")
	}
	if err := h.p.Reload(cfg(false)); err != nil {
		t.Fatal(err)
	}
	if s := originSeries(t, h, "origin-d"); len(s) > 0 {
		t.Fatalf("series of origin-d right after the reload that removed it: %v", s)
	}
	close(release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the requests in flight did not end")
	}
	if s := originSeries(t, h, "origin-d"); len(s) > 0 {
		t.Errorf("tries in flight during the reload brought back series of the removed origin-d:\n%s", strings.Join(s, "\n"))
	}
	// The remaining origin still records.
	if code, _, _ := h.do("GET", "/x", ""); code != http.StatusOK {
		t.Fatalf("origin-a answered %d", code)
	}
	if v, ok := h.metric("vigil_proxy_requests_total", map[string]string{"pool": "web", "origin": "origin-a", "code": "200"}); !ok || v < 1 {
		t.Errorf("origin-a's requests_total{code=200} = %v (present %v), want ≥ 1", v, ok)
	}

	// The origin added back gets its series again, from 0.
	if err := h.p.Reload(cfg(true)); err != nil {
		t.Fatal(err)
	}
	if v, ok := h.metric("vigil_proxy_tries_total", map[string]string{"pool": "web", "origin": "origin-d", "result": CauseStatus5xx}); !ok || v != 0 {
		t.Errorf("origin-d added back: tries_total{result=status_5xx} = %v (present %v), want 0", v, ok)
	}
	if code, _, _ := h.do("GET", "/fail", ""); code != http.StatusOK {
		t.Fatalf("/fail after re-adding origin-d answered %d, want 200 from origin-a", code)
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"pool": "web", "origin": "origin-d", "result": CauseStatus5xx}); v != 1 {
		t.Errorf("origin-d added back: tries_total{result=status_5xx} = %v after one 503, want 1", v)
	}
}

// originSeries lists the gathered series labelled origin=name.
func originSeries(t *testing.T, h *harness, name string) []string {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "origin" && lp.GetValue() == name {
					out = append(out, mf.GetName()+" "+m.String())
				}
			}
		}
	}
	return out
}

// TestRemovedPoolSeriesStayGoneAfterInFlightTries: a request still in
// flight in a pool a reload removed ends after the reload; no series of the
// pool comes back.
func TestRemovedPoolSeriesStayGoneAfterInFlightTries(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
	web := newBackend(t, "web")
	cfg := func(withAPI bool) Config {
		c := Config{Listen: "127.0.0.1:0", Pools: []PoolConfig{{Name: "web", Origins: []OriginConfig{{URL: web.srv.URL}}}}}
		if withAPI {
			c.Pools = append(c.Pools, PoolConfig{Name: "api", PathPrefix: "/api", Origins: []OriginConfig{{Target: "origin-d", URL: slow.URL}}})
		}
		return c
	}
	h := start(t, cfg(true), nil, false)
	done := make(chan int, 1)
	go func() { code, _, _ := h.do("GET", "/api/x", ""); done <- code }()
	eventually(t, "the request reaches the api pool's origin", func() bool { return arrived.Load() == 1 })
	if err := h.p.Reload(cfg(false)); err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case code := <-done:
		if code != http.StatusTeapot {
			t.Fatalf("the request in flight ended with %d, want 418 from the removed pool's origin", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the request in flight did not end")
	}
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "pool" && lp.GetValue() == "api" {
					left = append(left, mf.GetName()+" "+m.String())
				}
			}
		}
	}
	if len(left) > 0 {
		t.Errorf("a request in flight brought back series of the removed pool api:\n%s", strings.Join(left, "\n"))
	}
}
