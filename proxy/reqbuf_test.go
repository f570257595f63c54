package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spoolOrigin is a real origin that counts the connections it accepted
// and the requests whose head reached it, and hashes each body it got.
type spoolOrigin struct {
	srv     *httptest.Server
	conns   atomic.Int64 // connections accepted
	heads   atomic.Int64 // requests whose head arrived
	uploads atomic.Int64 // of which to /up (the slow uploaders' path)
	mu      sync.Mutex
	sums    []string // sha256 of each body read whole, in arrival order
	lengths []int64  // each request's Content-Length as the origin saw it
}

func newSpoolOrigin(t *testing.T) *spoolOrigin {
	t.Helper()
	o := &spoolOrigin{}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.heads.Add(1)
		if r.URL.Path == "/up" {
			o.uploads.Add(1)
		}
		h := sha256.New()
		_, err := io.Copy(h, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.sums = append(o.sums, fmt.Sprintf("%x", h.Sum(nil)))
		o.lengths = append(o.lengths, r.ContentLength)
		o.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	o.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.srv.Start()
	t.Cleanup(func() { o.srv.CloseClientConnections(); o.srv.Close() })
	return o
}

// openSpools counts this process's open files in dir: the unlinked spool
// files show in /proc/self/fd as "dir/vigil-body-… (deleted)".
func openSpools(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(l, filepath.Join(dir, "vigil-body-")) {
			n++
		}
	}
	return n
}

// slowUploader opens a connection to addr and sends a POST head announcing
// size bytes and then one byte every gap, until stop is closed.
func slowUploader(t *testing.T, addr string, size int, gap time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: shop.test\r\nContent-Length: %d\r\n\r\nx", size)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(gap)
		defer tk.Stop()
		for i := 1; i < size; i++ { // bounded by size and by stop
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}()
	return c
}

func hostPort(u string) string { return strings.TrimPrefix(u, "http://") }

// TestSpoolSlowUploadsHoldNoOrigin: slow uploads over max_buffered_body
// open no origin connection and take no max_conns slot, so an origin with
// max_conns below the number of attackers still serves everyone else; the
// bodies sit in unlinked files in body_temp_dir, closed when the clients
// leave mid-upload.
func TestSpoolSlowUploadsHoldNoOrigin(t *testing.T) {
	const attackers = 20
	og := newSpoolOrigin(t)
	dir := t.TempDir()
	cfg := pool1(PolicyRoundRobin, og.srv.URL)
	cfg.BodyTempDir = dir
	cfg.Pools[0].Origins[0].MaxConns = 5
	cfg.Pools[0].Retry.TryTimeout = 5 * time.Second
	h := start(t, cfg, nil, false)
	addr := hostPort(h.front.URL)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var conns []net.Conn
	for i := 0; i < attackers; i++ {
		conns = append(conns, slowUploader(t, addr, 100000, 50*time.Millisecond, stop, &wg))
	}
	defer func() {
		close(stop)
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	time.Sleep(500 * time.Millisecond) // every head is in, and a few body bytes
	if n := og.conns.Load(); n != 0 {
		t.Fatalf("origin accepted %d connections during the slow uploads, want 0", n)
	}
	if n := h.origin("web", "o0").inflight.Load(); n != 0 {
		t.Fatalf("origin in flight = %d during the slow uploads, want 0", n)
	}
	// Good clients are served although attackers > max_conns.
	for i := 0; i < 10; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("good client %d during the attack: %d %q, want 200", i, code, body)
		}
		if code, body, _ := h.do("POST", "/small", "hello"); code != 200 {
			t.Fatalf("good POST %d during the attack: %d %q, want 200", i, code, body)
		}
	}
	// Every upload is being received: one open spool file each.
	eventually(t, "every slow upload spooled", func() bool { return openSpools(t, dir) == attackers })
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("body_temp_dir holds %d named files, want 0 (spool files are unlinked)", len(ents))
	}
	// The clients leave mid-upload: their files are closed.
	for _, c := range conns {
		c.Close()
	}
	eventually(t, "spool files closed after the clients left", func() bool { return openSpools(t, dir) == 0 })
	if n := og.uploads.Load(); n != 0 {
		t.Fatalf("origin got %d of the abandoned slow uploads, want 0", n)
	}
}

// TestSpoolByteExact: a large upload, with a length or chunked, reaches the
// origin byte for byte with its length known, and leaves no file.
func TestSpoolByteExact(t *testing.T) {
	og := newSpoolOrigin(t)
	dir := t.TempDir()
	cfg := pool1(PolicyRoundRobin, og.srv.URL)
	cfg.BodyTempDir = dir
	h := start(t, cfg, nil, false)
	body := make([]byte, 5<<20+123)
	rand.Read(body)
	want := fmt.Sprintf("%x", sha256.Sum256(body))
	for _, chunked := range []bool{false, true} {
		var rd io.Reader = bytes.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // hides the length: sent chunked
		}
		req, _ := http.NewRequest("PUT", h.front.URL+"/big", rd)
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("chunked=%v: status %d", chunked, resp.StatusCode)
		}
	}
	og.mu.Lock()
	defer og.mu.Unlock()
	if len(og.sums) != 2 {
		t.Fatalf("origin got %d bodies, want 2", len(og.sums))
	}
	for i, s := range og.sums {
		if s != want {
			t.Errorf("body %d: sha256 %s, want %s", i, s, want)
		}
		if og.lengths[i] != int64(len(body)) {
			t.Errorf("body %d: origin saw Content-Length %d, want %d", i, og.lengths[i], len(body))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 || openSpools(t, dir) != 0 {
		t.Fatalf("spool files left: %d named, %d open", len(ents), openSpools(t, dir))
	}
}

// TestSpoolOff: request_buffering: off (per pool, or the proxy's default)
// streams the body: the origin gets the head while the upload goes on.
func TestSpoolOff(t *testing.T) {
	for _, where := range []string{"pool", "proxy"} {
		t.Run(where, func(t *testing.T) {
			og := newSpoolOrigin(t)
			cfg := pool1(PolicyRoundRobin, og.srv.URL)
			cfg.BodyTempDir = t.TempDir()
			if where == "pool" {
				cfg.Pools[0].RequestBuffering = RequestBufferingOff
			} else {
				cfg.RequestBuffering = RequestBufferingOff
			}
			h := start(t, cfg, nil, false)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			c := slowUploader(t, hostPort(h.front.URL), 100000, 50*time.Millisecond, stop, &wg)
			defer func() { close(stop); c.Close(); wg.Wait() }()
			eventually(t, "the origin got the streamed request's head", func() bool { return og.heads.Load() == 1 })
			if n := openSpools(t, cfg.BodyTempDir); n != 0 {
				t.Fatalf("%d spool files with request_buffering off", n)
			}
		})
	}
}

// TestSpoolStalledClient: a client that stops sending mid-body gets 408
// after try_timeout, and no origin was dialled.
func TestSpoolStalledClient(t *testing.T) {
	og := newSpoolOrigin(t)
	dir := t.TempDir()
	cfg := pool1(PolicyRoundRobin, og.srv.URL)
	cfg.BodyTempDir = dir
	cfg.Pools[0].Retry.TryTimeout = 300 * time.Millisecond
	cfg.Pools[0].ConnectTimeout = 100 * time.Millisecond
	h := start(t, cfg, nil, false)
	c, err := net.Dial("tcp", hostPort(h.front.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 200000\r\n\r\n%s", strings.Repeat("x", 100000))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled upload: %d, want 408", resp.StatusCode)
	}
	if og.conns.Load() != 0 {
		t.Fatalf("origin accepted %d connections for a stalled upload", og.conns.Load())
	}
	eventually(t, "spool file closed", func() bool { return openSpools(t, dir) == 0 })
}

// syncBuf is a log destination tests read while the proxy writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestSpoolDirUnusable: a body_temp_dir gone after start gives the client
// 503 and a log line naming the directory; the proxy goes on serving.
func TestSpoolDirUnusable(t *testing.T) {
	og := newSpoolOrigin(t)
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := pool1(PolicyRoundRobin, og.srv.URL)
	cfg.BodyTempDir = dir
	var logs syncBuf
	h := startLog(t, cfg, nil, false, testEngine(), slog.New(slog.NewTextHandler(&logs, nil)))
	os.Remove(dir)
	code, body, _ := h.do("POST", "/up", strings.Repeat("x", 200000))
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot store the request body") {
		t.Fatalf("got %d %q, want 503 naming the stored body", code, body)
	}
	if !strings.Contains(logs.String(), "dir="+dir) || !strings.Contains(logs.String(), "body_temp_dir") {
		t.Fatalf("log does not name the directory:\n%s", logs.String())
	}
	if og.conns.Load() != 0 {
		t.Fatal("the origin was dialled for a body the proxy could not store")
	}
	if code, _, _ := h.do("GET", "/", ""); code != 200 {
		t.Fatalf("GET after the failure: %d", code)
	}
}

func TestRequestBufferingConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"bad proxy value", func(c *Config) { c.RequestBuffering = "yes" }, `request_buffering: "yes": want on or off`},
		{"bad pool value", func(c *Config) { c.Pools[0].RequestBuffering = "no" }, `pools[0].request_buffering: "no": want on or off`},
		{"missing dir", func(c *Config) { c.BodyTempDir = "/nonexistent/vigil" }, "body_temp_dir: stat /nonexistent/vigil"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1")
			c.mod(&cfg)
			err := cfg.ValidateAndSetDefaults()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if errors.Is(err, ErrRequestBuffering) != strings.Contains(c.want, "want on or off") {
				t.Fatalf("errors.Is(ErrRequestBuffering) wrong for %v", err)
			}
		})
	}
	cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1")
	cfg.RequestBuffering = RequestBufferingOff
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.Pools[0].spool || cfg.Pools[0].RequestBuffering != RequestBufferingOff {
		t.Fatal("a pool without request_buffering does not take the proxy's off")
	}
}
