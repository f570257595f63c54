package proxy

import (
	"net/http"
	"testing"
	"time"
)

// TestForwardSlowURLEjectsNoOrigin: a URL that takes longer than
// try_timeout on every origin times out on each try of its requests; such a
// request (two or more origins tried, each timed out) is the URL's fault
// and charges no origin, as a URL answered 5xx everywhere (was: every origin
// reached "3 consecutive failed tries (3 timeout)" and one was ejected, the
// others kept only by max_ejected). So is one that timed out at one origin
// and was answered 500 by the other. An origin that times out on every
// request, while the others answer, is still charged and ejected.
func TestForwardSlowURLEjectsNoOrigin(t *testing.T) {
	const tryTimeout = 200 * time.Millisecond
	setup := func(t *testing.T, us []string, tries int) *harness {
		cfg := pool1(PolicyFirst, us...)
		pc := &cfg.Pools[0]
		pc.Passive.Consecutive5xx = 3
		pc.Passive.Ejection = time.Minute
		pc.Retry = RetryConfig{Tries: tries, TryTimeout: tryTimeout, Budget: 5 * time.Second}
		pc.ConnectTimeout = 100 * time.Millisecond
		return start(t, cfg, nil, false)
	}
	ejected := func(h *harness) []string {
		var out []string
		for _, st := range h.p.Origins() {
			if st.PassiveEjected {
				out = append(out, st.Name)
			}
		}
		return out
	}

	t.Run("slow everywhere", func(t *testing.T) {
		var us []string
		for _, n := range []string{"a", "b", "c"} {
			us = append(us, sleepyOrigin(t, n, 2*time.Second, []string{"/slow"}, nil))
		}
		h := setup(t, us, 3)
		for i := 0; i < 4; i++ {
			if code, body, _ := h.do("GET", "/slow", ""); code != http.StatusGatewayTimeout {
				t.Fatalf("GET /slow %d: %d %q, want 504", i, code, body)
			}
		}
		time.Sleep(50 * time.Millisecond) // a charge would follow the answer
		if e := ejected(h); len(e) != 0 {
			t.Fatalf("origins %v were ejected for a URL slow on every origin", e)
		}
		for i := 0; i < 3; i++ {
			if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o" + string(rune('0'+i)), "result": CauseTimeout}); v != 4 {
				t.Errorf("o%d: tries_total{result=timeout} = %v, want 4 (the metrics count every try)", i, v)
			}
		}
		// The origins still serve, and a healthy URL is answered.
		if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok a" {
			t.Fatalf("GET /x: %d %q, want ok a", code, body)
		}
	})

	t.Run("slow on one, 500 on the other", func(t *testing.T) {
		us := []string{
			sleepyOrigin(t, "a", 2*time.Second, []string{"/mix"}, nil),
			sleepyOrigin(t, "b", 0, nil, []string{"/mix"}),
		}
		h := setup(t, us, 2)
		for i := 0; i < 4; i++ {
			if code, _, _ := h.do("GET", "/mix", ""); code != http.StatusInternalServerError {
				t.Fatalf("GET /mix %d: %d, want the last origin's 500", i, code)
			}
		}
		time.Sleep(50 * time.Millisecond)
		if e := ejected(h); len(e) != 0 {
			t.Fatalf("origins %v were ejected for a URL that fails on every origin", e)
		}
	})

	t.Run("blackholed origin", func(t *testing.T) {
		us := []string{
			sleepyOrigin(t, "a", 5*time.Second, []string{"*"}, nil),
			sleepyOrigin(t, "b", 0, nil, nil),
			sleepyOrigin(t, "c", 0, nil, nil),
		}
		h := setup(t, us, 3)
		for i := 0; i < 3; i++ {
			if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok b" {
				t.Fatalf("GET /x %d: %d %q, want ok b", i, code, body)
			}
		}
		eventually(t, "the blackholed origin ejected", func() bool {
			e := ejected(h)
			return len(e) == 1 && e[0] == "o0"
		})
		// Out of rotation: the next request goes straight to b.
		began := time.Now()
		if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok b" || time.Since(began) >= tryTimeout {
			t.Fatalf("GET /x after the ejection: %d %q in %v, want ok b at once", code, body, time.Since(began))
		}
	})

	t.Run("slow URL, one origin blackholed", func(t *testing.T) {
		// A slow URL's requests charge nobody; the blackholed origin is
		// charged by the requests another origin answered.
		us := []string{
			sleepyOrigin(t, "a", 5*time.Second, []string{"*"}, nil),
			sleepyOrigin(t, "b", 2*time.Second, []string{"/slow"}, nil),
			sleepyOrigin(t, "c", 2*time.Second, []string{"/slow"}, nil),
		}
		h := setup(t, us, 3)
		for i := 0; i < 3; i++ {
			if code, _, _ := h.do("GET", "/slow", ""); code != http.StatusGatewayTimeout {
				t.Fatalf("GET /slow %d: %d, want 504", i, code)
			}
			if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok b" {
				t.Fatalf("GET /x %d: %d %q, want ok b", i, code, body)
			}
		}
		eventually(t, "the blackholed origin alone ejected", func() bool {
			e := ejected(h)
			return len(e) == 1 && e[0] == "o0"
		})
	})
}
