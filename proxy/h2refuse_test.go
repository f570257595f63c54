package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptrace"
	"testing"

	"golang.org/x/net/http2"
)

// TestHTTP2RefusalKeepsConnection: a request the router refuses over
// HTTP/2 (421 for a host no pool serves, 405 for TRACE) is answered on its
// stream and the connection stays open for the next request (was: every
// refusal ended the connection with a GOAWAY, as Connection: close does on
// net/http's HTTP/2 server, so the client paid a new TLS handshake).
func TestHTTP2RefusalKeepsConnection(t *testing.T) {
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	cfg.Pools[0].Hosts = []string{"localhost"}
	addr, roots := runTLSProxy(t, cfg)
	tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	do := func(method, host string) (int, bool) {
		t.Helper()
		reused := false
		req, err := http.NewRequest(method, "https://"+addr+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		}))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, host, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused
	}
	if code, _ := do("GET", "localhost"); code != 200 {
		t.Fatalf("GET: %d", code)
	}
	for _, tc := range []struct {
		method, host string
		code         int
	}{{"GET", "nopool.example", 421}, {"TRACE", "localhost", 405}} {
		if code, reused := do(tc.method, tc.host); code != tc.code || !reused {
			t.Fatalf("%s %s: %d (reused %v), want %d on the open connection", tc.method, tc.host, code, reused, tc.code)
		}
		if code, reused := do("GET", "localhost"); code != 200 || !reused {
			t.Fatalf("GET after the %d: %d, reused %v; want 200 on the same connection", tc.code, code, reused)
		}
	}
}
