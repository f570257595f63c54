package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
)

// The bad-input suite: what a user (or an attacker) sees when they send
// vigil requests it must refuse, bound or time out, and that secrets from
// the environment never come back out. Every test runs the real wiring
// (loadConfig + newApp on 127.0.0.1:0) against local origins only.

// badApp is a running app with its agent and proxy addresses.
type badApp struct {
	a     *app
	base  string // http://agent
	proxy string // proxy host:port, "" without a proxy
	stop  func()
}

// startBadApp writes cfgText to a file, loads it with the process
// environment and runs it with every role (canary, proxy when configured,
// alerter, page).
func startBadApp(t testing.TB, cfgText string, logger *slog.Logger, faults *statuspage.FaultControl) *badApp {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if logger == nil {
		logger = discardLogger()
	}
	r := roles{canary: true, proxy: cfg.Proxy != nil, alerter: true, page: true}
	a, err := newApp(cfg, appOptions{roles: r, listener: ln, watch: time.Hour, faults: faults, log: logger})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	stop := runApp(t, a)
	b := &badApp{a: a, base: "http://" + a.Addr()}
	var once sync.Once
	b.stop = func() { once.Do(stop) }
	t.Cleanup(b.stop)
	if r.proxy {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if addrs := a.prx.Addrs(); len(addrs) > 0 {
				b.proxy = addrs[0].String()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if b.proxy == "" {
			t.Fatal("the proxy did not listen within 5s")
		}
	}
	return b
}

// do sends one request to the agent with an optional raw Authorization
// header value ("" sends none) and returns the status and body.
func do(t *testing.T, method, url, auth string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// rawExchange writes raw bytes to addr and reads one HTTP response (its
// body capped at 64 KiB). It fails the test when no response arrives
// within 10s.
func rawExchange(t *testing.T, addr, raw string) (int, http.Header, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// Write while reading, as a real client does: a server may answer (413)
	// before the request is whole. The answer must still arrive intact.
	werr := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, raw)
		werr <- err
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no HTTP response to %.60q: %v (write: %v)", raw, err, <-werr)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, string(b)
}

// sentinel is a TCP listener that only counts connection attempts: a
// request naming it must never make vigil connect to it.
type sentinel struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func newSentinel(t *testing.T) *sentinel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sentinel{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *sentinel) addr() string { return s.ln.Addr().String() }

// rawOrigin is a misbehaving HTTP/1.1 origin written over raw TCP:
//
//	/bighdr   200 with one header line of hdrSize bytes
//	/bigbody  200 streaming up to bodyMax bytes of body (no length)
//	else      200 "ok"
type rawOrigin struct {
	ln      net.Listener
	hdrSize int
	bodyMax int64

	requests atomic.Int64
	written  atomic.Int64 // body bytes written on /bigbody
	logMu    sync.Mutex
	log      []string // "METHOD target" of every request, in arrival order
	mu       sync.Mutex
	conns    map[net.Conn]bool
	wg       sync.WaitGroup
}

func newRawOrigin(t testing.TB, hdrSize int, bodyMax int64) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{ln: ln, hdrSize: hdrSize, bodyMax: bodyMax, conns: map[net.Conn]bool{}}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.mu.Lock()
			o.conns[c] = true
			o.mu.Unlock()
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				defer func() {
					o.mu.Lock()
					delete(o.conns, c)
					o.mu.Unlock()
					c.Close()
				}()
				o.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		o.mu.Lock()
		for c := range o.conns {
			c.Close()
		}
		o.mu.Unlock()
		o.wg.Wait()
	})
	return o
}

func (o *rawOrigin) url() string { return "http://" + o.ln.Addr().String() }

// seen returns the request lines logged from index from on.
func (o *rawOrigin) seen(from int) []string {
	o.logMu.Lock()
	defer o.logMu.Unlock()
	if from >= len(o.log) {
		return nil
	}
	return append([]string(nil), o.log[from:]...)
}

func (o *rawOrigin) serve(c net.Conn) {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(io.LimitReader(c, 1<<20))
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
	o.requests.Add(1)
	o.logMu.Lock()
	o.log = append(o.log, req.Method+" "+req.RequestURI)
	o.logMu.Unlock()
	switch req.URL.Path {
	case "/bighdr":
		var b bytes.Buffer
		b.WriteString("HTTP/1.1 200 OK\r\nX-Big: ")
		b.Write(bytes.Repeat([]byte("a"), o.hdrSize))
		b.WriteString("\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		c.Write(b.Bytes())
	case "/bigbody":
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
		chunk := bytes.Repeat([]byte("b"), 32<<10)
		for o.written.Load() < o.bodyMax {
			n, err := c.Write(chunk)
			o.written.Add(int64(n))
			if err != nil {
				return
			}
		}
	default:
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}
}

// originState returns the proxy admin API's view of one origin.
func originState(t *testing.T, base, name string) map[string]any {
	t.Helper()
	code, body := do(t, "GET", base+"/api/v1/origins", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/v1/origins: %d %s", code, body)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("origins: %v: %s", err, body)
	}
	for _, o := range list {
		if o["name"] == name {
			return o
		}
	}
	t.Fatalf("origin %q not in %s", name, body)
	return nil
}

// badAuths are Authorization headers that must never pass: none, a wrong
// token, the right token without the Bearer scheme, another scheme, and
// Bearer with nothing after it.
func badAuths(token string) map[string]string {
	return map[string]string{
		"no header":        "",
		"wrong token":      "Bearer wrong-" + token,
		"no Bearer":        token,
		"Basic scheme":     "Basic " + token,
		"empty Bearer":     "Bearer ",
		"token prefix":     "Bearer " + token[:len(token)-1],
		"token with extra": "Bearer " + token + "x",
	}
}

const badToken = "adm-0123456789abcdef"

// proxyEngines are the proxy's plain-listener engines; the client-facing
// tests run against each.
var proxyEngines = []string{"fast", "stdlib"}

// eachEngine runs f as a parallel subtest per proxy engine.
func eachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range proxyEngines {
		t.Run(e, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

// sharedConfig is one process with a canary, a proxy with two pools (the
// checktest origin at app.local, a raw misbehaving origin at raw.local),
// the alerter and the status page. The only check runs on a cron schedule
// that does not come during the test, so any request it makes was
// triggered.
func sharedConfig(dir, token, originURL, rawURL string) string {
	return sharedConfigEngine(dir, token, originURL, rawURL, "")
}

// sharedConfigEngine is sharedConfig with proxy.engine set (empty: the default).
func sharedConfigEngine(dir, token, originURL, rawURL, engine string) string {
	eng := ""
	if engine != "" {
		eng = "\n  engine: " + engine
	}
	return fmt.Sprintf(`
agent: {region: test, data_dir: %s, admin_token: %q}
defaults: {timeout: 2s}
targets:
  - {name: app, url: %s}
  - {name: raw, url: %s}
checks:
  - {name: trig, targets: [app], cron: "0 0 1 1 *", http: {path: /api/trig}}
alerting: {evaluation_interval: 1s}
proxy:
  listen: 127.0.0.1:0%s
  max_header_bytes: 4KiB
  max_body: 64KiB
  read_header_timeout: 1s
  read_timeout: 3s
  pools:
    - {name: app, hosts: [app.local], origins: [{target: app}], retry: {tries: 1}}
    - {name: raw, hosts: [raw.local], origins: [{target: raw}], retry: {tries: 1}, passive: {consecutive_5xx: 1000}}
`, dir, token, originURL, rawURL, eng)
}

// TestBadInputAuth: the trigger API, the drain API and the status page's
// fault switch refuse every request without the right bearer token and
// change nothing; the right token works (so the refusals are not an
// artefact of a broken endpoint).
func TestBadInputAuth(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	raw := newRawOrigin(t, 0, 0)
	var faultSets atomic.Int64
	faults := &statuspage.FaultControl{Origins: []string{"app"}, Modes: []string{"ok", "503"},
		Set: func(origin, mode string) error { faultSets.Add(1); return nil }}
	b := startBadApp(t, sharedConfig(t.TempDir(), badToken, o.URL(), raw.url()), nil, faults)
	trigger := b.base + "/api/v1/trigger?check=trig&target=app"
	drain := b.base + "/api/v1/origins/app/drain"

	for name, auth := range badAuths(badToken) {
		t.Run(name, func(t *testing.T) {
			if code, body := do(t, "POST", trigger, auth, nil); code != http.StatusUnauthorized {
				t.Errorf("trigger: %d %s, want 401", code, body)
			}
			if code, body := do(t, "POST", drain, auth, nil); code != http.StatusUnauthorized {
				t.Errorf("drain: %d %s, want 401", code, body)
			}
			if code, body := do(t, "POST", b.base+"/api/v1/origins/app/undrain", auth, nil); code != http.StatusUnauthorized {
				t.Errorf("undrain: %d %s, want 401", code, body)
			}
			form := url.Values{"origin": {"app"}, "mode": {"503"}}
			if code, body := do(t, "POST", b.base+"/fault", auth, strings.NewReader(form.Encode())); code != http.StatusUnauthorized {
				t.Errorf("fault: %d %s, want 401", code, body)
			}
		})
	}
	// The fault form also takes the token as a form field.
	form := url.Values{"origin": {"app"}, "mode": {"503"}, "token": {"wrong-" + badToken}}
	if code, body := do(t, "POST", b.base+"/fault", "", strings.NewReader(form.Encode())); code != http.StatusUnauthorized {
		t.Errorf("fault with a wrong form token: %d %s, want 401", code, body)
	}

	// Nothing changed: no check ran, the origin is still in, no fault set.
	if n := o.Count("GET", "/api/trig"); n != 0 {
		t.Errorf("refused triggers ran the check: origin saw %d requests", n)
	}
	if st := originState(t, b.base, "app"); st["available"] != true || st["drained"] != false {
		t.Errorf("refused drains changed the origin: %v", st)
	}
	if n := faultSets.Load(); n != 0 {
		t.Errorf("refused fault POSTs switched a fault %d times", n)
	}

	// The right token works on each endpoint.
	if code, body := do(t, "POST", trigger, "Bearer "+badToken, nil); code != 200 {
		t.Errorf("trigger with the token: %d %s", code, body)
	}
	if n := o.Count("GET", "/api/trig"); n != 1 {
		t.Errorf("an authorised trigger: origin saw %d requests, want 1", n)
	}
	if code, body := do(t, "POST", drain, "Bearer "+badToken, nil); code != 200 {
		t.Errorf("drain with the token: %d %s", code, body)
	}
	if st := originState(t, b.base, "app"); st["available"] != false || st["drained"] != true {
		t.Errorf("authorised drain did not drain: %v", st)
	}
	if code, body := do(t, "POST", b.base+"/api/v1/origins/app/undrain", "Bearer "+badToken, nil); code != 200 {
		t.Errorf("undrain with the token: %d %s", code, body)
	}
	form = url.Values{"origin": {"app"}, "mode": {"503"}}
	if code, body := do(t, "POST", b.base+"/fault", "Bearer "+badToken, strings.NewReader(form.Encode())); code != http.StatusSeeOther && code != 200 {
		t.Errorf("fault with the token: %d %s", code, body)
	}
	if n := faultSets.Load(); n != 1 {
		t.Errorf("authorised fault POST: %d switches, want 1", n)
	}
}

// TestBadInputNoAdminToken: with agent.admin_token empty every write is
// refused, whatever the request carries, and the status page has no fault
// switch outside the demo.
func TestBadInputNoAdminToken(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	raw := newRawOrigin(t, 0, 0)
	b := startBadApp(t, sharedConfig(t.TempDir(), "", o.URL(), raw.url()), nil, nil)
	for _, auth := range []string{"", "Bearer ", "Bearer x", "Bearer null", `Bearer ""`} {
		if code, body := do(t, "POST", b.base+"/api/v1/trigger?check=trig&target=app", auth, nil); code != http.StatusForbidden {
			t.Errorf("trigger %q: %d %s, want 403", auth, code, body)
		}
		if code, body := do(t, "POST", b.base+"/api/v1/origins/app/drain", auth, nil); code != http.StatusForbidden {
			t.Errorf("drain %q: %d %s, want 403", auth, code, body)
		}
		form := url.Values{"origin": {"app"}, "mode": {"503"}, "token": {""}}
		if code, body := do(t, "POST", b.base+"/fault", auth, strings.NewReader(form.Encode())); code < 400 {
			t.Errorf("fault %q without demo mode: %d %s, want it refused", auth, code, body)
		}
	}
	if n := o.Count("GET", "/api/trig"); n != 0 {
		t.Errorf("refused triggers ran the check: %d requests", n)
	}
	if st := originState(t, b.base, "app"); st["available"] != true || st["drained"] != false {
		t.Errorf("refused drains changed the origin: %v", st)
	}
	if _, body := do(t, "GET", b.base+"/", "", nil); strings.Contains(body, `action="/fault"`) {
		t.Error("the status page offers fault switches outside the demo")
	}
}

// TestBadInputOpenProxy: the proxy listener is not an open proxy. Requests
// naming another host (absolute-form, CONNECT, Host) are refused and vigil
// never connects to the host they name (a sentinel listener counts
// connection attempts); a configured host is served.
func TestBadInputOpenProxy(t *testing.T) { eachEngine(t, testOpenProxy) }

func testOpenProxy(t *testing.T, engine string) {
	o := checktest.NewOrigin()
	defer o.Close()
	raw := newRawOrigin(t, 0, 0)
	b := startBadApp(t, sharedConfigEngine(t.TempDir(), badToken, o.URL(), raw.url(), engine), nil, nil)
	sent := newSentinel(t)
	originHost := strings.TrimPrefix(o.URL(), "http://")

	cases := []struct {
		name, raw string
		want      []int
	}{
		{"absolute URI, external host", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", []int{400, 421}},
		{"absolute URI, external host, configured Host header", "GET http://example.com/ HTTP/1.1\r\nHost: app.local\r\n\r\n", []int{400, 421}},
		{"absolute URI, loopback sentinel", "GET http://" + sent.addr() + "/ HTTP/1.1\r\nHost: " + sent.addr() + "\r\n\r\n", []int{400, 421}},
		{"absolute URI, sentinel, configured Host header", "GET http://" + sent.addr() + "/x HTTP/1.1\r\nHost: app.local\r\n\r\n", []int{400, 421}},
		{"absolute URI, origin address", "GET http://" + originHost + "/api/x HTTP/1.1\r\nHost: " + originHost + "\r\n\r\n", []int{400, 421}},
		{"absolute https URI", "GET https://" + sent.addr() + "/ HTTP/1.1\r\nHost: " + sent.addr() + "\r\n\r\n", []int{400, 421}},
		{"CONNECT external", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", []int{400, 405}},
		{"CONNECT sentinel", "CONNECT " + sent.addr() + " HTTP/1.1\r\nHost: " + sent.addr() + "\r\n\r\n", []int{400, 405}},
		{"CONNECT configured host", "CONNECT app.local:80 HTTP/1.1\r\nHost: app.local:80\r\n\r\n", []int{400, 405}},
		{"unknown Host", "GET /api/x HTTP/1.1\r\nHost: evil.example\r\n\r\n", []int{421}},
		{"sentinel as Host", "GET /api/x HTTP/1.1\r\nHost: " + sent.addr() + "\r\n\r\n", []int{421}},
		{"origin address as Host", "GET /api/x HTTP/1.1\r\nHost: " + originHost + "\r\n\r\n", []int{421}},
		{"no Host (HTTP/1.0)", "GET /api/x HTTP/1.0\r\n\r\n", []int{400, 421}},
		{"empty Host", "GET /api/x HTTP/1.1\r\nHost:\r\n\r\n", []int{400, 421}},
		{"two Hosts", "GET /api/x HTTP/1.1\r\nHost: app.local\r\nHost: evil.example\r\n\r\n", []int{400}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := rawExchange(t, b.proxy, c.raw)
			ok := false
			for _, w := range c.want {
				ok = ok || code == w
			}
			if !ok {
				t.Errorf("%d %q, want one of %v", code, body, c.want)
			}
		})
	}
	if n := sent.accepted.Load(); n != 0 {
		t.Errorf("the proxy connected %d times to a host named only by a client", n)
	}
	if n := o.Total(); n != 0 {
		t.Errorf("refused requests reached the origin: %v", o.Requests())
	}

	// The configured host is served, in origin form and absolute form.
	if code, _, body := rawExchange(t, b.proxy, "GET /api/x HTTP/1.1\r\nHost: app.local\r\nConnection: close\r\n\r\n"); code != 200 {
		t.Errorf("configured host: %d %q", code, body)
	}
	if code, _, body := rawExchange(t, b.proxy, "GET http://app.local/api/y HTTP/1.1\r\nHost: app.local\r\nConnection: close\r\n\r\n"); code != 200 {
		t.Errorf("configured host, absolute form: %d %q", code, body)
	}
	if o.Count("GET", "/api/x") != 1 || o.Count("GET", "/api/y") != 1 {
		t.Errorf("origin requests: %v", o.Requests())
	}
	if n := sent.accepted.Load(); n != 0 {
		t.Errorf("the proxy connected %d times to the sentinel", n)
	}

	// Outside the demo the status page has no fault switch, even for the
	// admin token.
	form := url.Values{"origin": {"app"}, "mode": {"503"}}
	if code, body := do(t, "POST", b.base+"/fault", "Bearer "+badToken, strings.NewReader(form.Encode())); code < 400 {
		t.Errorf("POST /fault outside the demo, with the admin token: %d %s, want it refused", code, body)
	}
}

// TestBadInputOversizedClient: request headers over proxy.max_header_bytes
// get 431, bodies over proxy.max_body get 413 (declared or chunked), the
// agent listener bounds headers too, and none of it reaches the origin.
func TestBadInputOversizedClient(t *testing.T) { eachEngine(t, testOversizedClient) }

func testOversizedClient(t *testing.T, engine string) {
	o := checktest.NewOrigin()
	defer o.Close()
	raw := newRawOrigin(t, 0, 0)
	b := startBadApp(t, sharedConfigEngine(t.TempDir(), badToken, o.URL(), raw.url(), engine), nil, nil)

	// 64 KiB of headers against max_header_bytes 4KiB (net/http allows 4 KiB of slack).
	big := strings.Repeat("x", 64<<10)
	code, _, _ := rawExchange(t, b.proxy, "GET /api/x HTTP/1.1\r\nHost: app.local\r\nX-Big: "+big+"\r\n\r\n")
	if code != http.StatusRequestHeaderFieldsTooLarge && code != http.StatusBadRequest {
		t.Errorf("64 KiB header to the proxy: %d, want 431 (or 400)", code)
	}
	many := strings.Repeat("X-A: 0123456789012345678901234567890123456789\r\n", 2000)
	code, _, _ = rawExchange(t, b.proxy, "GET /api/x HTTP/1.1\r\nHost: app.local\r\n"+many+"\r\n")
	if code != http.StatusRequestHeaderFieldsTooLarge && code != http.StatusBadRequest {
		t.Errorf("2000 header lines to the proxy: %d, want 431 (or 400)", code)
	}

	// Bodies over max_body 64KiB: declared, and chunked without a length.
	body := strings.Repeat("y", 1<<20)
	code, _, _ = rawExchange(t, b.proxy, fmt.Sprintf("POST /api/up HTTP/1.1\r\nHost: app.local\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB declared body: %d, want 413", code)
	}
	code, _, _ = rawExchange(t, b.proxy, "POST /api/up HTTP/1.1\r\nHost: app.local\r\nContent-Length: 10000000000\r\n\r\nabc")
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("10 GB declared body: %d, want 413", code)
	}
	var chunked strings.Builder
	chunked.WriteString("POST /api/up HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding: chunked\r\n\r\n")
	for i := 0; i < 64; i++ {
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", 16<<10, strings.Repeat("z", 16<<10))
	}
	chunked.WriteString("0\r\n\r\n")
	code, _, _ = rawExchange(t, b.proxy, chunked.String())
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB chunked body: %d, want 413", code)
	}
	if n := o.Count("POST", "/api/up"); n != 0 {
		t.Errorf("oversized bodies reached the origin %d times", n)
	}
	if n := o.Total(); n != 0 {
		t.Errorf("oversized requests reached the origin: %v", o.Requests())
	}
	// A body within the limit is forwarded.
	small := strings.Repeat("s", 1000)
	code, _, _ = rawExchange(t, b.proxy, fmt.Sprintf("POST /api/up HTTP/1.1\r\nHost: app.local\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(small), small))
	if code != 200 || o.Count("POST", "/api/up") != 1 {
		t.Errorf("1 kB body: %d, origin saw %d", code, o.Count("POST", "/api/up"))
	}

	// The agent listener: 2 MiB of headers, and a large trigger body.
	code, _, _ = rawExchange(t, strings.TrimPrefix(b.base, "http://"), "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("x", 2<<20)+"\r\n\r\n")
	if code != http.StatusRequestHeaderFieldsTooLarge && code != http.StatusBadRequest {
		t.Errorf("2 MiB header to the agent: %d, want 431 (or 400)", code)
	}
	huge := `{"check":"trig","target":"app","x":"` + strings.Repeat("q", 4<<20) + `"}`
	req, _ := http.NewRequest("POST", b.base+"/api/v1/trigger", strings.NewReader(huge))
	req.Header.Set("Authorization", "Bearer "+badToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("4 MiB trigger body: %d, want it refused", resp.StatusCode)
		}
	} // an error is fine too: the server may close before reading it all
	if n := o.Count("GET", "/api/trig"); n != 0 {
		t.Errorf("an oversized trigger body ran the check")
	}
}

// TestBadInputOversizedOrigin: an origin that sends a 1 MiB response header
// line gets the client a 502 and the proxy stays up; a check against it
// fails with a clear cause, and a check against an endless body stops at
// body_limit instead of reading it all.
func TestBadInputOversizedOrigin(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	raw := newRawOrigin(t, 1<<20, 256<<20)

	t.Run("proxy", func(t *testing.T) {
		eachEngine(t, func(t *testing.T, engine string) {
			b := startBadApp(t, sharedConfigEngine(t.TempDir(), badToken, o.URL(), raw.url(), engine), nil, nil)
			// Through the body-less fast path (GET) and the transport (POST).
			var got []string
			for _, req := range []string{
				"GET /bighdr HTTP/1.1\r\nHost: raw.local\r\nConnection: close\r\n\r\n",
				"POST /bighdr HTTP/1.1\r\nHost: raw.local\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
			} {
				code, hdr, _ := rawExchange(t, b.proxy, req)
				if code != http.StatusBadGateway {
					got = append(got, fmt.Sprintf("%.4s: client got %d with a %d-byte X-Big header", req, code, len(hdr.Get("X-Big"))))
				}
			}
			// Either way the proxy and the agent stay up.
			if code, _, body := rawExchange(t, b.proxy, "GET /api/x HTTP/1.1\r\nHost: app.local\r\nConnection: close\r\n\r\n"); code != 200 {
				t.Errorf("the proxy after the oversized response: %d %q", code, body)
			}
			if code, _ := do(t, "GET", b.base+"/healthz", "", nil); code != 200 {
				t.Errorf("agent /healthz after the oversized response: %d", code)
			}
			if len(got) > 0 {
				t.Errorf("an origin's 1 MiB response header was forwarded instead of answered with 502 (%s)", strings.Join(got, "; "))
			}
		})
	})

	t.Run("check", func(t *testing.T) {
		cfg := writeConfig(t, fmt.Sprintf(`
targets: [{name: raw, url: %s}]
checks:
  - {name: bighdr, targets: [raw], timeout: 5s, http: {path: /bighdr}}
  - {name: bigbody, targets: [raw], timeout: 5s, http: {path: /bigbody, body_limit: 64KiB}, expect: {checksum: "sha256:%s"}}
`, raw.url(), checktest.AssetSHA256()))
		start := time.Now()
		out, code := runCLI(t, "check", "-c", cfg, "--json")
		took := time.Since(start)
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%.2000s", code, out)
		}
		rows := map[string]map[string]any{}
		for _, line := range strings.Split(out, "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil {
				rows[fmt.Sprint(m["check"])] = m
			}
		}
		h, bb := rows["bighdr"], rows["bigbody"]
		if h == nil || h["ok"] != false || h["cause"] == "" || !strings.Contains(strings.ToLower(fmt.Sprint(h["error"])), "header") {
			t.Errorf("1 MiB header line: want a failure naming the header, got %v", h)
		}
		if bb == nil || bb["ok"] != false || bb["cause"] != "checksum" || !strings.Contains(fmt.Sprint(bb), "body_limit") {
			t.Errorf("endless body: want a checksum failure over body_limit, got %v", bb)
		}
		if w := raw.written.Load(); w > 32<<20 {
			t.Errorf("the check read %d MiB of an endless body with body_limit 64KiB", w>>20)
		}
		if took > 8*time.Second {
			t.Errorf("the checks took %s (timeout 5s)", took)
		}
	})
}

// TestBadInputSlowClients: a client that sends half a request line (or
// nothing, or one byte at a time) is disconnected by the proxy listener
// within read_header_timeout (1s here) and by the agent listener within its
// 10s header timeout; a client that sends its headers and then stalls the
// body is disconnected by the proxy within read_timeout (3s here) and by
// the agent listener.
func TestBadInputSlowClients(t *testing.T) { eachEngine(t, testSlowClients) }

func testSlowClients(t *testing.T, engine string) {
	o := checktest.NewOrigin()
	defer o.Close()
	raw := newRawOrigin(t, 0, 0)
	b := startBadApp(t, sharedConfigEngine(t.TempDir(), badToken, o.URL(), raw.url(), engine), nil, nil)
	agent := strings.TrimPrefix(b.base, "http://")

	// openFor connects, sends first (then one byte every 200ms when drip is
	// set) and returns how long the server took to close the connection,
	// or open true when it was still open after limit.
	openFor := func(addr, first string, drip bool, limit time.Duration) (d time.Duration, open bool, err error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, false, err
		}
		defer c.Close()
		start := time.Now()
		if first != "" {
			if _, err := io.WriteString(c, first); err != nil {
				return 0, false, err
			}
		}
		c.SetReadDeadline(start.Add(limit))
		if drip {
			go func() {
				for i := 0; i < int(limit/(200*time.Millisecond)); i++ {
					time.Sleep(200 * time.Millisecond)
					if _, err := c.Write([]byte("a")); err != nil {
						return
					}
				}
			}()
		}
		buf := make([]byte, 4096)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue // an error response before closing is fine
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return limit, true, nil
			}
			return time.Since(start), false, nil
		}
	}

	type probe struct {
		name, addr, first string
		drip              bool
		limit             time.Duration
		// judge is called when the connection was still open after limit.
		judge func(t *testing.T, d time.Duration)

		d    time.Duration
		open bool
		err  error
	}
	var probes []*probe
	heads := []struct {
		name, first string
		drip        bool
	}{
		{"half a request line", "GET /api/x HT", false},
		{"request line, no headers end", "GET /api/x HTTP/1.1\r\nHost: app.local\r\n", false},
		{"nothing", "", false},
		{"one byte every 200ms", "GET /", true},
	}
	for _, h := range heads {
		probes = append(probes, &probe{name: "proxy/" + h.name, addr: b.proxy, first: h.first, drip: h.drip, limit: 3 * time.Second,
			judge: func(t *testing.T, d time.Duration) {
				t.Errorf("the proxy kept the connection open for %s (read_header_timeout 1s)", d)
			}})
	}
	// Headers complete, 3 of 100 body bytes, then nothing.
	probes = append(probes, &probe{name: "proxy/stalled body", addr: b.proxy, limit: 6 * time.Second,
		first: "POST /api/x HTTP/1.1\r\nHost: app.local\r\nContent-Length: 100\r\n\r\nabc",
		judge: func(t *testing.T, d time.Duration) {
			t.Errorf("the proxy kept a stalled upload open for %s (read_timeout 3s)", d)
		}})
	if engine == proxyEngines[0] { // the agent listener does not depend on the proxy engine
		for _, h := range heads {
			probes = append(probes, &probe{name: "agent/" + h.name, addr: agent, first: h.first, drip: h.drip, limit: 13 * time.Second,
				judge: func(t *testing.T, d time.Duration) {
					t.Errorf("the agent listener kept the connection open for %s (header timeout 10s)", d)
				}})
		}
		for _, req := range []string{
			"POST /api/v1/trigger HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nabc",
			"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nabc",
		} {
			probes = append(probes, &probe{name: "agent/stalled body " + strings.Fields(req)[1], addr: agent, first: req, limit: 13 * time.Second,
				judge: func(t *testing.T, d time.Duration) {
					t.Errorf("the agent listener kept a connection whose request body stalls open for %s (read timeout 10s)", d)
				}})
		}
	}
	// All connections at once (they mostly wait), then one subtest each.
	var wg sync.WaitGroup
	for _, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.d, p.open, p.err = openFor(p.addr, p.first, p.drip, p.limit)
		}()
	}
	wg.Wait()
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			switch {
			case p.err != nil:
				t.Fatal(p.err)
			case p.open:
				p.judge(t, p.d)
			default:
				t.Logf("closed after %s", p.d.Round(10*time.Millisecond))
			}
		})
	}
}

// TestBadInputSecrets: secrets interpolated from the environment (admin
// token, InfluxDB token, a webhook URL's query token, a check's header and
// a target URL's query key) never show in the logs (all of them, at debug
// level, including the standard library logger), the HTTP endpoints, `vigil
// validate` or `vigil check --json`, while delivery and check failures that
// involve them are being reported.
func TestBadInputSecrets(t *testing.T) {
	secrets := map[string]string{
		"BADIN_T":  "admintok-7f3a9c2e1b",
		"BADIN_IT": "influxtok-c0ffee1234",
		"BADIN_WT": "hooktok-5e5e5e5e5e",
		"BADIN_WH": "hookhdr-abcabcabc9",
		"BADIN_CT": "checktok-9d9d9d9d9d",
		"BADIN_UK": "urlkey-4242424242aa",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	// Capture the process-wide loggers too (libraries that log on their own).
	var logs checktest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prevSlog, prevLog := slog.Default(), log.Writer()
	slog.SetDefault(logger)
	log.SetOutput(&logs)
	defer func() { slog.SetDefault(prevSlog); log.SetOutput(prevLog) }()

	bad := checktest.NewOrigin(checktest.WithMode(checktest.Mode503))
	defer bad.Close()
	good := checktest.NewOrigin()
	defer good.Close()
	var hookHits atomic.Int64
	var hookMu sync.Mutex
	var hookBodies bytes.Buffer
	hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookHits.Add(1)
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		hookMu.Lock()
		hookBodies.Write(b)
		hookBodies.WriteString("\n")
		hookMu.Unlock()
		http.Error(w, "receiver down", http.StatusInternalServerError)
	})}
	hookLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hook.Serve(hookLn)
	defer hook.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // nothing listens there now

	common := fmt.Sprintf(`
defaults: {interval: 300ms, timeout: 250ms, rise: 1, fall: 1, jitter: "0%%"}
targets:
  - {name: bad, url: "%s?key=${BADIN_UK}"}
  - {name: good, url: %s}
  - {name: gone, url: "http://user:${BADIN_CT}@%s/?key=${BADIN_UK}"}
checks:
  - name: api
    targets: [bad, good, gone]
    http: {path: /api/me, headers: {Authorization: "Bearer ${BADIN_CT}", X-Api-Key: "${BADIN_UK}"}}
alerting:
  evaluation_interval: 1s
  down: {for: 1s}
  retry: {attempts: 2, backoff: 100ms, timeout: 1s}
  receivers:
    - name: hook
      webhook:
        url: "http://%s/hook?token=${BADIN_WT}"
        headers: {Authorization: "Bearer ${BADIN_WH}"}
proxy:
  listen: 127.0.0.1:0
  admin_token: "${BADIN_T}"
  pools:
    - {name: web, hosts: ["*"], origins: [{target: good}, {url: "%s"}]}
`, bad.URL(), good.URL(), closedAddr, hookLn.Addr().String(), bad.URL())
	// App 1 reads from the embedded store so its alerter fires and the
	// webhook fails; app 2 publishes to an InfluxDB that is not there.
	cfg1 := fmt.Sprintf("agent: {region: r1, data_dir: %s, admin_token: \"${BADIN_T}\"}\n", t.TempDir()) + common
	cfg2 := fmt.Sprintf("agent: {region: r2, data_dir: %s, admin_token: \"${BADIN_T}\"}\n", t.TempDir()) + common +
		fmt.Sprintf(`
store:
  influxdb: {url: "http://%s", token: "${BADIN_IT}", org: o, bucket: b, flush_interval: 200ms, timeout: 1s}
`, closedAddr)
	a1 := startBadApp(t, cfg1, logger, nil)
	a2 := startBadApp(t, cfg2, logger, nil)

	// Traffic through the proxies, with secrets in the request too.
	for _, p := range []string{a1.proxy, a2.proxy} {
		for i := 0; i < 5; i++ {
			rawExchange(t, p, "GET /api/me HTTP/1.1\r\nHost: app.local\r\nConnection: close\r\n\r\n")
		}
	}
	// Wait until the webhook has failed and /healthz reports it (bounded).
	var health1 string
	waitFor(t, 15*time.Second, "the failing webhook on /healthz", func() bool {
		_, health1 = do(t, "GET", a1.base+"/healthz", "", nil)
		return hookHits.Load() >= 2 && strings.Contains(health1, "alert receiver hook failing")
	})
	time.Sleep(1500 * time.Millisecond) // a few more flushes to the missing InfluxDB

	var outputs []struct{ what, text string }
	add := func(what, text string) { outputs = append(outputs, struct{ what, text string }{what, text}) }
	for i, b := range []*badApp{a1, a2} {
		for _, p := range []string{"/healthz", "/metrics", "/", "/api/v1/verdicts", "/api/v1/alerts", "/api/v1/origins", "/check/api"} {
			_, body := do(t, "GET", b.base+p, "", nil)
			add(fmt.Sprintf("app%d GET %s", i+1, p), body)
		}
		// A refused write's error body.
		_, body := do(t, "POST", b.base+"/api/v1/trigger?check=api&target=bad", "Bearer nope", nil)
		add(fmt.Sprintf("app%d refused trigger", i+1), body)
	}
	a1.stop()
	a2.stop()
	add("logs", logs.String())

	// The CLI on the same config: valid, and with errors next to secrets.
	path := writeConfig(t, cfg2)
	out, code := runCLI(t, "validate", "-c", path)
	if code != 0 {
		t.Errorf("validate: exit %d: %s", code, out)
	}
	add("vigil validate", out)
	// Invalid values made of secrets: decode errors (reported first), then
	// validation errors, then the environment overrides.
	decodeBad := writeConfig(t, `
agent: {admin_token: "${BADIN_T}"}
targets: [{name: t, url: "http://127.0.0.1:1"}]
checks:
  - {name: c, targets: [t], interval: "${BADIN_CT}", timeout: "${BADIN_UK}"}
`)
	out, code = runCLI(t, "validate", "-c", decodeBad)
	if code != 2 || !strings.Contains(out, "checks[0].interval") {
		t.Errorf("validate of bad durations: exit %d, want 2 naming checks[0].interval:\n%s", code, out)
	}
	add("vigil validate (decode errors)", out)
	invalid := writeConfig(t, `
agent: {admin_token: "${BADIN_T}", listen: "${BADIN_IT}"}
store:
  influxdb: {url: "ftp://u:${BADIN_IT}@x", token: "${BADIN_IT}"}
targets: [{name: t, url: "nope://${BADIN_UK}"}]
checks:
  - {name: c, targets: [t], expect: {status: "${BADIN_CT}", headers: {X: "/${BADIN_WH}(/"}, checksum: "sha256:${BADIN_WH}"}}
alerting:
  receivers: [{name: r, webhook: {url: "not a url ${BADIN_WT}"}}]
proxy:
  admin_token: "${BADIN_T}"
  pools: [{name: p, hosts: ["${BADIN_T}"], origins: [{url: "http://${BADIN_WH}:99999/x"}]}]
`)
	out, code = runCLI(t, "validate", "-c", invalid)
	if code != 2 || !strings.Contains(out, "checks[0].expect.status") || !strings.Contains(out, "proxy.pools[0]") {
		t.Errorf("validate of an invalid config: exit %d, want 2 and key paths:\n%s", code, out)
	}
	add("vigil validate (invalid)", out)
	t.Setenv("VIGIL_AGENT_ADMIN_TOKEN", secrets["BADIN_T"]+"-env")
	t.Setenv("VIGIL_AGENT_LISTEN", secrets["BADIN_T"]+"-listen")
	t.Setenv("VIGIL_AGENT_CONCURRENCY", secrets["BADIN_T"]+"-n")
	out, code = runCLI(t, "validate", "-c", invalid)
	if code != 2 {
		t.Errorf("validate with env overrides: exit %d, want 2", code)
	}
	add("vigil validate (invalid, env overrides)", out)
	os.Unsetenv("VIGIL_AGENT_ADMIN_TOKEN")
	os.Unsetenv("VIGIL_AGENT_LISTEN")
	os.Unsetenv("VIGIL_AGENT_CONCURRENCY")

	out, code = runCLI(t, "check", "-c", path, "--json")
	if code != 1 || !strings.Contains(out, `"target":"gone"`) {
		t.Errorf("check --json: exit %d, want 1 with a row per target:\n%s", code, out)
	}
	add("vigil check --json", out)
	out, _ = runCLI(t, "check", "-c", path)
	add("vigil check", out)

	// The failures whose errors could carry the secrets were logged.
	for _, want := range []string{"alerting: delivery failed", "influx: write failed"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the logs lack %q: the failure was not exercised\n%.3000s", want, logs.String())
		}
	}
	hookMu.Lock()
	add("webhook notifications", hookBodies.String())
	hookMu.Unlock()

	// A target URL's credentials (userinfo password, query key) shown as
	// part of a URL are a known leak, reported separately below.
	var known []string
	for _, o := range outputs {
		for name, s := range secrets {
			for off := 0; ; {
				i := strings.Index(o.text[off:], s)
				if i < 0 {
					break
				}
				i += off
				off = i + len(s)
				lo, hi := max(0, i-160), min(len(o.text), i+len(s)+80)
				ctx := o.text[lo:hi]
				if (name == "BADIN_CT" || name == "BADIN_UK") && strings.Contains(o.text[max(0, i-60):i], "http://") {
					known = append(known, fmt.Sprintf("%s shows $%s in a URL: …%s…", o.what, name, ctx))
					continue
				}
				t.Errorf("%s shows $%s: …%s…", o.what, name, ctx)
				break
			}
		}
	}
	t.Run("target URL credentials", func(t *testing.T) {
		if len(known) > 0 {
			t.Errorf("a URL shown by vigil carries a secret (%d occurrences), e.g.\n%s", len(known), strings.Join(known[:min(3, len(known))], "\n"))
		}
	})
}

// TestBadInputTargetURLQuery: a target URL that carries a query string
// (an API key, a tenant) is accepted by the loader; a check's path must
// still reach the origin as the request path.
func TestBadInputTargetURLQuery(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets: [{name: q, url: "%s/?tenant=t1"}, {name: q2, url: "%s?tenant=t2"}]
checks:
  - {name: api, targets: [q, q2], http: {path: /api/x}}
`, o.URL(), o.URL()))
	out, code := runCLI(t, "check", "-c", cfg, "--json")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if n := o.Count("GET", "/api/x"); n != 2 {
		t.Errorf("with a query in the target URL the check's path was lost: the origin saw %v instead of 2 × GET /api/x", o.Requests())
	}
}

// endRequest follows the fuzzed bytes on the connection so that the
// server closes it once it has read them all.
const endRequest = "GET /api/end HTTP/1.1\r\nHost: app.local\r\nConnection: close\r\n\r\n"

// exchangeSeen writes raw and then endRequest to addr, reads the answer
// until the server closes (at most 2s, 1 MiB) and returns it with the
// request lines the origin received meanwhile, in order.
func exchangeSeen(addr string, raw []byte, o *rawOrigin) (answer string, seen []string, err error) {
	o.logMu.Lock()
	from := len(o.log)
	o.logMu.Unlock()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	c.Write(append(append([]byte(nil), raw...), endRequest...))
	b, _ := io.ReadAll(io.LimitReader(c, 1<<20))
	return string(b), o.seen(from), nil
}

// smugglingSeeds are request byte streams at the edges of HTTP/1.1
// framing: conflicting and malformed lengths, odd chunking, bare LF,
// folded and duplicate fields, pipelining.
var smugglingSeeds = []string{
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\n\r\n",
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\n\r\nGET /api/b HTTP/1.1\r\nHost: app.local\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nContent-Length: 5\r\n\r\nhello",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nContent-Length: 5, 5\r\n\r\nhello",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nContent-Length: +5\r\n\r\nhello",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nContent-Length: -1\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /api/smuggled HTTP/1.1\r\nHost: app.local\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff1\r\nx\r\n0\r\n\r\n",
	"POST /api/a HTTP/1.1\r\nHost: app.local\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
	"GET /api/a HTTP/1.1\nHost: app.local\n\n",
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\nHost: other\r\n\r\n",
	"GET /api/a HTTP/1.1\r\nHost : app.local\r\n\r\n",
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\nX: a\x00b\r\n\r\n",
	"GET /api/a HTTP/1.0\r\nHost: app.local\r\n\r\n",
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\nConnection: close\r\n\r\nGET /api/b HTTP/1.1\r\nHost: app.local\r\n\r\n",
	"GET http://app.local/api/a HTTP/1.1\r\nHost: evil.example\r\n\r\n",
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	"GET /api/a HTTP/2.0\r\nHost: app.local\r\n\r\n",
	"GET  /api/a HTTP/1.1\r\nHost: app.local\r\n\r\n",
	"GET /api/a\x20HTTP/1.1 \r\nHost: app.local\r\n\r\n",
	"get /api/a HTTP/1.1\r\nHost: app.local\r\n\r\n",
	"GET /api/a HTTP/1.1\r\nHost: app.local\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
}

// unescaped is a request line with its target percent-decoded (the
// framing comparison ignores how a target is escaped; TestBadInputPathFidelity
// covers that).
func unescaped(line string) string {
	if u, err := url.PathUnescape(line); err == nil {
		return u
	}
	return line
}

// FuzzProxyEngines feeds the same bytes (followed by a closing request) to
// a proxy on the fast engine and one on net/http (stdlib) and compares the
// request lines that reach the origin, in order. Where both forwarded an
// i-th request it must be the same one: a difference means the engines
// disagree on where one request ends and the next begins (the root of
// request smuggling). One engine refusing where the other is lenient is
// not flagged. Both proxies must keep serving.
func FuzzProxyEngines(f *testing.F) {
	for _, s := range smugglingSeeds {
		f.Add([]byte(s))
	}
	type side struct {
		o    *rawOrigin
		addr string
	}
	var sides []side
	for _, engine := range proxyEngines {
		o := newRawOrigin(f, 0, 0)
		b := startBadApp(f, fmt.Sprintf(`
agent: {data_dir: %s}
targets: [{name: o, url: %s}]
checks: [{name: c, targets: [o], cron: "0 0 1 1 *", http: {path: /}}]
proxy:
  listen: 127.0.0.1:0
  engine: %s
  read_header_timeout: 1s
  read_timeout: 1s
  max_body: 64KiB
  pools: [{name: p, hosts: ["*"], origins: [{url: %s}], retry: {tries: 1}, passive: {consecutive_5xx: 1000000}}]
`, f.TempDir(), o.url(), engine, o.url()), nil, nil)
		sides = append(sides, side{o: o, addr: b.proxy})
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return
		}
		var seen [2][]string
		var answers [2]string
		for i, s := range sides {
			a, got, err := exchangeSeen(s.addr, raw, s.o)
			if err != nil {
				t.Fatalf("%s: %v", proxyEngines[i], err)
			}
			seen[i], answers[i] = got, a
		}
		for i := 0; i < min(len(seen[0]), len(seen[1])); i++ {
			if seen[0][i] != seen[1][i] && unescaped(seen[0][i]) != unescaped(seen[1][i]) {
				t.Errorf("request %d: the fast engine forwarded %q, net/http %q, for %q\nfast: %q\nstdlib: %q\nfast answered %.300q\nstdlib answered %.300q",
					i, seen[0][i], seen[1][i], raw, seen[0], seen[1], answers[0], answers[1])
				break
			}
		}
		for i, s := range sides {
			a, got, err := exchangeSeen(s.addr, nil, s.o)
			if err != nil || len(got) != 1 || !strings.HasPrefix(a, "HTTP/1.1 200") {
				t.Fatalf("%s: the proxy stopped serving after %q: %v %q %.200q", proxyEngines[i], raw, err, got, a)
			}
		}
	})
}

// TestBadInputPathFidelity: the proxy forwards the request target as the
// client sent it (signed URLs and caches key on the exact bytes): reserved
// characters are not percent-encoded and escapes are not decoded, on both
// engines.
func TestBadInputPathFidelity(t *testing.T) {
	targets := []string{
		"/a!b", "/a$b", "/a'b", "/a(b)", "/a*b", "/a,b", "/a;b=c", "/a:b", "/a@b", "/a+b",
		"/%41", "/a%2Fb", "/a%2fb", "/a%20b", "/a%25b", "/~user", "/a/./b", "/a//b",
		"/api?x=1&y=%2F&z=a+b", "/api?q=!$'()*,;=:@/?",
	}
	eachEngine(t, func(t *testing.T, engine string) {
		o := newRawOrigin(t, 0, 0)
		b := startBadApp(t, fmt.Sprintf(`
agent: {data_dir: %s}
targets: [{name: o, url: %s}]
checks: [{name: c, targets: [o], cron: "0 0 1 1 *", http: {path: /}}]
proxy:
  listen: 127.0.0.1:0
  engine: %s
  pools: [{name: p, hosts: ["*"], origins: [{url: %s}], retry: {tries: 1}}]
`, t.TempDir(), o.url(), engine, o.url()), nil, nil)
		var bad []string
		for _, target := range targets {
			// Without a body (the pool's fast path), with one (http.Transport).
			for _, req := range []string{
				"GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n",
				"POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
			} {
				_, seen, err := exchangeSeen(b.proxy, []byte(req), o)
				if err != nil {
					t.Fatal(err)
				}
				want := strings.Fields(req)[0] + " " + target
				if len(seen) == 0 || seen[0] != want {
					bad = append(bad, fmt.Sprintf("%s → %q", want, seen[:min(1, len(seen))]))
				}
			}
		}
		for _, b := range bad {
			t.Errorf("target not forwarded as sent: %s", b)
		}
	})
}

// secretSeeds are config files that put ${S} where a value is echoed in
// an error: bad durations, status ranges, checksums, regexes, URLs, names.
var secretSeeds = []string{
	"targets: [{name: t, url: \"${S}\"}]\nchecks: [{name: c, targets: [t]}]",
	"targets: [{name: t, url: \"http://u:${S}@127.0.0.1:1/?k=${S}\"}]\nchecks: [{name: c, targets: [t], http: {path: /}}]",
	"targets: [{name: t, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: c, targets: [t], interval: \"${S}\", timeout: \"${S}ms\"}]",
	"targets: [{name: t, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: c, targets: [t], expect: {status: \"${S}\", checksum: \"sha256:${S}\"}}]",
	"targets: [{name: t, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: c, targets: [t], expect: {headers: {X: \"/(${S}/\"}, body: {regex: \"(${S}\"}}}]",
	"targets: [{name: t, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: \"${S}\", targets: [\"${S}\"], http: {headers: {Authorization: \"Bearer ${S}\"}}}]",
	"agent: {admin_token: \"${S}\", listen: \"${S}\", concurrency: \"${S}\", region: \"${S}\"}",
	"store: {influxdb: {url: \"${S}\", token: \"${S}\", bucket: \"${S}\", flush_interval: \"${S}\"}}",
	"alerting: {receivers: [{name: r, webhook: {url: \"${S}\", headers: {A: \"${S}\"}}}, {name: p, pagerduty: {routing_key: \"${S}\", url: \"${S}\"}}]}",
	"proxy: {admin_token: \"${S}\", listen: \"${S}\", max_body: \"${S}\", pools: [{name: p, hosts: [\"${S}\"], policy: \"${S}\", hash: {key: \"${S}\"}, origins: [{url: \"http://${S}:1/x\"}]}]}",
	"slos: [{name: s, check: \"${S}\", objective: \"${S}\"}]",
	"status_page: {title: \"${S}\", refresh: \"${S}\"}",
}

// FuzzConfigSecrets: whatever the file, an error from the loader never
// contains a value that came from the environment.
func FuzzConfigSecrets(f *testing.F) {
	for _, s := range secretSeeds {
		f.Add(s, []byte{0x5e, 0xc7, 0xe7})
	}
	f.Fuzz(func(t *testing.T, doc string, sec []byte) {
		if len(doc) > 16<<10 {
			return
		}
		secret := fmt.Sprintf("Zq%x", sec)
		for len(secret) < 12 {
			secret += "Q9"
		}
		if strings.Contains(doc, secret) || strings.Contains(doc, "VIGIL_") {
			return // the file itself holds the text
		}
		env := func(name string) (string, bool) {
			if name == "S" {
				return secret, true
			}
			return "", false
		}
		_, err := parseConfig("fuzz.yaml", []byte(doc), env)
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret:\n%s\nfile:\n%s", err, doc)
		}
	})
}

// TestBadInputSecretPrefix: an invalid value that holds a secret is not
// shown in part either (an abbreviated echo gives away its beginning).
func TestBadInputSecretPrefix(t *testing.T) {
	const secret = "Zq9f8e7d6c5b4a3928"
	env := func(name string) (string, bool) {
		if name == "S" {
			return secret, true
		}
		return "", false
	}
	var leaks []string
	for _, doc := range secretSeeds {
		_, err := parseConfig("x.yaml", []byte(doc), env)
		if err == nil {
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.Contains(line, secret[:6]) {
				leaks = append(leaks, line)
			}
		}
	}
	if len(leaks) > 0 {
		t.Errorf("errors show the beginning of a secret:\n%s", strings.Join(leaks, "\n"))
	}
}
