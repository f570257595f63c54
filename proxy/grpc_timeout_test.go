package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGRPCTimeoutBoundsTheCall: a gRPC call's grpc-timeout, not
// try_timeout, bounds the wait for its answer: a 2 s call with a 5 s
// deadline succeeds behind a 1 s try_timeout (it got 504), and a call to an
// origin that never answers ends just before the client's deadline with
// the origin charged a timeout (it ended as the client's 499, so a hung
// gRPC origin was never ejected).
func TestGRPCTimeoutBoundsTheCall(t *testing.T) {
	origin := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		d := 2 * time.Second
		if r.URL.Path == "/svc/Hang" {
			d = 10 * time.Second
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", "0")
	})
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.Pools[0].Retry.TryTimeout = time.Second
	cfg.Pools[0].ConnectTimeout = 500 * time.Millisecond
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	call := func(path, timeout string) (string, time.Duration) {
		req, _ := http.NewRequest("POST", "https://"+addr+path, strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Grpc-Timeout", timeout)
		start := time.Now()
		resp, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d, want 200 (gRPC's status is in grpc-status)", path, resp.StatusCode)
		}
		return resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status"), time.Since(start)
	}
	if status, d := call("/svc/Slow", "5S"); status != "0" {
		t.Errorf("a 2s call with grpc-timeout 5S behind try_timeout 1s: grpc-status %q after %s, want 0", status, d)
	}
	status, d := call("/svc/Hang", "2S")
	if status != "4" || d < 1500*time.Millisecond || d > 2*time.Second {
		t.Errorf("a call to a hung origin with grpc-timeout 2S: grpc-status %q after %s, want 4 (DEADLINE_EXCEEDED) just before 2s", status, d)
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"result": "timeout"}); v != 1 {
		t.Errorf("vigil_proxy_tries_total{result=timeout} = %v, want 1 (the hung origin charged)", v)
	}
}

// TestGRPCShortDeadlinesEjectNoOrigin: a client cannot take healthy origins
// out of rotation by sending calls with deadlines shorter than the origins'
// work. A call whose grpc-timeout is shorter than try_timeout ends with
// DEADLINE_EXCEEDED just before the client gives up, as before, but charges
// the origin nothing: it was never given the time the pool allows. Each
// such call used to be charged a timeout, and five in a row ejected the
// origin (consecutive failures).
func TestGRPCShortDeadlinesEjectNoOrigin(t *testing.T) {
	origin := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", "0")
	})
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.Pools[0].Retry.TryTimeout = 5 * time.Second
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	for i := 0; i < 8; i++ {
		req, _ := http.NewRequest("POST", "https://"+addr+"/svc/Work", strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Grpc-Timeout", "100m")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if st := resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status"); st != "4" {
			t.Fatalf("call %d with grpc-timeout 100m to a 300 ms method: grpc-status %q, want 4 (DEADLINE_EXCEEDED)", i+1, st)
		}
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"result": "timeout"}); v != 0 {
		t.Errorf("vigil_proxy_tries_total{result=timeout} = %v, want 0: the calls' own deadlines were shorter than try_timeout", v)
	}
	if o := h.p.Origins()[0]; o.PassiveEjected || o.EjectionRefused != "" {
		t.Errorf("origin after 8 short-deadline calls: passive_ejected %v, ejection_refused %q; want no passive rule tripped", o.PassiveEjected, o.EjectionRefused)
	}
}
