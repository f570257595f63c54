package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProxyAnswersGRPCInGRPCTerms: the proxy's own answers to a gRPC call
// over HTTP/2 are trailers-only gRPC answers, as Envoy's: no origin up is
// UNAVAILABLE (14) and a message over max_body RESOURCE_EXHAUSTED (8), with
// the reason in grpc-message; a plain HTTP 502 or 413 read as UNAVAILABLE
// or UNKNOWN in clients. Other requests still get HTTP errors.
func TestProxyAnswersGRPCInGRPCTerms(t *testing.T) {
	cfg := pool1(PolicyFirst, deadURL(t))
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.MaxBody = 64
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, tc := range []struct {
		name, body, ctype string
		status            int
		grpc, msg         string
	}{
		{"no origin", "\x00\x00\x00\x00\x00", "application/grpc", 200, "14", "Bad Gateway: all origins failed"},
		{"over max_body", strings.Repeat("x", 100), "application/grpc+proto", 200, "8", "Request Entity Too Large"},
		{"not gRPC", "x", "application/json", 502, "", ""},
	} {
		req, _ := http.NewRequest("POST", "https://"+addr+"/svc/M", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		req.ContentLength = int64(len(tc.body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Grpc-Status") != tc.grpc || !strings.HasPrefix(resp.Header.Get("Grpc-Message"), tc.msg) {
			t.Errorf("%s: HTTP %d grpc-status %q grpc-message %q; want %d %q %q…", tc.name, resp.StatusCode,
				resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message"), tc.status, tc.grpc, tc.msg)
		}
		if tc.grpc != "" && resp.Header.Get("Content-Type") != "application/grpc" {
			t.Errorf("%s: content-type %q", tc.name, resp.Header.Get("Content-Type"))
		}
	}
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": "none", "code": "502"}); v != 2 {
		t.Errorf("vigil_proxy_requests_total{origin=none,code=502} = %v, want 2 (gRPC answers counted under the HTTP code meant)", v)
	}
}
