package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Backend modes.
const (
	modeOK      = iota // 200 "ok <name>"
	mode503            // 503
	modeHang           // never answers (until the test ends)
	modeSlow           // answers 200 after 50ms
	modePartial        // every 5th request answers 503
)

// backend is one origin: a real HTTP server counting what it received.
type backend struct {
	name string
	srv  *httptest.Server
	mode atomic.Int32
	hits atomic.Int64 // every request but return probes
	// probes counts the proxy's return probes (passive.return_probe), which
	// hits leaves out: tests count client traffic.
	probes atomic.Int64
	posts  atomic.Int64 // POST requests
	// abandoned counts hanging requests whose connection the proxy closed
	abandoned atomic.Int64
	mu        sync.Mutex
	seen      map[string]int // X-Req-Id → times received (replay detection)
	last      http.Header
	body      string
	done      chan struct{}
}

func newBackend(t *testing.T, name string) *backend {
	t.Helper()
	b := &backend{name: name, seen: map[string]int{}, done: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		probe := r.Header.Get("User-Agent") == probeUserAgent
		if probe {
			b.probes.Add(1)
		} else {
			b.hits.Add(1)
			b.mu.Lock()
			if r.Method == http.MethodPost {
				b.posts.Add(1)
			}
			if id := r.Header.Get("X-Req-Id"); id != "" {
				b.seen[id]++
			}
			b.last = r.Header.Clone()
			b.body = string(body)
			b.mu.Unlock()
		}
		switch b.mode.Load() {
		case mode503:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "down "+name)
			return
		case modeHang:
			select {
			case <-r.Context().Done():
				if !probe {
					b.abandoned.Add(1)
				}
			case <-b.done:
			}
			return
		case modeSlow:
			time.Sleep(50 * time.Millisecond)
		case modePartial:
			if !probe && b.hits.Load()%5 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		w.Header().Set("X-Origin", name)
		io.WriteString(w, "ok "+name)
	}))
	t.Cleanup(func() { close(b.done); b.srv.CloseClientConnections(); b.srv.Close() })
	return b
}

// deadURL is an address nothing listens on (listen, then close).
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// memSource is an in-memory reporting.Source.
type memSource struct {
	mu sync.Mutex
	vs []reporting.Verdict
}

var _ reporting.Source = (*memSource)(nil)

func (m *memSource) set(vs ...reporting.Verdict) { m.mu.Lock(); m.vs = vs; m.mu.Unlock() }
func (m *memSource) Verdicts(_ context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]reporting.Verdict(nil), m.vs...), nil
}

// harness is a proxy in front of backends, served on a real socket.
type harness struct {
	t       *testing.T
	p       *Proxy
	front   *testFront
	reg     *prometheus.Registry
	cancel  context.CancelFunc
	bgDone  chan struct{}
	client  *http.Client
	signals *signalRecorder
}

type signalRecorder struct {
	mu sync.Mutex
	s  []reporting.Signal
}

func (r *signalRecorder) PublishSignals(_ context.Context, s []reporting.Signal) error {
	r.mu.Lock()
	r.s = append(r.s, s...)
	r.mu.Unlock()
	return nil
}

func (r *signalRecorder) all() []reporting.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reporting.Signal(nil), r.s...)
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// pool1 is a one-pool config over the given origin URLs.
func pool1(policy string, urls ...string) Config {
	pc := PoolConfig{Name: "web", Policy: policy}
	for i, u := range urls {
		pc.Origins = append(pc.Origins, OriginConfig{Target: fmt.Sprintf("o%d", i), URL: u})
	}
	return Config{Listen: "127.0.0.1:0", Pools: []PoolConfig{pc}}
}

func urls(bs ...*backend) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.srv.URL)
	}
	return out
}

// start builds the proxy; background loops run unless noBackground.
func start(t *testing.T, cfg Config, src reporting.Source, background bool) *harness {
	t.Helper()
	return startWith(t, cfg, src, background, testEngine())
}

// startWith is start with the front served by the named engine.
func startWith(t *testing.T, cfg Config, src reporting.Source, background bool, engineName string) *harness {
	t.Helper()
	return startLog(t, cfg, src, background, engineName, testLogger(t))
}

// startLog is startWith with the proxy logging to log.
func startLog(t *testing.T, cfg Config, src reporting.Source, background bool, engineName string, log *slog.Logger) *harness {
	t.Helper()
	h := &harness{t: t, reg: prometheus.NewRegistry(), signals: &signalRecorder{}, bgDone: make(chan struct{})}
	p, err := New(cfg, src, log, WithRegistry(h.reg), WithSignalSink(h.signals))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	h.front = newTestFrontWith(t, p, engineName)
	h.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 20 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if background {
		go func() { defer close(h.bgDone); p.background(ctx) }()
	} else {
		close(h.bgDone)
	}
	t.Cleanup(func() {
		cancel()
		<-h.bgDone
		h.front.CloseClientConnections()
		h.front.Close()
	})
	return h
}

// do sends one request to the proxy and returns status and body; status 0 on
// a transport error.
func (h *harness) do(method, path string, body string, hdr ...string) (int, string, http.Header) {
	h.t.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.front.URL+path, rb)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error(), resp.Header
	}
	return resp.StatusCode, string(b), resp.Header
}

func (h *harness) pool(name string) *pool {
	for _, pl := range h.p.state.Load().pools {
		if pl.name == name {
			return pl
		}
	}
	h.t.Fatalf("no pool %q", name)
	return nil
}

func (h *harness) origin(pool, name string) *origin {
	for _, o := range h.pool(pool).origins {
		if o.name == name {
			return o
		}
	}
	h.t.Fatalf("no origin %q", name)
	return nil
}

// metric returns the value of a counter/gauge series, and whether it exists.
func (h *harness) metric(name string, labels map[string]string) (float64, bool) {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			}
		}
	}
	return 0, false
}

// eventually polls cond every 10ms for at most 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never happened: %s", what)
}

// testFront serves a proxy's data plane on a real listener with the engine
// named by VIGIL_PROXY_ENGINE (default: the fast engine, as Run).
type testFront struct {
	URL      string
	Listener net.Listener
	std      *httptest.Server
	eng      *engine
}

func testEngine() string {
	if e := os.Getenv("VIGIL_PROXY_ENGINE"); e != "" {
		return e
	}
	return EngineFast
}

func newTestFront(t *testing.T, p *Proxy) *testFront {
	t.Helper()
	return newTestFrontWith(t, p, testEngine())
}

func newTestFrontWith(t *testing.T, p *Proxy, engineName string) *testFront {
	t.Helper()
	cfg := p.state.Load().cfg
	if engineName == EngineStdlib {
		srv := httptest.NewUnstartedServer(p.Handler())
		srv.Config = p.server(cfg)
		srv.Start()
		return &testFront{URL: srv.URL, Listener: srv.Listener, std: srv}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &testFront{URL: "http://" + ln.Addr().String(), Listener: ln, eng: newEngine(p.Handler(), cfg, p.log)}
	go f.eng.Serve(ln)
	return f
}

// CloseClientConnections closes every client connection now.
func (f *testFront) CloseClientConnections() {
	if f.std != nil {
		f.std.CloseClientConnections()
		return
	}
	f.eng.closeAll()
}

// Close stops the listener and waits for the connections to end.
func (f *testFront) Close() {
	if f.std != nil {
		f.std.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f.eng.Shutdown(ctx)
	f.eng.wg.Wait()
}

// websocketEcho is the origin side of a WebSocket upgrade: it hijacks the
// connection, answers 101, and writes back each line it reads with prefix,
// until the tunnel closes or, when lines > 0, after that many lines.
func websocketEcho(w http.ResponseWriter, prefix string, lines int) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	for i := 0; lines <= 0 || i < lines; i++ {
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		io.WriteString(conn, prefix+line)
	}
}
