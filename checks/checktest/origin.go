// Package checktest provides a fault-injectable HTTP origin for tests and
// for `vigil demo`: an Origin serves a few realistic routes on 127.0.0.1 and
// can be switched at runtime into a fault Mode (down, blackhole, 503,
// partial, slow, corrupt, missing_header, flapping, reset).
//
// Routes:
//
//	GET  /healthz     200 "ok"
//	GET  /asset.bin   64 KiB deterministic binary (AssetSHA256), Content-Type
//	                  application/octet-stream, Cache-Control max-age=300,
//	                  Access-Control-Allow-Origin *
//	ANY  /api/*       {"ok":true,"path":"/api/…"}
//	GET  /api/me      {"user":"demo"} with "Authorization: Bearer <token>", else 401
//	POST /login       {"user":"demo","password":"demo"} → {"token":"…"}, else 401
//	GET  /shop        an HTML page rendered by inline JavaScript with a
//	                  #add-to-cart button (POST /api/cart) and #cart-count
//	GET  /            a small HTML index
//
// It also holds NeedDependency for tests that need a real component.
package checktest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Demo credentials accepted by POST /login unless WithCredentials changes
// them.
const (
	DemoUser     = "demo"
	DemoPassword = "demo"
)

// AssetSize is the length of /asset.bin: 64 KiB.
const AssetSize = 64 << 10

var asset = func() []byte {
	b := make([]byte, AssetSize)
	x := uint64(0x9E3779B97F4A7C15) // xorshift64*, fixed seed: same bytes everywhere
	for i := range b {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		b[i] = byte((x * 0x2545F4914F6CDD1D) >> 56)
	}
	return b
}()

var assetSum = func() string { s := sha256.Sum256(asset); return hex.EncodeToString(s[:]) }()

var corruptAsset = func() []byte {
	b := append([]byte(nil), asset...)
	for i := 0; i < len(b); i += 4096 {
		b[i] ^= 0xFF
	}
	return b
}()

// Asset returns a copy of /asset.bin's bytes.
func Asset() []byte { return append([]byte(nil), asset...) }

// AssetSHA256 is the lower-case hex SHA-256 of /asset.bin.
func AssetSHA256() string { return assetSum }

// Option configures an Origin.
type Option func(*Origin)

// WithAddr listens on addr (e.g. "127.0.0.1:9201") instead of
// "127.0.0.1:0".
func WithAddr(addr string) Option { return func(o *Origin) { o.addr = addr } }

// WithMode starts the origin in mode m. With ModeDown it binds once to
// learn its port, then closes the listener until another mode is set.
// Default ModeOK.
func WithMode(m Mode) Option { return func(o *Origin) { o.mode = m } }

// WithFirstByteDelay delays the first byte of every response, in every
// mode and on every path, by d. Default 0.
func WithFirstByteDelay(d time.Duration) Option {
	return func(o *Origin) { o.firstByte.Store(int64(d)) }
}

// WithSlowDelay sets ModeSlow's delay. Default 2.4s.
func WithSlowDelay(d time.Duration) Option { return func(o *Origin) { o.slow.Store(int64(d)) } }

// WithPartialPercent sets the share of /api/* requests ModePartial answers
// with 503, in percent (0–100). Default 25.
func WithPartialPercent(p float64) Option { return func(o *Origin) { o.SetPartialPercent(p) } }

// WithFlapEvery makes ModeFlapping switch between ok and 503 every n
// requests. Default 5.
func WithFlapEvery(n int) Option { return func(o *Origin) { o.setFlap(n, 0) } }

// WithFlapPeriod makes ModeFlapping switch every period of wall time
// instead of every N requests. Default 0 (count-based).
func WithFlapPeriod(d time.Duration) Option {
	return func(o *Origin) { o.setFlap(int(o.flapEvery.Load()), d) }
}

// setFlap sets ModeFlapping's switch: every n requests, or every period
// when period > 0.
func (o *Origin) setFlap(n int, period time.Duration) {
	o.flapEvery.Store(int64(max(n, 1)))
	o.flapPeriod.Store(int64(period))
}

// WithCredentials sets the user and password POST /login accepts.
// Default DemoUser / DemoPassword.
func WithCredentials(user, password string) Option {
	return func(o *Origin) { o.user, o.password = user, password }
}

// Origin is a fault-injectable HTTP(S) origin. All methods are safe for
// concurrent use.
type Origin struct {
	addr      string
	tlsConfig *tls.Config
	tlsPEM    *certBundle
	user      string
	certOpts  CertOptions
	password  string

	flapEvery  atomic.Int64
	flapPeriod atomic.Int64 // time.Duration
	firstByte  atomic.Int64 // time.Duration
	slow       atomic.Int64 // time.Duration
	partial    atomic.Uint64
	partialN   atomic.Int64
	flapN      atomic.Int64

	srv *http.Server

	mu        sync.Mutex
	mode      Mode
	modeSince time.Time
	ln        net.Listener // nil while down
	conns     map[net.Conn]struct{}
	parked    map[net.Conn]struct{}
	counts    map[string]int64
	tokens    map[string]bool
	closed    bool
	done      chan struct{}
	serveWG   sync.WaitGroup
	handlerWG sync.WaitGroup
}

// NewOrigin starts a plain HTTP origin on 127.0.0.1 (port 0 unless
// WithAddr). It panics if it cannot listen, like httptest.NewServer.
func NewOrigin(opts ...Option) *Origin {
	o, err := StartOrigin(nil, opts...)
	if err != nil {
		panic("checktest: " + err.Error())
	}
	return o
}

// StartOrigin starts an origin and returns an error instead of panicking;
// with a non-nil tlsConfig it serves HTTPS.
func StartOrigin(tlsConfig *tls.Config, opts ...Option) (*Origin, error) {
	o := &Origin{
		addr: "127.0.0.1:0", tlsConfig: tlsConfig,
		user: DemoUser, password: DemoPassword,
		conns: map[net.Conn]struct{}{}, parked: map[net.Conn]struct{}{},
		counts: map[string]int64{}, tokens: map[string]bool{}, done: make(chan struct{}),
	}
	o.slow.Store(int64(2400 * time.Millisecond))
	o.setFlap(5, 0)
	o.SetPartialPercent(25)
	for _, opt := range opts {
		opt(o)
	}
	o.modeSince = time.Now()
	o.srv = &http.Server{
		Handler:           o,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState:         o.connState,
	}
	// Bind first even when starting down, so the port is known.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, err
	}
	o.addr = ln.Addr().String()
	if o.mode == ModeDown {
		ln.Close()
		return o, nil
	}
	o.serve(ln)
	return o, nil
}

// serve starts serving on a raw listener. Caller holds no lock or o.mu.
func (o *Origin) serve(raw net.Listener) {
	var ln net.Listener = &hookListener{Listener: raw, o: o}
	if o.tlsConfig != nil {
		ln = tls.NewListener(ln, o.tlsConfig)
	}
	o.ln = raw
	o.serveWG.Add(1)
	go func() {
		defer o.serveWG.Done()
		_ = o.srv.Serve(ln)
	}()
}

// URL is the origin's base URL, "http://127.0.0.1:port" (https for a TLS
// origin).
func (o *Origin) URL() string {
	if o.tlsConfig != nil {
		return "https://" + o.addr
	}
	return "http://" + o.addr
}

// Addr is "127.0.0.1:port".
func (o *Origin) Addr() string { return o.addr }

// Mode returns the current fault mode.
func (o *Origin) Mode() Mode {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mode
}

// SetMode switches the fault mode. Entering ModeDown closes the listener
// and every connection; leaving it listens again on the same port (the
// only error SetMode returns is that listen failing). Entering or leaving
// ModeBlackhole drops the connections parked so far.
func (o *Origin) SetMode(m Mode) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return errors.New("origin closed")
	}
	prev := o.mode
	o.mode, o.modeSince = m, time.Now()
	o.flapN.Store(0)
	o.partialN.Store(0)
	if prev == m {
		return nil
	}
	for c := range o.parked {
		c.Close()
		delete(o.parked, c)
	}
	switch {
	case m == ModeDown:
		if o.ln != nil {
			o.ln.Close()
			o.ln = nil
		}
		for c := range o.conns {
			c.Close()
		}
	case prev == ModeDown:
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			o.mode = ModeDown
			return fmt.Errorf("re-listen on %s: %w", o.addr, err)
		}
		o.serve(ln)
	}
	return nil
}

// SetFirstByteDelay changes the delay before every response's first byte.
func (o *Origin) SetFirstByteDelay(d time.Duration) { o.firstByte.Store(int64(d)) }

// SetSlowDelay changes ModeSlow's delay.
func (o *Origin) SetSlowDelay(d time.Duration) { o.slow.Store(int64(d)) }

// SetPartialPercent changes ModePartial's 503 share, in percent (clamped to
// 0–100).
func (o *Origin) SetPartialPercent(p float64) {
	p = math.Max(0, math.Min(100, p))
	o.partial.Store(math.Float64bits(p))
}

// Requests returns the number of requests served per "METHOD /path" (query
// strings are not part of the key). Requests held by ModeBlackhole at the
// listener, or refused while down, are not counted.
func (o *Origin) Requests() map[string]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]int64, len(o.counts))
	for k, v := range o.counts {
		out[k] = v
	}
	return out
}

// Count returns the number of requests served for method and path.
func (o *Origin) Count(method, path string) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[method+" "+path]
}

// Total returns the number of requests served on every path.
func (o *Origin) Total() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for _, v := range o.counts {
		n += v
	}
	return n
}

// ResetCounts zeroes the request counters.
func (o *Origin) ResetCounts() {
	o.mu.Lock()
	clear(o.counts)
	o.mu.Unlock()
}

// Close stops the origin, closes every connection and waits until every
// goroutine it started has returned. It is safe to call more than once.
func (o *Origin) Close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.done)
	if o.ln != nil {
		o.ln.Close()
		o.ln = nil
	}
	for c := range o.parked {
		c.Close()
	}
	clear(o.parked)
	o.mu.Unlock()
	o.srv.Close()
	o.serveWG.Wait()
	o.handlerWG.Wait()
	if o.tlsPEM != nil {
		o.tlsPEM.remove()
	}
}

func (o *Origin) connState(c net.Conn, s http.ConnState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch s {
	case http.StateNew:
		if o.mode == ModeDown || o.closed {
			c.Close()
			return
		}
		o.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(o.conns, c)
	}
}

// hookListener parks connections while the origin is in ModeBlackhole.
type hookListener struct {
	net.Listener
	o *Origin
}

func (l *hookListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.o.mu.Lock()
		if l.o.mode == ModeBlackhole && !l.o.closed {
			l.o.parked[c] = struct{}{}
			l.o.mu.Unlock()
			continue
		}
		l.o.mu.Unlock()
		return c, nil
	}
}

// sleep waits d, or less when the request or the origin ends; it reports
// whether the full delay passed.
func (o *Origin) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-o.done:
	}
	return false
}

// ServeHTTP serves the routes with the current fault applied.
func (o *Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.handlerWG.Add(1)
	defer o.handlerWG.Done()
	o.counts[r.Method+" "+r.URL.Path]++
	mode, since := o.mode, o.modeSince
	o.mu.Unlock()

	ctx := r.Context()
	path := r.URL.Path
	api := strings.HasPrefix(path, "/api/")
	switch mode {
	case ModeBlackhole: // a kept-alive connection opened before the switch
		select {
		case <-ctx.Done():
		case <-o.done:
		}
		return
	case ModeReset:
		resetConn(w)
		return
	}
	if !o.sleep(ctx, time.Duration(o.firstByte.Load())) {
		return
	}
	switch mode {
	case Mode503:
		unavailable(w)
		return
	case ModeFlapping:
		if o.flapDown(since) {
			unavailable(w)
			return
		}
	case ModePartial:
		if api && o.partialHit() {
			unavailable(w)
			return
		}
	case ModeSlow:
		if path != "/healthz" && !o.sleep(ctx, time.Duration(o.slow.Load())) {
			return
		}
	}
	if mode != ModeMissingHeader && (api || path == "/asset.bin") {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}
	switch {
	case path == "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	case path == "/asset.bin":
		body := asset
		if mode == ModeCorrupt {
			body = corruptAsset
		}
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Cache-Control", "max-age=300")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("ETag", `"`+assetSum[:16]+`"`)
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body)
	case path == "/login":
		o.login(w, r)
	case path == "/api/me":
		o.me(w, r)
	case api:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "path": path})
	case path == "/shop":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, shopHTML)
	case path == "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, indexHTML)
	default:
		http.NotFound(w, r)
	}
}

func (o *Origin) flapDown(since time.Time) bool {
	if p := time.Duration(o.flapPeriod.Load()); p > 0 {
		return (time.Since(since)/p)%2 == 1
	}
	n := o.flapN.Add(1) - 1
	return (n/o.flapEvery.Load())%2 == 1
}

// partialHit spreads failures evenly: request n fails when the running
// failure quota floor(n·p/100) steps up.
func (o *Origin) partialHit() bool {
	p := math.Float64frombits(o.partial.Load())
	n := o.partialN.Add(1)
	return math.Floor(float64(n)*p/100) > math.Floor(float64(n-1)*p/100)
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": "service unavailable"})
}

// resetConn hijacks the connection and closes it with SO_LINGER 0, which
// sends a TCP RST.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	raw := c
	if tc, ok := c.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (o *Origin) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "use POST"})
		return
	}
	var in struct {
		User     string `json:"user"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "want JSON {\"user\",\"password\"}"})
		return
	}
	if in.User != o.user || in.Password != o.password {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "bad credentials"})
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	o.mu.Lock()
	o.tokens[tok] = true
	o.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"token": tok})
}

func (o *Origin) me(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	o.mu.Lock()
	valid := ok && o.tokens[tok]
	o.mu.Unlock()
	if !valid {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil-demo"`)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "missing or bad bearer token"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": o.user})
}

const indexHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>vigil demo origin</title></head>
<body><h1>vigil demo origin</h1>
<ul><li><a href="/healthz">/healthz</a></li><li><a href="/asset.bin">/asset.bin</a></li>
<li><a href="/api/status">/api/status</a></li><li><a href="/shop">/shop</a></li></ul>
</body></html>
`

const shopHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>vigil demo shop</title></head>
<body>
<div id="app">loading…</div>
<script>
(function () {
  var app = document.getElementById('app');
  app.innerHTML = '<h1>Demo shop</h1><p class="product">Widget, 9.99</p>' +
    '<button id="add-to-cart" type="button">Add to cart</button> ' +
    '<span>Cart: <span id="cart-count">0</span></span><p id="cart-status"></p>';
  var count = 0;
  document.getElementById('add-to-cart').addEventListener('click', function () {
    fetch('/api/cart', {method: 'POST', headers: {'Content-Type': 'application/json'},
                        body: JSON.stringify({sku: 'widget', qty: 1})})
      .then(function (r) { if (!r.ok) { throw new Error('HTTP ' + r.status); } return r.json(); })
      .then(function () {
        count += 1;
        document.getElementById('cart-count').textContent = String(count);
        document.getElementById('cart-status').textContent = 'added';
      })
      .catch(function (e) { document.getElementById('cart-status').textContent = 'error: ' + e.message; });
  });
})();
</script>
</body></html>
`
