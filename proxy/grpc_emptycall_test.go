package proxy

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGRPCEmptyBodyCallAnswered: a gRPC call with no message (HEADERS
// ending the stream, or HEADERS then an empty DATA with END_STREAM and
// content-length 0) reaches the origin as nginx sends it, HEADERS then an
// empty DATA frame with END_STREAM, so a grpc-go origin answers at once.
// It went out as HEADERS with END_STREAM, which grpc-go never answers: any
// client could hold calls for try_timeout and have the origin charged a
// timeout for each, and a dozen of them ejected a healthy origin.
func TestGRPCEmptyBodyCallAnswered(t *testing.T) {
	origin, _ := grpcOrigin(t)
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].OriginProtocol = OriginHTTP2
			cfg.Pools[0].Retry.TryTimeout = 3 * time.Second
			h, plain, _, _ := grpcRelayProxy(t, cfg, engineName)
			path := "/grpc.health.v1.Health/Check"
			for _, tc := range []struct {
				name   string
				fields [][2]string
				body   []byte
			}{
				{"HEADERS+END_STREAM", grpcFields(plain, path), nil},
				{"HEADERS, DATA+END_STREAM len 0, content-length 0", grpcFields(plain, path, [2]string{"content-length", "0"}), []byte{}},
			} {
				for i := 0; i < 6; i++ {
					frames, took := h2cCall(t, plain, tc.fields, tc.body, 10*time.Second)
					last := frames[len(frames)-1]
					gs := last.fields["grpc-status"]
					if took > 2*time.Second || gs == "" || gs == "0" || gs == "4" {
						t.Fatalf("%s, call %d: answer %v after %v; want the origin's own error status at once", tc.name, i+1, frames, took.Round(time.Millisecond))
					}
				}
			}
			if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": "timeout"}); v != 0 {
				t.Errorf("vigil_proxy_tries_total{result=timeout} = %v, want 0", v)
			}
			if o := h.p.Origins()[0]; o.PassiveEjected {
				t.Errorf("origin ejected by calls without a message: %s", o.EjectionDetail)
			}
		})
	}
}

// TestGRPCEmptyBodyCallTimeoutNotCharged: an origin that does not answer a
// gRPC call without a message is not charged the timeout (any client can
// send such calls); the client gets DEADLINE_EXCEEDED after try_timeout and
// the origin's body arrives as HEADERS then an empty DATA frame (a body of
// unknown length, not one that ended with the head).
func TestGRPCEmptyBodyCallTimeoutNotCharged(t *testing.T) {
	var ended, unended atomic.Int64
	origin := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Body == http.NoBody || r.ContentLength == 0 {
			ended.Add(1)
		} else {
			unended.Add(1)
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			ended.Store(0)
			unended.Store(0)
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].OriginProtocol = OriginHTTP2
			cfg.Pools[0].Retry.TryTimeout = 500 * time.Millisecond
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			cfg.Pools[0].Passive.Consecutive5xx = 2
			cfg.AccessLog = filepath.Join(t.TempDir(), "access.log")
			h, plain, _, _ := grpcRelayProxy(t, cfg, engineName)
			for i := 0; i < 3; i++ {
				frames, took := h2cCall(t, plain, grpcFields(plain, "/svc/M"), nil, 10*time.Second)
				last := frames[len(frames)-1]
				if gs := last.fields["grpc-status"]; gs != "4" || took > 5*time.Second {
					t.Fatalf("call %d: %v after %v; want grpc-status 4 after try_timeout", i+1, frames, took.Round(time.Millisecond))
				}
			}
			if e, u := ended.Load(), unended.Load(); e != 0 || u == 0 {
				t.Errorf("the origin saw %d bodies that ended with the head, %d that did not; want all HEADERS then DATA", e, u)
			}
			if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": "timeout"}); v != 0 {
				t.Errorf("vigil_proxy_tries_total{result=timeout} = %v, want 0 (not the origin's fault)", v)
			}
			if o := h.p.Origins()[0]; o.PassiveEjected {
				t.Errorf("origin ejected by calls without a message: %s", o.EjectionDetail)
			}
			h.p.closeAccessLog()
			lines := readLines(t, cfg.AccessLog)
			if len(lines) != 3 || !strings.Contains(lines[0], `"upstreams":[{"origin":"o0","cause":"empty_call"}]`) {
				t.Errorf("access log: %q; want 3 lines with upstreams [{origin o0, cause empty_call}]", lines)
			}
		})
	}
}
