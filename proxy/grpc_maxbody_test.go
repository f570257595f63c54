package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGRPCStreamOverMaxBodyNotOriginsFault: a client whose gRPC stream goes
// over max_body after the answer began gets its stream ended, and the
// origin is not charged (it was: a reset, so ten such streams ejected a
// healthy origin).
func TestGRPCStreamOverMaxBodyNotOriginsFault(t *testing.T) {
	cfg := pool1(PolicyFirst, h2cOrigin(t, grpcEcho))
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.Pools[0].Passive.Consecutive5xx = 2
	cfg.MaxBody = 64
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	for i := 0; i < 4; i++ {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", "https://"+addr+"/svc.Echo/Chat", pr)
		req.Header.Set("Content-Type", "application/grpc")
		done := make(chan *http.Response, 1)
		go func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		io.WriteString(pw, "one\n")
		var resp *http.Response
		select {
		case resp = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("no answer head")
		}
		if resp == nil {
			t.FailNow()
		}
		br := bufio.NewReader(resp.Body)
		if l, _ := br.ReadString('\n'); l != "echo one\n" {
			t.Fatalf("first echo %q", l)
		}
		go io.WriteString(pw, strings.Repeat("x", 100)+"\n") // over max_body 64
		if _, err := io.ReadAll(br); err == nil {
			t.Errorf("stream %d ended cleanly after the client went over max_body, want an error", i)
		}
		pw.Close()
		resp.Body.Close()
	}
	for _, o := range h.p.Origins() {
		if !o.Available {
			t.Errorf("origin %s taken out after clients went over max_body: %v", o.Name, o.Why)
		}
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"result": "reset"}); v != 0 {
		t.Errorf("%v resets charged to the origin", v)
	}
}
