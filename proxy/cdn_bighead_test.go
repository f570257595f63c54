package proxy

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResponseHeadTooLarge: an origin answer whose head is over 256 KiB
// gets 502, and the try failed line and the access log say so: the log's
// err is "response head larger than 256 KiB from origin" and the access
// log's try has detail response_head_too_large (cause stays protocol), on
// the fast path (a GET) and through http.Transport (a POST). Before, it
// read "malformed response from origin" (fast path) or Go's own text.
func TestResponseHeadTooLarge(t *testing.T) {
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i < 40; i++ {
					w.Header().Add("X-Big", strings.Repeat("v", 8<<10))
				}
			}))
			defer o.Close()
			for _, m := range []string{"GET", "POST"} {
				path := filepath.Join(t.TempDir(), "access.log")
				cfg := pool1(PolicyFirst, o.URL)
				cfg.Pools[0].Retry.Tries = 1
				cfg.AccessLog = path
				h, logs := startCapturing(t, cfg, engine) // one each: the try failed line is limited per origin and cause
				body := ""
				if m == "POST" {
					body = "x"
				}
				if code, b, _ := h.do(m, "/big", body); code != http.StatusBadGateway {
					t.Fatalf("%s: %d %q, want 502", m, code, b)
				}
				h.p.closeAccessLog()
				lines := logs.lines("proxy: try failed")
				if len(lines) != 1 || !strings.Contains(lines[0], "cause=protocol") || !strings.Contains(lines[0], `err="response head larger than 256 KiB from origin"`) {
					t.Errorf("%s: log lines %q: want one with cause=protocol and the head's size named", m, lines)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), `"cause":"protocol","detail":"response_head_too_large"`) {
					t.Errorf("%s: the access log does not name the oversized head:\n%s", m, b)
				}
			}
		})
	}
}
