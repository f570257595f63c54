package proxy

import (
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// hungOrigin accepts connections, reads what they send and never answers
// (a hung host); it counts the connections that sent a request.
func hungOrigin(t *testing.T) (url string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	requests = &atomic.Int64{}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 4096)
				counted := false
				for {
					n, err := c.Read(buf)
					if n > 0 && !counted {
						counted = true
						requests.Add(1)
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String(), requests
}

// TestEjectionCutsWaitingTries: an origin that accepts requests and never
// answers is taken out (verdict-down) while requests wait on it. The
// replay-safe ones (GETs, a POST with an Idempotency-Key) are cut and
// answered by another origin at once, not after try_timeout, each logged
// with 2 tries, the first under cause ejected, which the passive detector
// does not count; a POST without Idempotency-Key keeps waiting until its
// try_timeout (504, one try). Both engines (the fast engine's watcher, and
// the registry net/http's server uses); GETs take the fast path, POSTs Go's
// transport.
func TestEjectionCutsWaitingTries(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			hung, requests := hungOrigin(t)
			b1, b2 := newBackend(t, "b1"), newBackend(t, "b2")
			cfg := pool1(PolicyFirst, hung, b1.srv.URL, b2.srv.URL)
			const tryTimeout = 3 * time.Second
			cfg.Pools[0].Retry.TryTimeout = tryTimeout
			path := filepath.Join(t.TempDir(), "access.log")
			cfg.AccessLog = path
			src := &memSource{}
			h := startWith(t, cfg, src, false, engineName)

			type result struct {
				method string
				code   int
				body   string
				took   time.Time
			}
			reqs := []struct {
				method, body string
				hdr          []string
			}{
				{"GET", "", nil}, {"GET", "", nil}, {"GET", "", nil}, {"GET", "", nil},
				{"POST", "a=1", []string{"Idempotency-Key", "k1"}},
				{"POST", "a=2", nil},
			}
			results := make(chan result, len(reqs))
			for _, rq := range reqs {
				go func() {
					code, body, _ := h.do(rq.method, "/x", rq.body, rq.hdr...)
					results <- result{rq.method, code, body, time.Now()}
				}()
			}
			eventually(t, "every request waiting at the hung origin", func() bool { return requests.Load() == int64(len(reqs)) })
			now := time.Now()
			src.set(verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now))
			h.pool("web").applyVerdicts(src.vs, now)
			if h.origin("web", "o0").Available() {
				t.Fatal("o0 should be verdict-down")
			}
			ejected := time.Now()
			var cut, kept []result
			for range reqs {
				select {
				case r := <-results:
					if r.took.Sub(ejected) < tryTimeout/2 {
						cut = append(cut, r)
					} else {
						kept = append(kept, r)
					}
				case <-time.After(2 * tryTimeout):
					t.Fatal("a request never ended")
				}
			}
			if len(cut) != 5 {
				t.Fatalf("%d requests answered within %s of the ejection, want the 5 replay-safe ones: %+v (later: %+v)", len(cut), tryTimeout/2, cut, kept)
			}
			for _, r := range cut {
				if r.code != 200 || r.body != "ok b1" {
					t.Errorf("%s: %d %q, want the next origin's answer", r.method, r.code, r.body)
				}
			}
			if b1.posts.Load() != 1 {
				t.Errorf("b1 got %d POSTs, want the one with an Idempotency-Key", b1.posts.Load())
			}
			if len(kept) != 1 || kept[0].method != "POST" || kept[0].code != 504 {
				t.Fatalf("later: %+v, want the POST without Idempotency-Key ending at its try_timeout with 504", kept)
			}
			h.p.closeAccessLog()
			lines := accessLines(t, path)
			nCut := 0
			for _, l := range lines {
				switch got := ups(l); {
				case reflect.DeepEqual(got, []string{"o0 ejected", "o1 200"}):
					nCut++
					if l["tries"] != 2.0 {
						t.Errorf("cut request: tries %v, want 2", l["tries"])
					}
				case reflect.DeepEqual(got, []string{"o0 timeout"}):
					if l["method"] != "POST" {
						t.Errorf("timed out: %v, want the POST", l)
					}
				default:
					t.Errorf("access log line: upstreams %q\n%v", got, l)
				}
			}
			if nCut != 5 {
				t.Errorf("%d access log lines show a cut try, want 5", nCut)
			}
			if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": CauseEjected}); v != 5 {
				t.Errorf("tries_total{origin=o0,result=ejected} = %v, want 5", v)
			}
			if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseEjected}); v != 5 {
				t.Errorf("retries_total{cause=ejected} = %v, want 5", v)
			}
			// Only the POST's timeout is charged to o0.
			if o := h.origin("web", "o0"); o.stats.requests.Load() != 1 || o.stats.timeouts.Load() != 1 {
				t.Errorf("o0 charged with %d tries (%d timeouts), want the POST's timeout only", o.stats.requests.Load(), o.stats.timeouts.Load())
			}
		})
	}
}

// TestEjectionCutConfig: retry.on_ejection defaults to resend, takes wait,
// and names the key for anything else.
func TestEjectionCutConfig(t *testing.T) {
	var r RetryConfig
	if err := r.ValidateAndSetDefaults(); err != nil || r.OnEjection != OnEjectionResend {
		t.Fatalf("default: %q %v, want resend", r.OnEjection, err)
	}
	r = RetryConfig{OnEjection: OnEjectionWait}
	if err := r.ValidateAndSetDefaults(); err != nil || r.OnEjection != OnEjectionWait {
		t.Fatalf("wait: %q %v", r.OnEjection, err)
	}
	r = RetryConfig{OnEjection: "shutdown"}
	if err := r.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), `on_ejection: "shutdown"`) {
		t.Fatalf("bad value: %v, want an error naming on_ejection", err)
	}
}
