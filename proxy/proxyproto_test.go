package proxy

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ppV2 builds a version 2 PROXY header for a TCP client src:sport
// (IPv4 or IPv6), with a TLV of n bytes after the addresses.
func ppV2(src string, sport uint16, tlv int) []byte {
	ip := net.ParseIP(src)
	var body []byte
	fam := byte(0x11)
	if ip4 := ip.To4(); ip4 != nil {
		body = append(append(body, ip4...), 10, 0, 0, 1)
	} else {
		fam = 0x21
		body = append(append(body, ip...), net.ParseIP("2001:db8::1")...)
	}
	body = binary.BigEndian.AppendUint16(body, sport)
	body = binary.BigEndian.AppendUint16(body, 443)
	if tlv > 0 {
		body = append(body, 0xEA, byte(tlv>>8), byte(tlv)) // PP2_TYPE_AWS
		body = append(body, make([]byte, tlv)...)
	}
	h := append([]byte(nil), ppV2Sig...)
	h = append(h, 0x21, fam)
	h = binary.BigEndian.AppendUint16(h, uint16(len(body)))
	return append(h, body...)
}

func TestParsePPHeader(t *testing.T) {
	local := append(append([]byte(nil), ppV2Sig...), 0x20, 0x00, 0, 0)
	for _, tc := range []struct {
		name, in, src string
		err           error
	}{
		{"v1 tcp4", "PROXY TCP4 203.0.113.7 10.0.0.1 5555 80\r\nGET", "203.0.113.7:5555", nil},
		{"v1 tcp6", "PROXY TCP6 2001:db8::7 2001:db8::1 65535 443\r\n", "[2001:db8::7]:65535", nil},
		{"v1 unknown", "PROXY UNKNOWN\r\n", "", nil},
		{"v1 unknown with addresses", "PROXY UNKNOWN ffff:f::1 ffff:f::2 1 2\r\n", "", nil},
		{"v1 partial", "PROXY TCP4 203.0.113.7", "", errPPMore},
		{"v1 prefix", "PRO", "", errPPMore},
		{"v2 prefix", "\r\n\r\n\x00", "", errPPMore},
		{"v1 family mismatch", "PROXY TCP4 2001:db8::7 2001:db8::1 1 2\r\n", "", errPPMalformed},
		{"v1 port out of range", "PROXY TCP4 1.2.3.4 1.2.3.5 65536 2\r\n", "", errPPMalformed},
		{"v1 leading zero", "PROXY TCP4 1.2.3.4 1.2.3.5 080 2\r\n", "", errPPMalformed},
		{"v1 fields", "PROXY TCP4 1.2.3.4 1.2.3.5 80\r\n", "", errPPMalformed},
		{"v1 too long", "PROXY TCP4 " + strings.Repeat("1", 120), "", errPPMalformed},
		{"http", "GET / HTTP/1.1\r\n", "", errPPMissing},
		{"tls", "\x16\x03\x01\x02\x00", "", errPPMissing},
		{"v2 tcp4", string(ppV2("198.51.100.9", 40000, 0)), "198.51.100.9:40000", nil},
		{"v2 tcp6 with tlv", string(ppV2("2001:db8::9", 40001, 30)), "[2001:db8::9]:40001", nil},
		{"v2 local", string(local), "", nil},
		{"v2 partial", string(ppV2("198.51.100.9", 40000, 0)[:20]), "", errPPMore},
		{"v2 udp keeps the peer", string(append(append(append([]byte(nil), ppV2Sig...), 0x21, 0x12, 0, 12), make([]byte, 12)...)), "", nil},
		{"v2 unix keeps the peer", string(append(append(append([]byte(nil), ppV2Sig...), 0x21, 0x31, 0, 216), make([]byte, 216)...)), "", nil},
		{"v2 bad version", string(append(append([]byte(nil), ppV2Sig...), 0x31, 0x11, 0, 12)), "", errPPMalformed},
		{"v2 too large", string(append(append([]byte(nil), ppV2Sig...), 0x21, 0x11, 0xff, 0xff)), "", errPPMalformed},
	} {
		n, src, err := parsePPHeader([]byte(tc.in))
		if err != tc.err {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
			continue
		}
		got := ""
		if src != nil {
			got = src.String()
		}
		if got != tc.src {
			t.Errorf("%s: src %q, want %q", tc.name, got, tc.src)
		}
		if err == nil && (n <= 0 || n > len(tc.in) || (tc.name == "v1 tcp4" && tc.in[n:] != "GET")) {
			t.Errorf("%s: length %d of %d", tc.name, n, len(tc.in))
		}
	}
}

// TestProxyProtocol: with proxy_protocol, the client address of a PROXY
// protocol header (v1 or v2, also when it arrives in pieces) is the one
// the origin gets in X-Forwarded-For and the access log shows, on the plain
// listener of both engines and on the TLS one (header before the
// handshake); a connection without a header, from a peer outside
// proxy_protocol_from, or with no whole header within
// read_header_timeout is closed without reaching an origin, and counted.
// Without it, every client behind a TCP load balancer had the balancer's
// address: one ip_hash bucket, one access-log address.
func TestProxyProtocol(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			var seen = make(chan string, 16)
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen <- r.Header.Get("X-Forwarded-For")
				io.WriteString(w, "ok")
			}))
			defer origin.Close()
			cfg := pool1(PolicyFirst, origin.URL)
			certFile, keyFile, roots := selfSigned(t)
			cfg.Engine = eng
			cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
			cfg.ProxyProtocol, cfg.ProxyProtocolFrom = true, []string{"127.0.0.0/8", "::1"}
			cfg.ReadHeaderTimeout = time.Second
			cfg.AccessLog = filepath.Join(t.TempDir(), "access.log")
			h := &harness{t: t, reg: prometheus.NewRegistry()}
			p, err := New(cfg, nil, testLogger(t), WithRegistry(h.reg))
			if err != nil {
				t.Fatal(err)
			}
			h.p = p
			addrs := runProxyOn(t, p, 2)

			get := func(c net.Conn, pieces ...[]byte) (int, error) {
				t.Helper()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				for i, b := range pieces {
					if i > 0 {
						time.Sleep(50 * time.Millisecond)
					}
					if _, err := c.Write(b); err != nil {
						return 0, err
					}
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			for _, tc := range []struct {
				name   string
				pieces [][]byte
				want   string
			}{
				{"v1", [][]byte{append([]byte("PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n"), req...)}, "203.0.113.7"},
				{"v2 in pieces", [][]byte{ppV2("2001:db8::9", 40001, 8)[:10], ppV2("2001:db8::9", 40001, 8)[10:], req}, "2001:db8::9"},
				{"v1 unknown", [][]byte{[]byte("PROXY UNKNOWN\r\n"), req}, "127.0.0.1"},
			} {
				c, err := net.Dial("tcp", addrs[0])
				if err != nil {
					t.Fatal(err)
				}
				code, err := get(c, tc.pieces...)
				c.Close()
				if err != nil || code != 200 {
					t.Fatalf("%s: %d %v", tc.name, code, err)
				}
				if got := <-seen; got != tc.want {
					t.Errorf("%s: origin got X-Forwarded-For %q, want %q", tc.name, got, tc.want)
				}
			}

			// TLS: the header, then the handshake.
			raw, err := net.Dial("tcp", addrs[1])
			if err != nil {
				t.Fatal(err)
			}
			raw.Write([]byte("PROXY TCP4 198.51.100.20 127.0.0.1 6000 443\r\n"))
			tc := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
			if code, err := get(tc, req); err != nil || code != 200 {
				t.Fatalf("tls: %d %v", code, err)
			}
			tc.Close()
			if got := <-seen; got != "198.51.100.20" {
				t.Errorf("tls: origin got X-Forwarded-For %q, want 198.51.100.20", got)
			}

			// Refused: no header, a header cut short.
			for _, tc := range []struct {
				reason string
				send   []byte
			}{
				{ppMissing, req},
				{ppTimeout, []byte("PROXY TCP4 203.0.113.7")},
				{ppMalformed, []byte("PROXY TCP4 203.0.113.7 127.0.0.1 99999 80\r\n")},
			} {
				c, err := net.Dial("tcp", addrs[0])
				if err != nil {
					t.Fatal(err)
				}
				c.Write(tc.send)
				start := time.Now()
				if !closedSoon(c) {
					t.Errorf("%s: the connection stayed open", tc.reason)
				}
				if took := time.Since(start); tc.reason == ppTimeout && took > 4*time.Second {
					t.Errorf("timeout: closed after %s, want about read_header_timeout (1s)", took)
				}
				c.Close()
				eventually(t, tc.reason+" counted", func() bool {
					v, _ := h.metric("vigil_proxy_proxy_protocol_errors_total", map[string]string{"reason": tc.reason})
					return v == 1
				})
			}
			// A header cut short by a half-close fails at once as closed,
			// not at read_header_timeout.
			{
				c, err := net.Dial("tcp", addrs[0])
				if err != nil {
					t.Fatal(err)
				}
				c.Write([]byte("PROXY TCP4 203.0.113.7"))
				time.Sleep(50 * time.Millisecond)
				start := time.Now()
				c.(*net.TCPConn).CloseWrite()
				if !closedSoon(c) {
					t.Errorf("half-close: the connection stayed open")
				}
				if took := time.Since(start); took > 500*time.Millisecond {
					t.Errorf("half-close after part of a header: closed after %s, want at once (read_header_timeout is 1s)", took)
				}
				c.Close()
				eventually(t, "closed counted", func() bool {
					v, _ := h.metric("vigil_proxy_proxy_protocol_errors_total", map[string]string{"reason": ppClosed})
					return v == 1
				})
			}
			// A TCP health check (connect, close) is counted apart.
			for range 2 {
				c, err := net.Dial("tcp", addrs[0])
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			eventually(t, "empty connections counted", func() bool {
				v, _ := h.metric("vigil_proxy_proxy_protocol_errors_total", map[string]string{"reason": ppEmpty})
				return v == 2
			})
			if v, _ := h.metric("vigil_proxy_proxy_protocol_errors_total", map[string]string{"reason": ppClosed}); v != 1 {
				t.Errorf("closed counted %v, want 1 (the half-close): empty connections are not cut-off headers", v)
			}
			select {
			case xff := <-seen:
				t.Errorf("a refused connection reached the origin (X-Forwarded-For %q)", xff)
			default:
			}

			// The access log shows the client of the header.
			p.closeAccessLog()
			b, err := os.ReadFile(cfg.AccessLog)
			if err != nil {
				t.Fatal(err)
			}
			var first struct{ Remote string }
			if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &first); err != nil || first.Remote != "203.0.113.7:5555" {
				t.Errorf("access log remote %q (%v), want 203.0.113.7:5555", first.Remote, err)
			}
		})
	}
}

// TestProxyProtocolUntrusted: a peer outside proxy_protocol_from is closed
// at once, whatever it sends, and counted; the config needs
// proxy_protocol_from with proxy_protocol, and refuses what is not an
// address or a CIDR, naming the key.
func TestProxyProtocolUntrusted(t *testing.T) {
	origin := newBackend(t, "a")
	cfg := pool1(PolicyFirst, origin.srv.URL)
	cfg.ProxyProtocol, cfg.ProxyProtocolFrom = true, []string{"10.0.0.0/8"}
	h := &harness{t: t, reg: prometheus.NewRegistry()}
	p, err := New(cfg, nil, testLogger(t), WithRegistry(h.reg))
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	addr := runProxy(t, p)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if !closedSoon(c) {
		t.Error("an untrusted peer's connection stayed open")
	}
	c.Close()
	eventually(t, "untrusted counted", func() bool {
		v, _ := h.metric("vigil_proxy_proxy_protocol_errors_total", map[string]string{"reason": ppUntrusted})
		return v == 1
	})
	if n := origin.hits.Load(); n != 0 {
		t.Errorf("the origin got %d requests", n)
	}

	for _, tc := range []struct {
		on   bool
		from []string
		err  string
	}{
		{true, nil, "proxy_protocol_from: required with proxy_protocol"},
		{false, []string{"10.0.0.0/8"}, "proxy_protocol_from: only with proxy_protocol: true"},
		{true, []string{"10.0.0.0/8", "lb.example.com"}, `proxy_protocol_from[1]: "lb.example.com": want an IP address or a CIDR`},
		{true, []string{"10.0.0.0/33"}, `proxy_protocol_from[0]: "10.0.0.0/33": want an IP address or a CIDR`},
	} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.ProxyProtocol, cfg.ProxyProtocolFrom = tc.on, tc.from
		if err := cfg.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v %q: error %v, want %q", tc.on, tc.from, err, tc.err)
		}
	}
}
