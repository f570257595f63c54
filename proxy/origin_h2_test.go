package proxy

import (
	"bufio"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// h2cOrigin serves h with HTTP/2 only, prior knowledge over plain TCP.
func h2cOrigin(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// protoEcho answers with the protocol the request arrived in and a trailer.
func protoEcho(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("X-Origin", name)
		io.WriteString(w, r.Proto)
		w.Header().Set("X-Checksum", "abc")
	}
}

// TestOriginHTTP2: with origin_protocol http2, the pool's http:// origins
// get HTTP/2 with prior knowledge (an origin that speaks nothing else) and
// its https:// origins HTTP/2 by ALPN; answers and trailers come back to
// HTTP/1.1 clients; failover to the next origin works as over HTTP/1.1.
func TestOriginHTTP2(t *testing.T) {
	plain := h2cOrigin(t, protoEcho("h2c"))

	tlsSrv := httptest.NewUnstartedServer(protoEcho("h2"))
	tlsSrv.EnableHTTP2 = true
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	caFile := filepath.Join(t.TempDir(), "origin-ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600)

	cfg := Config{Listen: "127.0.0.1:0", Pools: []PoolConfig{
		{Name: "h2c", PathPrefix: "/h2c", OriginProtocol: OriginHTTP2, Policy: PolicyFirst,
			Origins: []OriginConfig{{URL: deadURL(t)}, {URL: plain}}},
		{Name: "h2", PathPrefix: "/h2", OriginProtocol: OriginHTTP2, TLS: OriginTLSConfig{CAFile: caFile},
			Origins: []OriginConfig{{URL: tlsSrv.URL}}},
	}}
	h := start(t, cfg, nil, false)
	for _, tc := range []struct{ path, origin string }{{"/h2c/x", "h2c"}, {"/h2/x", "h2"}} {
		for i := 0; i < 3; i++ { // the second and third reuse the connection
			code, body, hdr := h.do("GET", tc.path, "")
			if code != 200 || body != "HTTP/2.0" || hdr.Get("X-Origin") != tc.origin {
				t.Fatalf("GET %s: %d %q from %q, want 200 HTTP/2.0 from %s", tc.path, code, body, hdr.Get("X-Origin"), tc.origin)
			}
		}
	}
	// A WebSocket upgrade cannot go over HTTP/2: 501, and no origin asked.
	before := h.metricSum("vigil_proxy_tries_total")
	if code, body, _ := h.do("GET", "/h2c/ws", "", "Connection", "Upgrade", "Upgrade", "websocket",
		"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="); code != 501 || !strings.Contains(body, "origin_protocol http1") {
		t.Errorf("WebSocket upgrade to an HTTP/2 pool: %d %q, want 501 naming origin_protocol", code, body)
	}
	if after := h.metricSum("vigil_proxy_tries_total"); after != before {
		t.Errorf("the upgrade was tried on origins (%v tries before, %v after)", before, after)
	}
	// Trailers over HTTP/1.1 chunked, read raw.
	c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /h2c/t HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if got := resp.Trailer.Get("X-Checksum"); got != "abc" {
		t.Errorf("trailer X-Checksum from an HTTP/2 origin: %q, want abc", got)
	}
}

// grpcEcho is a gRPC-style origin: it answers a call (Content-Type
// application/grpc) at once, echoes each line of the request stream as it
// arrives and ends with a grpc-status trailer; X-Proto-At-Origin says which
// protocol the call arrived in.
func grpcEcho(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") != "application/grpc" {
		http.Error(w, "not grpc", 415)
		return
	}
	w.Header().Set("Trailer", "Grpc-Status")
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("X-Proto-At-Origin", r.Proto)
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
	br := bufio.NewReader(r.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		io.WriteString(w, "echo "+line)
		w.(http.Flusher).Flush()
	}
	w.Header().Set("Grpc-Status", "0")
}

// checkGRPCStream runs a bidirectional call to url through rt against a
// grpcEcho origin: the second message is sent only after the echo of the
// first arrived (a proxy buffering the request body never delivers it);
// both sides must speak HTTP/2 and the grpc-status trailer must arrive.
func checkGRPCStream(t *testing.T, rt http.RoundTripper, url string) {
	t.Helper()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", url, pr)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := rt.RoundTrip(req)
		done <- result{resp, err}
	}()
	if _, err := io.WriteString(pw, "one\n"); err != nil {
		t.Fatal(err)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no answer head within 5s of the first message: the request body is held back")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	defer res.resp.Body.Close()
	if res.resp.ProtoMajor != 2 || res.resp.Header.Get("X-Proto-At-Origin") != "HTTP/2.0" {
		t.Fatalf("client got %s, origin saw %q; want HTTP/2 on both sides", res.resp.Proto, res.resp.Header.Get("X-Proto-At-Origin"))
	}
	br := bufio.NewReader(res.resp.Body)
	for _, msg := range []string{"one", "two"} {
		if msg != "one" {
			io.WriteString(pw, msg+"\n")
		}
		got := make(chan string, 1)
		go func() { l, _ := br.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			if l != "echo "+msg+"\n" {
				t.Fatalf("got %q, want the echo of %q", l, msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no echo of %q within 5s: the stream is not passed message by message", msg)
		}
	}
	pw.Close()
	io.ReadAll(br)
	if got := res.resp.Trailer.Get("Grpc-Status"); got != "0" {
		t.Errorf("grpc-status trailer %q, want 0", got)
	}
}

// TestOriginHTTP2GRPCStream: a gRPC-style bidirectional stream (HTTP/2 from
// the client to the TLS listener, HTTP/2 to an h2c origin) goes through
// message by message, trailers included.
func TestOriginHTTP2GRPCStream(t *testing.T) {
	cfg := pool1(PolicyFirst, h2cOrigin(t, grpcEcho))
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	_, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	checkGRPCStream(t, tr, "https://"+addr+"/svc.Echo/Chat")
}

// TestOriginProtocolConfig: an unknown origin_protocol names the key.
func TestOriginProtocolConfig(t *testing.T) {
	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.Pools[0].OriginProtocol = "h3"
	err := cfg.ValidateAndSetDefaults()
	if err == nil || !strings.Contains(err.Error(), `origin_protocol: "h3": want "http1" or "http2"`) {
		t.Fatalf("error %v", err)
	}
}

// metricSum adds up every series of a counter family.
func (h *harness) metricSum(name string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
