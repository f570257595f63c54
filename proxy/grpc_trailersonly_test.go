package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// relayHealth is a health service whose answers are trailers-only: Check
// of "down" fails with UNAVAILABLE, Watch ends OK without a message.
type relayHealth struct {
	healthpb.UnimplementedHealthServer
	checks atomic.Int64
}

func (s *relayHealth) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.checks.Add(1)
	if req.Service == "down" {
		return nil, status.Error(codes.Unavailable, "down for test")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (s *relayHealth) Watch(*healthpb.HealthCheckRequest, healthpb.Health_WatchServer) error {
	return nil
}

// grpcOrigin serves a real grpc-go server (h2c) with relayHealth.
func grpcOrigin(t *testing.T) (string, *relayHealth) {
	t.Helper()
	srv := grpc.NewServer()
	hs := &relayHealth{}
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String(), hs
}

// grpcRelayProxy runs the proxy on engineName with an h2c plain listener
// and a TLS listener: it returns the harness, both addresses and the roots
// trusting the TLS listener.
func grpcRelayProxy(t *testing.T, cfg Config, engineName string) (*harness, string, string, *x509.CertPool) {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.Engine = engineName
	cfg.H2C = true
	cfg.Listen = "127.0.0.1:0"
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	h := &harness{t: t, reg: prometheus.NewRegistry()}
	p, err := New(cfg, nil, testLogger(t), WithRegistry(h.reg))
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	addrs := runProxyOn(t, p, 2)
	return h, addrs[0], addrs[1], roots
}

// grpcDial is a grpc-go client of addr, over TLS when roots is not nil.
func grpcDial(t *testing.T, addr string, roots *x509.CertPool) *grpc.ClientConn {
	t.Helper()
	creds := insecure.NewCredentials()
	if roots != nil {
		creds = credentials.NewTLS(&tls.Config{RootCAs: roots})
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// h2Frame is one frame an HTTP/2 peer sent on the stream looked at.
type h2Frame struct {
	typ       http2.FrameType
	endStream bool
	fields    map[string]string
	data      int
}

func (f h2Frame) String() string {
	s := f.typ.String()
	if f.endStream {
		s += "+END_STREAM"
	}
	if f.fields != nil {
		s += " " + fmtFields(f.fields)
	}
	if f.typ == http2.FrameData {
		s += " len=" + strconv.Itoa(f.data)
	}
	return s
}

func fmtFields(m map[string]string) string {
	var b strings.Builder
	for _, k := range []string{":status", "content-type", "content-length", "grpc-status", "grpc-message"} {
		if v, ok := m[k]; ok {
			b.WriteString(" " + k + "=" + v)
		}
	}
	return strings.TrimPrefix(b.String(), " ")
}

// h2cCall sends one request on stream 1 of a new h2c connection to addr,
// frame by frame: HEADERS with fields, ending the stream when body is nil,
// else then one DATA frame with body and END_STREAM. It returns the frames
// of the answer on stream 1, up to the one that ends it, and how long that
// took; it fails the test after wait.
func h2cCall(t *testing.T, addr string, fields [][2]string, body []byte, wait time.Duration) ([]h2Frame, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	start := time.Now()
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range fields {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: body == nil})
	if body != nil {
		fr.WriteData(1, true, body)
	}
	var got []h2Frame
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %v and frames %v: %v", time.Since(start).Round(time.Millisecond), got, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v after frames %v", f.ErrCode, got)
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				t.Fatalf("RST_STREAM %v after frames %v", f.ErrCode, got)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != 1 {
				continue
			}
			m := map[string]string{}
			for _, hf := range f.Fields {
				m[hf.Name] = hf.Value
			}
			got = append(got, h2Frame{typ: http2.FrameHeaders, endStream: f.StreamEnded(), fields: m})
			if f.StreamEnded() {
				return got, time.Since(start)
			}
		case *http2.DataFrame:
			if f.StreamID != 1 {
				continue
			}
			got = append(got, h2Frame{typ: http2.FrameData, endStream: f.StreamEnded(), data: len(f.Data())})
			if f.StreamEnded() {
				return got, time.Since(start)
			}
		}
	}
}

func grpcFields(addr, path string, extra ...[2]string) [][2]string {
	return append([][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr}, {":path", path},
		{"content-type", "application/grpc"}, {"te", "trailers"}}, extra...)
}

// TestGRPCTrailersOnlyAnswersRelayed: an origin's trailers-only answer (a
// call failed with no message, an unknown method, a stream ended OK with
// no message) reaches a grpc-go client with the origin's status and
// message, on both engines, over h2c and TLS, in one HEADERS frame that
// ends the stream, as nginx relays it. It went out as HEADERS without
// END_STREAM and an empty DATA frame: the client read grpc-status as a
// header, found no trailers and failed the call as INTERNAL ("server closed
// the stream without sending trailers"), while the access log and metrics
// said 14.
func TestGRPCTrailersOnlyAnswersRelayed(t *testing.T) {
	origin, hs := grpcOrigin(t)
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].OriginProtocol = OriginHTTP2
			cfg.Pools[0].Passive.Consecutive5xx = -1 // UNAVAILABLE answers must not eject the origin here
			h, plain, tlsAddr, roots := grpcRelayProxy(t, cfg, engineName)
			for _, l := range []struct {
				name  string
				addr  string
				roots *x509.CertPool
			}{{"h2c", plain, nil}, {"tls", tlsAddr, roots}} {
				cc := grpcDial(t, l.addr, l.roots)
				hc := healthpb.NewHealthClient(cc)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "down"})
				if s := status.Convert(err); s.Code() != codes.Unavailable || s.Message() != "down for test" {
					t.Errorf("%s: Check(down): %v; want code = Unavailable desc = down for test", l.name, err)
				}
				resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
				if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("%s: Check(): %v %v; want SERVING", l.name, resp, err)
				}
				err = cc.Invoke(ctx, "/grpc.health.v1.Health/Nope", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
				if s := status.Convert(err); s.Code() != codes.Unimplemented || !strings.Contains(s.Message(), "Nope") {
					t.Errorf("%s: unknown method: %v; want code = Unimplemented naming the method", l.name, err)
				}
				w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
				if err == nil {
					_, err = w.Recv()
				}
				if err != io.EOF {
					t.Errorf("%s: a stream ended OK without a message: %v; want io.EOF (status OK)", l.name, err)
				}
				cancel()
			}
			if v, _ := h.metric("vigil_proxy_grpc_responses_total", map[string]string{"grpc_status": "14"}); v != 2 {
				t.Errorf("vigil_proxy_grpc_responses_total{grpc_status=14} = %v, want 2", v)
			}

			// On the wire: one HEADERS frame with the status, ending the
			// stream.
			msg := []byte{0, 0, 0, 0, 6, 0x0a, 4, 'd', 'o', 'w', 'n'} // HealthCheckRequest{Service: "down"}
			frames, _ := h2cCall(t, plain, grpcFields(plain, "/grpc.health.v1.Health/Check"), msg, 10*time.Second)
			if len(frames) != 1 || frames[0].typ != http2.FrameHeaders || !frames[0].endStream ||
				frames[0].fields[":status"] != "200" || frames[0].fields["grpc-status"] != "14" ||
				frames[0].fields["grpc-message"] != "down for test" || frames[0].fields["content-type"] != "application/grpc" {
				t.Errorf("frames of a trailers-only answer: %v; want one HEADERS+END_STREAM :status=200 content-type=application/grpc grpc-status=14 grpc-message=down for test", frames)
			}
		})
	}
	if hs.checks.Load() == 0 {
		t.Fatal("the origin got no call")
	}
}
