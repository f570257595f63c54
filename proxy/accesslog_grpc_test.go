package proxy

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestAccessLogGRPCStatus: a gRPC call's line carries the grpc-status the
// origin sent, in its trailer or in a trailers-only head, as a string
// ("grpc_status":"14"); calls whose origin sent none and other requests
// have no grpc_status.
func TestAccessLogGRPCStatus(t *testing.T) {
	origin := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		switch r.URL.Path {
		case "/svc/Trailer":
			w.Header().Set("Trailer", "Grpc-Status")
			w.WriteHeader(200)
			io.WriteString(w, "\x00\x00\x00\x00\x00")
			w.Header().Set("Grpc-Status", "14")
		case "/svc/Head": // trailers-only
			w.Header().Set("Grpc-Status", "5")
			w.WriteHeader(200)
		case "/svc/None":
			w.WriteHeader(200)
			io.WriteString(w, "\x00\x00\x00\x00\x00")
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Grpc-Status", "3") // not a gRPC call: not logged
			io.WriteString(w, "plain")
		}
	})
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.AccessLog = path
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	for _, p := range []string{"/svc/Trailer", "/svc/Head", "/svc/None", "/plain"} {
		method, ct := "POST", "application/grpc"
		if p == "/plain" {
			method, ct = "GET", ""
		}
		req, _ := http.NewRequest(method, "https://"+addr+p, strings.NewReader(""))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
			req.Header.Set("TE", "trailers")
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	h.p.closeAccessLog()
	want := map[string]string{"/svc/Trailer": `"grpc_status":"14"`, "/svc/Head": `"grpc_status":"5"`, "/svc/None": "", "/plain": ""}
	lines := readLines(t, path)
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		w, ok := want[m["path"].(string)]
		switch {
		case !ok:
			t.Errorf("unexpected line %s", l)
		case w == "" && strings.Contains(l, "grpc_status"):
			t.Errorf("grpc_status on a line without one: %s", l)
		case w != "" && !strings.Contains(l, `"status":200,`+w+`,"bytes":`):
			t.Errorf("want %s after the status: %s", w, l)
		}
	}
}
