package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBrokenURLChargesNoOrigin: GETs of a URL every origin answers with
// 500 are retried on each origin and get the 500, but charge none of them
// (the URL is broken, not the origins): no origin is ejected after 10 of
// them, while the 5xx still count in the metrics. An origin that answers
// 503 where another answers 200 is still charged and ejected after
// passive.consecutive_5xx. Was: every such request counted a failure
// against all three origins, so 5 of them ejected one.
func TestBrokenURLChargesNoOrigin(t *testing.T) {
	var sick [3]bool
	var urls []string
	for i := range 3 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/boom" || sick[i] {
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, "boom")
				return
			}
			io.WriteString(w, "ok")
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	cfg := pool1(PolicyRoundRobin, urls...)
	cfg.Pools[0].Retry.RetryBudget = 200 // every retry allowed: the charges alone are tested
	h := start(t, cfg, nil, false)
	for i := range 10 {
		if code, body, _ := h.do("GET", "/boom", ""); code != 500 || body != "boom" {
			t.Fatalf("GET /boom %d: %d %q", i, code, body)
		}
	}
	for _, o := range h.p.Origins() {
		if !o.Available {
			t.Fatalf("origin %s ejected by a URL every origin fails: %v", o.Name, o.Why)
		}
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": CauseStatus5xx}); v < 3 {
		t.Errorf("tries_total{o0,status_5xx} = %v, want the 500s counted", v)
	}
	// o1 alone fails: retried elsewhere, and charged.
	sick[1] = true
	for i := range 20 {
		if code, _, _ := h.do("GET", "/x", ""); code != 200 {
			t.Fatalf("GET /x %d with o1 sick: %d", i, code)
		}
	}
	if h.origin("web", "o1").Available() {
		t.Fatal("o1, answering 500 where the others answer 200, was not ejected")
	}
}
