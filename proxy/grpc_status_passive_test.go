package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGRPCUnavailableEjects: an origin that answers every gRPC call with
// UNAVAILABLE (its database is gone, it is shutting down) is taken out by
// the consecutive rule, whether the status comes trailers-only or in the
// trailer after a message, as Envoy's outlier detection maps grpc-status
// 14 to 503. Such answers are HTTP 200s, and the origin used to look
// healthy to every passive rule. A status a client can provoke
// (INTERNAL for a malformed message, UNIMPLEMENTED, DEADLINE_EXCEEDED) is
// not a failure by default, and the answers reach the client unchanged.
func TestGRPCUnavailableEjects(t *testing.T) {
	var badCalls, goodCalls atomic.Int64
	answer := func(w http.ResponseWriter, status string, trailer bool) {
		w.Header().Set("Content-Type", "application/grpc")
		if !trailer {
			w.Header().Set("Grpc-Status", status)
			return
		}
		w.Header().Set("Trailer", "Grpc-Status")
		w.Write([]byte("\x00\x00\x00\x00\x00"))
		w.Header().Set("Grpc-Status", status)
	}
	bad := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		badCalls.Add(1)
		switch r.URL.Path {
		case "/svc/Internal":
			answer(w, "13", false)
		case "/svc/Trailer":
			answer(w, "14", true)
		default:
			answer(w, "14", false)
		}
	})
	good := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		goodCalls.Add(1)
		answer(w, "0", true)
	})
	cfg := pool1(PolicyFirst, bad, good)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	call := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", "https://"+addr+path, strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Header.Set("Content-Type", "application/grpc")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
	}
	for i := 0; i < 6; i++ {
		if st := call("/svc/Internal"); st != "13" {
			t.Fatalf("INTERNAL call %d: grpc-status %q, want 13 passed through", i+1, st)
		}
	}
	if o := h.p.Origins()[0]; o.PassiveEjected {
		t.Fatalf("6 INTERNAL answers ejected the origin (%s): a client sending malformed messages could eject healthy origins", o.EjectionDetail)
	}
	for i, path := range []string{"/svc/Trailer", "/svc/Trailer", "/svc/Head", "/svc/Head", "/svc/Trailer"} {
		if st := call(path); st != "14" {
			t.Fatalf("call %d to %s: grpc-status %q, want 14 passed through", i+1, path, st)
		}
	}
	o := h.p.Origins()[0]
	if !o.PassiveEjected || !strings.Contains(o.EjectionDetail, "5 grpc_status") {
		t.Fatalf("after 5 UNAVAILABLE answers: passive_ejected %v, detail %q; want ejected by consecutive_5xx, 5 grpc_status", o.PassiveEjected, o.EjectionDetail)
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": "grpc_status"}); v != 5 {
		t.Errorf("vigil_proxy_tries_total{result=grpc_status} = %v, want 5", v)
	}
	before := badCalls.Load()
	if st := call("/svc/Head"); st != "0" || badCalls.Load() != before || goodCalls.Load() != 1 {
		t.Errorf("after the ejection: grpc-status %q, calls to the ejected origin +%d, to the other %d; want 0 from the other", st, badCalls.Load()-before, goodCalls.Load())
	}
}

// TestGRPCFailureStatusesConfig: grpc_failure_statuses takes names in any
// case or numbers; a mistake names the key and the entry.
func TestGRPCFailureStatusesConfig(t *testing.T) {
	p := PassiveConfig{GRPCFailureStatuses: []string{"unavailable", "13"}}
	if err := p.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if !p.grpcFailed("14") || !p.grpcFailed("13") || p.grpcFailed("0") || p.grpcFailed("2") || p.grpcFailed("x") {
		t.Errorf("statuses %v read as mask %b", p.GRPCFailureStatuses, p.grpcFail)
	}
	none := PassiveConfig{GRPCFailureStatuses: []string{}}
	none.ValidateAndSetDefaults()
	def := PassiveConfig{}
	def.ValidateAndSetDefaults()
	if none.grpcFailed("14") || !def.grpcFailed("14") || def.grpcFailed("13") {
		t.Errorf("[] should count none (mask %b), omitted UNAVAILABLE only (mask %b)", none.grpcFail, def.grpcFail)
	}
	for _, tc := range []struct{ v, want string }{
		{"UNAVAILBLE", `grpc_failure_statuses[1]: "UNAVAILBLE" is not a gRPC status`},
		{"OK", "grpc_failure_statuses[1]: OK (0) is success"},
		{"17", `grpc_failure_statuses[1]: "17" is not a gRPC status`},
	} {
		p := PassiveConfig{GRPCFailureStatuses: []string{"INTERNAL", tc.v}}
		if err := p.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.v, err, tc.want)
		}
	}
}

// TestGRPCResponsesMetric: vigil_proxy_grpc_responses_total counts gRPC
// calls by the origin that answered and their grpc-status, whether it came
// trailers-only or in the trailer, and the proxy's own gRPC answers under
// origin "none" (UNAVAILABLE when no origin answers). The calls' HTTP code
// is 200 in vigil_proxy_requests_total, so without it an SRE could not see
// an error ratio in the metrics.
func TestGRPCResponsesMetric(t *testing.T) {
	origin := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		switch r.URL.Path {
		case "/svc/Ok":
			w.Header().Set("Trailer", "Grpc-Status")
			w.Write([]byte("\x00\x00\x00\x00\x00"))
			w.Header().Set("Grpc-Status", "0")
		case "/svc/Internal":
			w.Header().Set("Grpc-Status", "13")
		default:
			w.Header().Set("Grpc-Status", "not-a-code")
		}
	})
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	cfg.Pools[0].Hosts = []string{"127.0.0.1"}
	cfg.Pools = append(cfg.Pools, PoolConfig{Name: "dead", Hosts: []string{"dead.example.test"}, OriginProtocol: OriginHTTP2,
		Origins: []OriginConfig{{URL: deadURL(t)}}})
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	call := func(host, path string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "https://"+addr+path, strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Host = host
		req.Header.Set("Content-Type", "application/grpc")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	call("127.0.0.1", "/svc/Ok")
	call("127.0.0.1", "/svc/Ok")
	call("127.0.0.1", "/svc/Internal")
	call("127.0.0.1", "/svc/Odd")
	call("dead.example.test", "/svc/Ok")
	for _, c := range []struct {
		pool, origin, status string
		want                 float64
	}{{"web", "o0", "0", 2}, {"web", "o0", "13", 1}, {"web", "o0", "invalid", 1}, {"dead", "none", "14", 1}} {
		if v, _ := h.metric("vigil_proxy_grpc_responses_total", map[string]string{"pool": c.pool, "origin": c.origin, "grpc_status": c.status}); v != c.want {
			t.Errorf("vigil_proxy_grpc_responses_total{pool=%s,origin=%s,grpc_status=%s} = %v, want %v", c.pool, c.origin, c.status, v, c.want)
		}
	}
}
