package proxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// An origin answering 5xx while available: the retry must not spill over to an
// origin taken out of the pool; the client gets the available origin's answer.
func TestRetryNeverSpillsToUnavailableOrigin(t *testing.T) {
	for _, out := range []string{"verdict_down", "passive_ejected"} {
		t.Run(out, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			a.mode.Store(mode503)
			b.mode.Store(mode503)
			h := start(t, pool1(PolicyRoundRobin, urls(a, b)...), nil, false)
			now := time.Now()
			switch out {
			case "verdict_down":
				h.pool("web").applyVerdicts([]reporting.Verdict{verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
			case "passive_ejected":
				h.origin("web", "o1").set(flagPassive, "test", now)
			}
			if !h.origin("web", "o0").Available() || h.origin("web", "o1").Available() {
				t.Fatal("want o0 available and o1 out")
			}
			for i := 0; i < 2; i++ {
				code, body, _ := h.do("GET", "/fail", "")
				if code != http.StatusServiceUnavailable || body != "down a" {
					t.Fatalf("GET %d: %d %q, want the available origin's 503 \"down a\"", i, code, body)
				}
			}
			if a.hits.Load() != 2 || b.hits.Load() != 0 {
				t.Fatalf("hits a=%d b=%d, want a=2 b=0 (no try on the %s origin)", a.hits.Load(), b.hits.Load(), out)
			}
		})
	}
}

// Every available origin failed without answering (refused): the origins
// taken out are then tried rather than refusing (fail open).
func TestLastResortAfterAvailableOriginsRefuse(t *testing.T) {
	b := newBackend(t, "b")
	h := start(t, pool1(PolicyFirst, deadURL(t), b.srv.URL), nil, false)
	now := time.Now()
	h.pool("web").applyVerdicts([]reporting.Verdict{verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
	if h.origin("web", "o1").Available() {
		t.Fatal("o1 should be verdict-down")
	}
	code, body, _ := h.do("GET", "/", "")
	if code != 200 || body != "ok b" {
		t.Fatalf("got %d %q, want the verdict-down origin's answer once the available one refused", code, body)
	}
	// Drained origins stay out even then.
	h.p.Drain("o1", "x")
	if code, body, _ := h.do("GET", "/", ""); code != http.StatusBadGateway {
		t.Fatalf("available refused, other drained: got %d %q, want 502", code, body)
	}
	if n := b.hits.Load(); n != 1 {
		t.Fatalf("drained origin saw %d requests, want 1 (only before the drain)", n)
	}
}

// With nothing available when the request starts, a 5xx from one last-resort
// origin moves on to the next one.
func TestLastResortRetriesAmongUnavailable(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(mode503)
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.Pools[0].MaxEjected = 100
	h := start(t, cfg, nil, false)
	now := time.Now()
	h.pool("web").applyVerdicts([]reporting.Verdict{
		verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
		verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
	if h.origin("web", "o0").Available() || h.origin("web", "o1").Available() {
		t.Fatal("both origins should be verdict-down")
	}
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok b" {
		t.Fatalf("got %d %q, want the second last-resort origin's 200", code, body)
	}
	if a.hits.Load() != 1 || b.hits.Load() != 1 {
		t.Fatalf("hits a=%d b=%d, want 1 each", a.hits.Load(), b.hits.Load())
	}
}
