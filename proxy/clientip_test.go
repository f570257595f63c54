package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRealClientIP(t *testing.T) {
	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.TrustedProxies = []string{"10.0.0.0/8", "2001:db8:ffff::/48", "127.0.0.1"}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vals []string
		want string
	}{
		{[]string{"203.0.113.9"}, "203.0.113.9"},
		{[]string{"198.51.100.1, 203.0.113.9, 10.1.2.3"}, "203.0.113.9"},
		{[]string{"198.51.100.1, 203.0.113.9", "10.1.2.3,10.9.9.9"}, "203.0.113.9"},
		{[]string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{[]string{"[2001:db8::7]:4711, 2001:db8:ffff::1"}, "2001:db8::7"},
		{[]string{"203.0.113.9:80"}, "203.0.113.9"},
		{[]string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{[]string{"198.51.100.1, unknown, 10.1.2.3"}, ""},
		{[]string{"198.51.100.1, , 10.1.2.3"}, ""},
		{[]string{"fe80::1%eth0"}, ""},
		{nil, ""},
	} {
		got := ""
		if a, ok := realClientIP(&cfg, tc.vals); ok {
			got = a.String()
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.vals, got, tc.want)
		}
	}
	cfg.clientIPKey = "Cf-Connecting-Ip"
	for _, tc := range []struct {
		vals []string
		want string
	}{
		{[]string{"2001:db8::5"}, "2001:db8::5"},
		{[]string{"2001:db8::5", "203.0.113.9"}, ""},
		{[]string{"203.0.113.9, 198.51.100.1"}, ""},
	} {
		got := ""
		if a, ok := realClientIP(&cfg, tc.vals); ok {
			got = a.String()
		}
		if got != tc.want {
			t.Errorf("CF-Connecting-IP %q: %q, want %q", tc.vals, got, tc.want)
		}
	}
}

// TestTrustedProxies: behind a trusted proxy (trusted_proxies), the client
// its X-Forwarded-For names (the rightmost untrusted address) reaches the
// origin in X-Real-IP, is the access log's client_ip and is what ip_hash
// hashes, while X-Forwarded-For still gets the peer appended; from an
// untrusted peer the header is not believed. Without it, every client
// behind a CDN was the CDN's edge: ip_hash sent them all to one origin.
func TestTrustedProxies(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
			cfg := pool1(PolicyIPHash, urls(a, b, c)...)
			cfg.TrustedProxies = []string{"127.0.0.0/8", "10.0.0.0/8"}
			cfg.AccessLog = filepath.Join(t.TempDir(), "access.log")
			h := startWith(t, cfg, nil, false, eng)
			code, _, _ := h.do("GET", "/", "", "X-Forwarded-For", "198.51.100.1, 203.0.113.9, 10.1.2.3")
			if code != 200 {
				t.Fatalf("GET: %d", code)
			}
			var last http.Header
			for _, o := range []*backend{a, b, c} {
				o.mu.Lock()
				if o.last != nil {
					last = o.last
				}
				o.mu.Unlock()
			}
			if got := last.Get("X-Real-Ip"); got != "203.0.113.9" {
				t.Errorf("X-Real-IP %q, want 203.0.113.9", got)
			}
			if got := last.Get("X-Forwarded-For"); got != "198.51.100.1, 203.0.113.9, 10.1.2.3, 127.0.0.1" {
				t.Errorf("X-Forwarded-For %q, want the chain with the peer appended", got)
			}
			// 30 clients behind one edge spread over the origins.
			for i := range 30 {
				if code, _, _ := h.do("GET", "/", "", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i+10)); code != 200 {
					t.Fatalf("GET: %d", code)
				}
			}
			for _, o := range []*backend{a, b, c} {
				if o.hits.Load() == 0 {
					t.Errorf("ip_hash sent no client to %s: it hashed the edge, not the clients", o.name)
				}
			}
			h.p.closeAccessLog()
			raw, err := os.ReadFile(cfg.AccessLog)
			if err != nil {
				t.Fatal(err)
			}
			var line struct {
				Remote   string
				ClientIP string `json:"client_ip"`
			}
			if err := json.Unmarshal([]byte(strings.SplitN(string(raw), "\n", 2)[0]), &line); err != nil || line.ClientIP != "203.0.113.9" || !strings.HasPrefix(line.Remote, "127.0.0.1:") {
				t.Errorf("access log remote %q client_ip %q (%v), want 127.0.0.1:… and 203.0.113.9", line.Remote, line.ClientIP, err)
			}
		})
	}

	// An untrusted peer's header is not believed.
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.TrustedProxies = []string{"10.0.0.0/8"}
	h := start(t, cfg, nil, false)
	if code, _, _ := h.do("GET", "/", "", "X-Forwarded-For", "203.0.113.9"); code != 200 {
		t.Fatalf("GET: %d", code)
	}
	a.mu.Lock()
	got := a.last.Get("X-Real-Ip")
	a.mu.Unlock()
	if got != "127.0.0.1" {
		t.Errorf("untrusted peer: X-Real-IP %q, want the peer 127.0.0.1", got)
	}

	for _, tc := range []struct {
		trusted []string
		header  string
		err     string
	}{
		{[]string{"cdn.example"}, "", `trusted_proxies[0]: "cdn.example": want an IP address or a CIDR`},
		{nil, "CF-Connecting-IP", "client_ip_header: only with trusted_proxies"},
		{[]string{"10.0.0.0/8"}, "Connection", `client_ip_header: "Connection": want a header field name`},
		{[]string{"10.0.0.0/8"}, "X Real IP", `client_ip_header: "X Real IP": want a header field name`},
	} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.TrustedProxies, cfg.ClientIPHeader = tc.trusted, tc.header
		if err := cfg.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q %q: error %v, want %q", tc.trusted, tc.header, err, tc.err)
		}
	}
}
