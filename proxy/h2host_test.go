package proxy

import (
	"bufio"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// hostEcho is an origin that answers each request with the Host lines it
// received, one per line.
func hostEcho(t *testing.T) string {
	return checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		tp := textproto.NewReader(br)
		for {
			if _, err := tp.ReadLine(); err != nil {
				return
			}
			var hosts []string
			for {
				l, err := tp.ReadLine()
				if err != nil {
					return
				}
				if l == "" {
					break
				}
				if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Host") {
					hosts = append(hosts, strings.TrimSpace(v))
				}
			}
			body := strings.Join(hosts, "\n")
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
		}
	})
}

// h2Answer reads stream 1's answer on fr: its :status and body.
func h2Answer(t *testing.T, fr *http2.Framer) (status, body string) {
	t.Helper()
	dec := hpack.NewDecoder(4096, nil)
	var b strings.Builder
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the HTTP/2 answer: %v (status %q, body %q so far)", err, status, b.String())
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			return "RST_STREAM " + f.ErrCode.String(), ""
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeNo {
				return "GOAWAY " + f.ErrCode.String(), ""
			}
		case *http2.HeadersFrame:
			hf, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hf {
				if h.Name == ":status" {
					status = h.Value
				}
			}
			if f.StreamEnded() {
				return status, b.String()
			}
		case *http2.DataFrame:
			b.Write(f.Data())
			if f.StreamEnded() {
				return status, b.String()
			}
		}
	}
}

// TestHTTP2HostField: over HTTP/2 a request may carry a host field beside
// :authority (RFC 9113 §8.3.1). The origin gets exactly one Host, the
// routed one (was: a second Host line with the client's unchecked value
// after the routed one); a host that differs from :authority is a malformed
// request, refused with 400; a host alone (no :authority) is
// routed and checked like :authority.
func TestHTTP2HostField(t *testing.T) {
	cfg := pool1(PolicyFirst, hostEcho(t))
	cfg.Pools[0].Hosts = []string{"localhost"}
	addr, roots := runTLSProxy(t, cfg)
	for _, tc := range []struct {
		name   string
		fields [][2]string
		status string
		body   string
	}{
		{"same host", [][2]string{{":authority", "localhost"}, {"host", "localhost"}}, "200", "localhost"},
		{"same host, other case", [][2]string{{":authority", "localhost"}, {"host", "LOCALHOST"}}, "200", "localhost"},
		{"other host", [][2]string{{":authority", "localhost"}, {"host", "evil.example"}}, "400", ""},
		{"malformed host", [][2]string{{":authority", "localhost"}, {"host", "evil.com#.localhost/<x> y"}}, "400", ""},
		{"host alone", [][2]string{{"host", "localhost"}}, "200", "localhost"},
		{"host alone, another pool's", [][2]string{{"host", "evil.example"}}, "421", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", "/x"}}
			for _, f := range tc.fields {
				if strings.HasPrefix(f[0], ":") {
					fields = append([][2]string{f}, fields...)
				} else {
					fields = append(fields, f)
				}
			}
			_, fr := h2Open(t, addr, roots, fields)
			status, body := h2Answer(t, fr)
			if status != tc.status || (tc.status == "200" && body != tc.body) {
				t.Fatalf("status %s, origin saw Host lines %q; want %s %q", status, body, tc.status, tc.body)
			}
		})
	}
}

// TestHTTP2ErrorsCounted: an HTTP/2 request that Go's HTTP/2 server resets
// as malformed (no :scheme) is counted in vigil_proxy_http2_errors_total
// under the type that server gives it (was: counted nowhere).
func TestHTTP2ErrorsCounted(t *testing.T) {
	f := startTLSFront(t, pool1(PolicyFirst, newBackend(t, "a").srv.URL))
	_, fr := h2Open(t, f.addr, f.roots, [][2]string{{":method", "GET"}, {":authority", "x"}, {":path", "/x"}})
	if status, _ := h2Answer(t, fr); status != "RST_STREAM PROTOCOL_ERROR" {
		t.Fatalf("answer %q, want the stream reset (PROTOCOL_ERROR)", status)
	}
	if v, _ := f.h.metric("vigil_proxy_http2_errors_total", map[string]string{"type": "stream_PROTOCOL_ERROR_bad_path_method"}); v != 1 {
		t.Fatalf("vigil_proxy_http2_errors_total{type=stream_PROTOCOL_ERROR_bad_path_method} = %v, want 1", v)
	}
}
