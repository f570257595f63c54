package proxy

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestOriginHTTP2FallsBackToHTTP1OverTLS: with origin_protocol http2, an
// https:// origin that speaks only HTTP/1.1 (and enforces ALPN, as Go's
// server and nginx 1.21.4+ without http2 do) is spoken to in HTTP/1.1, as
// the README says; offering h2 alone made its handshake fail (502).
func TestOriginHTTP2FallsBackToHTTP1OverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = false
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	cfg := pool1(PolicyFirst, srv.URL)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.Pools[0].TLS = OriginTLSConfig{CAFile: caFile}
	h := start(t, cfg, nil, false)
	for i := 0; i < 2; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "HTTP/1.1" {
			t.Fatalf("GET through an http2 pool to an HTTP/1.1-only TLS origin: %d %q", code, body)
		}
	}
}
