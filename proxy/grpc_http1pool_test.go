package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGRPCToHTTP1PoolRefused: a streaming gRPC call routed to a pool that
// speaks HTTP/1.1 to its origins (origin_protocol: http1) gets at once a
// gRPC UNIMPLEMENTED answer naming the pool and the key to set, and no
// origin sees it. Was: the proxy buffered the call's body, so the call
// waited for its deadline and the client got no answer.
func TestGRPCToHTTP1PoolRefused(t *testing.T) {
	b := newBackend(t, "a")
	cfg := pool1(PolicyFirst, b.srv.URL)
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", "https://"+addr+"/svc.Echo/Chat", pr)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	io.WriteString(pw, "one\n") // the stream stays open
	var resp *http.Response
	select {
	case resp = <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("a streaming gRPC call to an http1 pool got no answer within 3s")
	}
	if resp == nil {
		t.FailNow()
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	st, msg := resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	if st == "" {
		st, msg = resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	}
	if resp.StatusCode != 200 || st != "12" || !strings.Contains(msg, "origin_protocol: http2") || !strings.Contains(msg, "pool web") {
		t.Fatalf("answer: %d grpc-status %q grpc-message %q", resp.StatusCode, st, msg)
	}
	if n := b.hits.Load(); n != 0 {
		t.Fatalf("the origin saw %d requests, want 0", n)
	}
	for _, o := range h.p.Origins() {
		if !o.Available {
			t.Errorf("origin %s taken out: %v", o.Name, o.Why)
		}
	}
}
