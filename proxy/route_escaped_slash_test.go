package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRouteEscapedSlashRefused: routing reads %2F as a slash, but the
// origin gets the target as written, and origins that keep %2F in its
// segment (Tomcat, Spring, Express) or read a backslash as a slash (IIS,
// WHATWG URL parsers) resolve its dot segments elsewhere. A path whose pool
// depends on that reading gets 400 on both engines and over HTTP/2, with a
// 400 line in the access log, and reaches no origin:
// "/internal/debug/..%2F..%2Fapi" used to be routed to /api's pool, whose
// origin got it whole and served /internal/debug/... A %2F or %5C that
// changes no route (an ID such as /api/files/a%2Fb) is forwarded as written.
func TestRouteEscapedSlashRefused(t *testing.T) {
	apiURL, apiLines := lineOrigin(t)
	webURL, webLines := lineOrigin(t)
	mk := func() Config {
		cfg := pool1(PolicyFirst, webURL)
		cfg.Pools[0].Name = "web"
		api := pool1(PolicyFirst, apiURL).Pools[0]
		api.Name, api.PathPrefix = "api", "/api"
		cfg.Pools = append(cfg.Pools, api)
		return cfg
	}
	refused := []string{
		"/internal/debug/..%2F..%2Fapi",
		"/internal/debug/..%2f..%2fapi",
		"/x%2F..%2Fapi/y",
		"/api%2Fv1",
		"/api/..%5Cinternal",
		"/api/..%5cinternal",
		"/internal/..%5C..%5Capi",
		"/internal/debug/..%2F..%2Fapi?q=1",
	}
	passed := []struct{ target, pool string }{
		{"/api/files/a%2Fb", "api"},
		{"/api/files/a%2f..%2fb", "api"},
		{"/api/a%5Cb", "api"},
		{"/static/a%2Fb", "web"},
		{"/api%2F..%2Finternal", "web"}, // web's route every way it is read
	}
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			cfg := mk()
			logPath := filepath.Join(t.TempDir(), "access.log")
			cfg.AccessLog = logPath
			h := startWith(t, cfg, nil, false, eng)
			addr := strings.TrimPrefix(h.front.URL, "http://")
			a0, w0 := len(apiLines()), len(webLines())
			for _, target := range refused {
				if got := rawGet(t, addr, target); !strings.HasPrefix(got, "HTTP/1.1 400 ") {
					t.Errorf("%s: %q, want 400", target, got)
				}
			}
			if a, w := apiLines()[a0:], webLines()[w0:]; len(a)+len(w) != 0 {
				t.Fatalf("refused targets reached origins: api %q, web %q", a, w)
			}
			for _, tc := range passed {
				if got := rawGet(t, addr, tc.target); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
					t.Errorf("%s: %q, want 200", tc.target, got)
					continue
				}
				lines, other := apiLines, webLines
				if tc.pool == "web" {
					lines, other = webLines, apiLines
				}
				l, o := lines(), other()
				if want := "GET " + tc.target + " HTTP/1.1"; len(l) == 0 || l[len(l)-1] != want {
					t.Errorf("%s: pool %s's origin last read %q, want %q", tc.target, tc.pool, l, want)
				}
				if len(o) > 0 && o[len(o)-1] == "GET "+tc.target+" HTTP/1.1" {
					t.Errorf("%s reached the other pool's origin too", tc.target)
				}
			}
			h.p.closeAccessLog()
			b, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil && m["path"] == "/internal/debug/..%2F..%2Fapi" {
					found = true
					if m["status"] != float64(400) {
						t.Errorf("access log line %s, want status 400", line)
					}
				}
			}
			if !found {
				t.Errorf("no access log line for the refused path:\n%s", b)
			}
		})
	}

	addr, roots := runTLSProxy(t, mk())
	a0, w0 := len(apiLines()), len(webLines())
	for _, target := range []string{"/internal/debug/..%2F..%2Fapi", "/api/..%5Cinternal"} {
		_, fr := h2Open(t, addr, roots, [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", target}})
		if status, _ := h2Answer(t, fr); status != "400" {
			t.Errorf("HTTP/2 %s: %s, want 400", target, status)
		}
	}
	if a, w := apiLines()[a0:], webLines()[w0:]; len(a)+len(w) != 0 {
		t.Fatalf("HTTP/2 refused targets reached origins: api %q, web %q", a, w)
	}
}
