package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// accessLines reads the JSON lines of an access log file.
func accessLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line is not JSON: %v\n%s", err, l)
		}
		out = append(out, m)
	}
	return out
}

// ups is an access log line's upstreams as the test writes them: one
// "origin status cause" string per try, the empty parts left out.
func ups(line map[string]any) []string {
	var out []string
	list, _ := line["upstreams"].([]any)
	for _, u := range list {
		m := u.(map[string]any)
		s, _ := m["origin"].(string)
		if st, ok := m["status"].(float64); ok {
			s += " " + strconv.FormatFloat(st, 'f', -1, 64)
		}
		if c, ok := m["cause"].(string); ok {
			s += " " + c
		}
		out = append(out, s)
	}
	return out
}

// TestAccessLogUpstreams: each access log line lists every try the request
// made, in order, with its origin and outcome (the answer's status, or the
// cause the try failed with), as nginx's $upstream_addr and
// $upstream_status do: a 502 names the origins that failed and how, a
// failover names the origins passed over as well as the one that answered.
// The existing fields keep their values. Both engines; a GET (the fast
// path) and a POST (Go's transport).
func TestAccessLogUpstreams(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			bad, good := newBackend(t, "bad"), newBackend(t, "good")
			bad.mode.Store(mode503)
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, bad.srv.URL, deadURL(t), good.srv.URL)
			cfg.Pools[0].Hosts = []string{"www.example.test"}
			cfg.Pools = append(cfg.Pools, PoolConfig{Name: "dead", Hosts: []string{"dead.example.test"},
				Origins: []OriginConfig{{Target: "d0", URL: deadURL(t)}, {Target: "d1", URL: deadURL(t)}}},
				PoolConfig{Name: "one", Hosts: []string{"one.example.test"},
					Origins: []OriginConfig{{Target: "g", URL: good.srv.URL}}})
			cfg.AccessLog = path
			h := startWith(t, cfg, nil, false, engineName)
			if c, _, _ := h.doHost("www.example.test", "GET", "/f"); c != 200 {
				t.Fatalf("GET after failover: %d", c)
			}
			if c, _, _ := h.doHost("www.example.test", "POST", "/p", "Idempotency-Key", "k1", "Content-Type", "text/plain"); c != 200 {
				t.Fatalf("POST after failover: %d", c)
			}
			if c, _, _ := h.doHost("dead.example.test", "GET", "/d"); c != 502 {
				t.Fatalf("GET dead pool: %d", c)
			}
			if c, _, _ := h.doHost("one.example.test", "GET", "/o"); c != 200 {
				t.Fatalf("GET one: %d", c)
			}
			h.p.closeAccessLog()
			lines := accessLines(t, path)
			if len(lines) != 4 {
				t.Fatalf("%d lines, want 4", len(lines))
			}
			failover := []string{"o0 503", "o1 connect_refused", "o2 200"}
			for i, want := range [][]string{failover, failover, {"d0 connect_refused", "d1 connect_refused"}, {"g 200"}} {
				if got := ups(lines[i]); !reflect.DeepEqual(got, want) {
					t.Errorf("line %d: upstreams %q, want %q\n%v", i+1, got, want, lines[i])
				}
			}
			if l := lines[0]; l["origin"] != "o2" || l["tries"] != 3.0 || l["status"] != 200.0 {
				t.Errorf("failover line: origin %v tries %v status %v, want o2 3 200", l["origin"], l["tries"], l["status"])
			}
			if l := lines[2]; l["origin"] != nil || l["tries"] != 2.0 || l["status"] != 502.0 {
				t.Errorf("502 line: origin %v tries %v status %v, want none 2 502", l["origin"], l["tries"], l["status"])
			}
			for i, l := range lines {
				if _, ok := l["aborted"]; ok {
					t.Errorf("line %d: aborted %v on a whole answer", i+1, l["aborted"])
				}
			}
		})
	}
}

// TestAccessLogUpstreamsManyTries: tries beyond the first three are listed
// too.
func TestAccessLogUpstreamsManyTries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	var origins []string
	var want []string
	for i := range 5 {
		origins = append(origins, deadURL(t))
		want = append(want, "o"+string(rune('0'+i))+" connect_refused")
	}
	cfg := pool1(PolicyFirst, origins...)
	cfg.Pools[0].Retry.Tries = 5
	cfg.AccessLog = path
	h := start(t, cfg, nil, false)
	if c, _, _ := h.do("GET", "/", ""); c != 502 {
		t.Fatalf("GET: %d", c)
	}
	h.p.closeAccessLog()
	lines := accessLines(t, path)
	if len(lines) != 1 || !reflect.DeepEqual(ups(lines[0]), want) {
		t.Fatalf("upstreams %q, want %q\n%v", ups(lines[0]), want, lines)
	}
}

// TestAccessLogSendTimeoutAborted: an answer cut off because its client
// took nothing for send_timeout is marked "aborted":"send_timeout" in the
// access log (its status stays the origin's, its bytes what was written),
// on every listener; a whole answer has no aborted field.
func TestAccessLogSendTimeoutAborted(t *testing.T) {
	const size = 64 << 20
	origin := bigOrigin(t, size)
	for _, engineName := range []string{EngineFast, EngineStdlib, "tls"} {
		t.Run(engineName, func(t *testing.T) {
			eng := engineName
			if eng == "tls" {
				eng = EngineFast
			}
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].Retry.Tries = 1
			cfg.SendTimeout = 300 * time.Millisecond
			cfg.AccessLog = path
			_, fronts := runFronts(t, cfg, eng)
			f := fronts[engineName]

			stuck := f.dial(t)
			defer stuck.Close()
			if _, err := io.WriteString(stuck, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
			head, err := http.ReadResponse(bufio.NewReader(stuck), nil)
			if err != nil || head.StatusCode != http.StatusOK {
				t.Fatalf("GET /big: %v, %v; want a 200 answer under way", head, err)
			}
			// The client reads nothing more; the line comes once the proxy
			// gave up on it (the log is flushed every second).
			var line map[string]any
			eventually(t, "the access log line of the cut-off answer", func() bool {
				if b, _ := os.ReadFile(path); len(b) == 0 {
					return false
				}
				line = accessLines(t, path)[0]
				return true
			})
			if line["aborted"] != "send_timeout" || line["status"] != 200.0 {
				t.Fatalf("aborted %v status %v, want send_timeout 200\n%v", line["aborted"], line["status"], line)
			}
			if n, _ := line["bytes"].(float64); n <= 0 || n >= size {
				t.Errorf("bytes %v, want some but not all of %d", line["bytes"], size)
			}
		})
	}
}

// TestAccessLogOriginBreakAborted: an answer cut off because the origin's
// body broke after its head is marked "aborted":"origin", and its try in
// upstreams carries both the status it began with and the cause it broke
// with; one whose client went away mid-body is marked
// "aborted":"client_closed". Both engines.
func TestAccessLogOriginBreakAborted(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			// A Content-Length of 1000 and 10 bytes, then the connection closes.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
			conn.Close()
		case "/slow":
			// Streams a line every 20ms until the proxy stops taking them
			// (at most 10s).
			fl := w.(http.Flusher)
			for i := 0; i < 500; i++ {
				if _, err := io.WriteString(w, "line\n"); err != nil {
					return
				}
				fl.Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}))
	defer origin.Close()
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.AccessLog = path
			h := startWith(t, cfg, nil, false, engineName)
			c, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
			io.Copy(io.Discard, c) // the proxy aborts the connection

			c2, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c2.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c2, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			br := bufio.NewReader(c2)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET /slow: %v %v", resp, err)
			}
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			c2.Close()
			var lines []map[string]any
			eventually(t, "two access log lines", func() bool {
				b, _ := os.ReadFile(path)
				if strings.Count(string(b), "\n") < 2 {
					return false
				}
				lines = accessLines(t, path)
				return true
			})
			short, slow := lines[0], lines[1]
			if short["path"] != "/short" {
				short, slow = slow, short
			}
			if short["aborted"] != "origin" || short["status"] != 200.0 ||
				!reflect.DeepEqual(ups(short), []string{"o0 200 protocol"}) {
				t.Errorf("/short: aborted %v status %v upstreams %q, want origin 200 [o0 200 protocol]\n%v",
					short["aborted"], short["status"], ups(short), short)
			}
			if slow["aborted"] != "client_closed" || slow["status"] != 200.0 {
				t.Errorf("/slow: aborted %v status %v, want client_closed 200\n%v", slow["aborted"], slow["status"], slow)
			}
		})
	}
}

// TestUpgradeAnswerCarriesRequestID: the 101 Switching Protocols answer of
// a WebSocket upgrade carries the request's ID like every other answer,
// the one in the access log, not one the origin sent under that name.
func TestUpgradeAnswerCarriesRequestID(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, brw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Request-Id: from-origin\r\n\r\n")
				line, _ := brw.ReadString('\n')
				io.WriteString(conn, "echo: "+line)
			}))
			defer origin.Close()
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.AccessLog = path
			h := startWith(t, cfg, nil, false, engineName)
			c, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade: %v %v", resp, err)
			}
			io.WriteString(c, "hi\n")
			if l, err := br.ReadString('\n'); err != nil || l != "echo: hi\n" {
				t.Fatalf("through the tunnel: %q %v", l, err)
			}
			c.Close()
			id := resp.Header.Values("X-Request-Id")
			if len(id) != 1 || id[0] == "" || id[0] == "from-origin" {
				t.Fatalf("101 X-Request-Id %q, want the proxy's request ID", id)
			}
			eventually(t, "the tunnel's access log line", func() bool {
				b, _ := os.ReadFile(path)
				return len(b) > 0
			})
			if got := accessLines(t, path)[0]["request_id"]; got != id[0] {
				t.Errorf("access log request_id %v, 101 answer's %q", got, id[0])
			}
		})
	}
}

// TestAccessLogUpstreamsAllocateNothing: recording up to three tries takes
// no allocation, and a line with one try allocates no more than one
// without the field (the line's own buffer).
func TestAccessLogUpstreamsAllocateNothing(t *testing.T) {
	e := &accessEntry{}
	if n := testing.AllocsPerRun(100, func() {
		e.nups = 0
		e.addTry("http://10.0.0.1:80", 503, "")
		e.addTry("http://10.0.0.2:80", 0, CauseConnectRefused)
		e.addTry("http://10.0.0.3:80", 200, "")
	}); n != 0 {
		t.Errorf("three tries allocate %v times, want 0", n)
	}
	a := newAccessLog("discard", io.Discard, nil, false, time.Hour, testLogger(t))
	defer a.close()
	r := httptest.NewRequest("GET", "http://www.example.test/p", nil)
	line := func(e *accessEntry) float64 {
		return testing.AllocsPerRun(100, func() { a.write(time.Now(), r, 200, 4, e) })
	}
	none := line(&accessEntry{pool: "web", origin: "o0", tries: 1})
	one := &accessEntry{pool: "web", origin: "o0", tries: 1}
	one.addTry("o0", 200, "")
	if got := line(one); got > none {
		t.Errorf("a line with one try allocates %v times, %v without upstreams", got, none)
	}
}

// TestAccessLogSendTimeoutAbortedHTTP2: an HTTP/2 stream reset because its
// client granted no window for send_timeout is marked
// "aborted":"send_timeout" too.
func TestAccessLogSendTimeoutAbortedHTTP2(t *testing.T) {
	const size = 64 << 20
	origin := bigOrigin(t, size)
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.Pools[0].Retry.Tries = 1
	cfg.SendTimeout = 300 * time.Millisecond
	cfg.AccessLog = path
	addr, roots := runTLSProxy(t, cfg)
	h2Get(t, addr, roots, "/big") // grants no window beyond the first
	var line map[string]any
	eventually(t, "the access log line of the reset stream", func() bool {
		if b, _ := os.ReadFile(path); len(b) == 0 {
			return false
		}
		line = accessLines(t, path)[0]
		return true
	})
	if line["aborted"] != "send_timeout" || line["status"] != 200.0 || line["proto"] != "HTTP/2.0" {
		t.Fatalf("aborted %v status %v proto %v, want send_timeout 200 HTTP/2.0\n%v", line["aborted"], line["status"], line["proto"], line)
	}
}
