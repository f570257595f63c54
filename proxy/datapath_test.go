package proxy

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"

	"github.com/prometheus/client_golang/prometheus"
)

// bigOrigin serves /big: size bytes with a Content-Length, written in 32 KiB
// pieces until the proxy stops taking them; any other path answers "small".
func bigOrigin(t *testing.T, size int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			io.WriteString(w, "small")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSendTimeoutFreesOriginOfNonReadingClient: a client that asks for a
// large answer and never reads it is cut off after send_timeout on every
// listener (fast engine, stdlib engine, TLS), and the origin's only
// max_conns slot it held is freed: the next request to that origin is
// answered 200 within a few seconds instead of 503 for as long as the
// client likes.
func TestSendTimeoutFreesOriginOfNonReadingClient(t *testing.T) {
	// Far more than the socket buffers between the origin and the client
	// can hold, so the proxy's writes to the client block.
	const size = 64 << 20
	origin := bigOrigin(t, size)
	for _, engineName := range []string{EngineFast, EngineStdlib, "tls"} {
		t.Run(engineName, func(t *testing.T) {
			eng := engineName
			if eng == "tls" {
				eng = EngineFast
			}
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].Origins[0].MaxConns = 1
			cfg.Pools[0].Retry.Tries = 1
			cfg.SendTimeout = time.Second
			_, fronts := runFronts(t, cfg, eng)
			f := fronts[engineName]

			stuck := f.dial(t)
			defer stuck.Close()
			if _, err := io.WriteString(stuck, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			// Its answer has begun (reading the head takes a few KiB of
			// the 64 MiB off the socket: the proxy's writes still block).
			stuckR := bufio.NewReader(stuck)
			stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
			head, err := http.ReadResponse(stuckR, nil)
			if err != nil || head.StatusCode != http.StatusOK {
				t.Fatalf("GET /big: %v, %v; want a 200 answer under way", head, err)
			}
			stuck.SetReadDeadline(time.Time{})

			// The slot is freed once the proxy gave up on the client.
			deadline := time.Now().Add(8 * time.Second)
			for {
				c := f.dial(t)
				resp, body := roundTrip(t, c, bufio.NewReader(c), "GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				c.Close()
				if resp.StatusCode == http.StatusOK && body == "small" {
					break
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("GET /small: %d %q, want 200 (or 503 while the slot is held)", resp.StatusCode, body)
				}
				if time.Now().After(deadline) {
					t.Fatal("the origin's max_conns slot is still held by a client that reads nothing, 8s after send_timeout 1s")
				}
				time.Sleep(200 * time.Millisecond)
			}

			// The proxy closed the client: what it had sent (what the
			// socket buffers held) ends early.
			stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, head.Body)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the non-reading client's connection is still open (read %d bytes)", n)
			}
			if n >= size {
				t.Fatalf("the client got the whole answer (%d bytes), want it cut off", n)
			}
		})
	}
}

// TestSendTimeoutKeepsSlowReader: send_timeout bounds a write that makes no
// progress, not an answer's length: a client that reads a large answer at a
// steady, modest rate gets all of it over several times send_timeout.
func TestSendTimeoutKeepsSlowReader(t *testing.T) {
	const size = 16 << 20
	origin := bigOrigin(t, size)
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.SendTimeout = time.Second
			_, fronts := runFronts(t, cfg, engineName)
			c := fronts[engineName].dial(t)
			defer c.Close()
			io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
			br := bufio.NewReaderSize(c, 4<<10)
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			// About 6 MiB/s: 64 KiB, then a 10ms pause; 3 s or more in all.
			var n int64
			buf := make([]byte, 64<<10)
			start := time.Now()
			for n < size {
				m, err := io.ReadFull(resp.Body, buf[:min(len(buf), int(size-n))])
				n += int64(m)
				if err != nil {
					t.Fatalf("after %d bytes and %v: %v", n, time.Since(start).Round(time.Millisecond), err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if time.Since(start) < 2*cfg.SendTimeout {
				t.Fatalf("the read took %v: too fast to show that send_timeout (%v) does not bound the whole answer",
					time.Since(start), cfg.SendTimeout)
			}
		})
	}
}

// TestSendTimeoutConfig: send_timeout defaults to 60s; a negative one is
// refused with its key named.
func TestSendTimeoutConfig(t *testing.T) {
	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.SendTimeout != 60*time.Second {
		t.Errorf("default send_timeout = %v, want 60s", cfg.SendTimeout)
	}
	cfg = pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.SendTimeout = -time.Second
	err := cfg.ValidateAndSetDefaults()
	if err == nil || !strings.Contains(err.Error(), "send_timeout: -1s: must be positive") {
		t.Errorf("send_timeout -1s: got %v, want an error naming send_timeout", err)
	}
}

// tryLogs collects a proxy's log lines (text format, debug level).
type tryLogs struct{ checktest.SyncBuffer }

// lines returns the log lines containing every one of parts.
func (l *tryLogs) lines(parts ...string) []string {
	var out []string
next:
	for _, line := range strings.Split(l.String(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// startCapturing is startWith without background loops, logging to the
// returned tryLogs.
func startCapturing(t *testing.T, cfg Config, engineName string) (*harness, *tryLogs) {
	t.Helper()
	logs := &tryLogs{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := &harness{t: t, reg: prometheus.NewRegistry()}
	p, err := New(cfg, nil, log, WithRegistry(h.reg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	h.front = newTestFrontWith(t, p, engineName)
	h.client = &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	t.Cleanup(func() {
		h.front.CloseClientConnections()
		h.front.Close()
	})
	return h, logs
}

var bothEngines = []string{EngineFast, EngineStdlib}

// TestOriginProtocolErrors: an origin answer that breaks HTTP/1.1 is a
// failed try with cause protocol (logged, 502), on both engines: more than
// 10 interim (1xx) answers before the final one (was passed on as an empty
// 200), a malformed head (was logged as cause reset), a 101 to a request
// that asked for no upgrade (was answered 502 without a failed try). Ten
// interim answers are still skipped.
func TestOriginProtocolErrors(t *testing.T) {
	hints := func(k int) string {
		return strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n", k) +
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Final: 1\r\n\r\nabc"
	}
	for _, engineName := range bothEngines {
		for _, tc := range []struct {
			name, answer string
			code         int
			body         string
		}{
			{"10 interim answers", hints(10), 200, "abc"},
			{"11 interim answers", hints(11), 502, ""},
			{"malformed head", "HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\nContent-Length: 2\r\n\r\nok", 502, ""},
			{"garbage", "NOT HTTP AT ALL\r\n\r\n", 502, ""},
			{"unrequested 101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 502, ""},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				cfg := pool1(PolicyFirst, checktest.CannedOrigin(t, tc.answer))
				cfg.Pools[0].Retry.Tries = 1
				h, logs := startCapturing(t, cfg, engineName)
				code, body, hdr := h.do("GET", "/x", "")
				if code != tc.code || tc.code == 200 && body != tc.body {
					t.Fatalf("got %d %q, want %d %q", code, body, tc.code, tc.body)
				}
				if tc.code == 200 {
					if hdr.Get("Link") != "" || hdr.Get("X-Final") != "1" {
						t.Errorf("final answer's header: %v", hdr)
					}
					return
				}
				if got := logs.lines(`msg="proxy: try failed"`, "cause=protocol", "origin=o0"); len(got) != 1 {
					t.Errorf("want one try-failed line with cause=protocol, got %q", logs.lines("try failed"))
				}
				if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": "o0"}); v != 0 {
					t.Errorf("the origin's broken answer was counted as answered (%v)", v)
				}
			})
		}
	}
}

// TestClientGoneStopsRetries: a client that leaves while its GET waits for
// a slow origin gets no retry on the other origins (was: every origin tried
// on the fast engine); the request is counted as code 499 under origin
// "none" and logged, and no origin is charged for the client leaving.
func TestClientGoneStopsRetries(t *testing.T) {
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			var bs []*backend
			for _, n := range []string{"a", "b", "c"} {
				b := newBackend(t, n)
				b.mode.Store(modeHang)
				bs = append(bs, b)
			}
			cfg := pool1(PolicyFirst, urls(bs...)...)
			cfg.Pools[0].Retry.TryTimeout = 500 * time.Millisecond
			cfg.Pools[0].ConnectTimeout = 500 * time.Millisecond
			cfg.Pools[0].Retry.Budget = 5 * time.Second
			h, logs := startCapturing(t, cfg, engineName)
			c, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			time.Sleep(200 * time.Millisecond)
			c.Close()
			// The first try ends at 500ms; retries would reach the next
			// origins by 1s and 1.5s.
			time.Sleep(1800 * time.Millisecond)
			var hits int64
			for _, b := range bs {
				hits += b.hits.Load()
			}
			if hits > 1 {
				t.Errorf("a request whose client left was sent to %d origins, want 1", hits)
			}
			eventually(t, "the request counted as 499", func() bool {
				v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "499"})
				return v == 1
			})
			if got := logs.lines("client closed the connection before the answer"); len(got) != 1 {
				t.Errorf("want one client-closed line, got %q", got)
			}
			for _, code := range []string{"502", "504"} {
				if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": code}); v != 0 {
					t.Errorf("the abandoned request was also counted as %s", code)
				}
			}
		})
	}
}

// TestClientWithPipelinedRequestIsNotGone: bytes waiting on the client
// connection (a pipelined request) do not make the client look gone between
// tries: the retry happens and both requests are answered.
func TestClientWithPipelinedRequestIsNotGone(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(mode503)
	cfg := pool1(PolicyFirst, urls(a, b)...)
	h, _ := startCapturing(t, cfg, EngineFast)
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
	for i := 1; i <= 2; i++ {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "ok b" {
			t.Fatalf("answer %d: %d %q, want 200 from b after a's 503", i, resp.StatusCode, body)
		}
	}
}

// TestTryFailedLogRateLimited: with every try failing (a refused port), the
// "try failed" line of an origin and cause is written once, then at most
// once a second with the count of lines left out ("suppressed"); every
// failure is still counted.
func TestTryFailedLogRateLimited(t *testing.T) {
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, deadURL(t))
			h, logs := startCapturing(t, cfg, engineName)
			const n = 200
			for i := 0; i < n; i++ {
				if code, body, _ := h.do("GET", "/", ""); code != http.StatusBadGateway {
					t.Fatalf("request %d: %d %q, want 502", i, code, body)
				}
			}
			time.Sleep(1100 * time.Millisecond)
			h.do("GET", "/", "")
			lines := logs.lines(`msg="proxy: try failed"`, "cause=connect_refused")
			if len(lines) < 2 || len(lines) > 4 {
				t.Fatalf("%d try-failed lines for %d failures, want 2 to 4 (one a second): %q", len(lines), n+1, lines)
			}
			total := 0
			for _, l := range lines {
				_, v, ok := strings.Cut(l, "suppressed=")
				if !ok {
					t.Fatalf("line without suppressed=: %q", l)
				}
				k, err := strconv.Atoi(strings.Fields(v)[0])
				if err != nil {
					t.Fatal(err)
				}
				total += k + 1
			}
			if total != n+1 {
				t.Errorf("lines written + suppressed = %d, want %d", total, n+1)
			}
			if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "502"}); v != n+1 {
				t.Errorf("502s counted: %v, want %d", v, n+1)
			}
		})
	}
}

// TestPassedThrough5xxLogged: an origin's 5xx that goes to the client (a
// POST is not replayed; the last try of a GET) is logged as a failed try
// with cause status_5xx, as the README says every failed try is.
func TestPassedThrough5xxLogged(t *testing.T) {
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			a.mode.Store(mode503)
			cfg := pool1(PolicyFirst, urls(a)...)
			h, logs := startCapturing(t, cfg, engineName)
			for _, m := range []string{"POST", "GET"} {
				if code, _, _ := h.do(m, "/p", "x"); code != http.StatusServiceUnavailable {
					t.Fatalf("%s: %d, want the origin's 503", m, code)
				}
			}
			got := logs.lines(`msg="proxy: try failed"`, "cause=status_5xx", "status=503", "passed_through=true",
				`not_retried="not replay-safe`)
			if len(got) != 1 {
				// The second line falls in the same second: suppressed.
				t.Fatalf("want one logged pass-through line saying why the POST was not retried, got %q", logs.lines("try failed"))
			}
			time.Sleep(1100 * time.Millisecond)
			h.do("GET", "/p", "")
			// The only origin: the GET has nowhere else to go.
			if got := logs.lines(`msg="proxy: try failed"`, "cause=status_5xx", "suppressed=1", `not_retried="no other origin to try"`); len(got) != 1 {
				t.Fatalf("want a line counting the suppressed one, got %q", logs.lines("try failed"))
			}
		})
	}
}
