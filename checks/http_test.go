package checks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// deadAddr returns a loopback address nothing listens on (listen, close).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// fullBacklogAddr returns a loopback listener whose accept queue is full and
// never drained: the kernel drops further SYNs, so a dial hangs until its
// deadline, which is how an unreachable host looks. It skips when the
// kernel does not behave so (fails under CI=true, where it must).
func fullBacklogAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	checktest.NeedDependency(t, "a socket", err)
	t.Cleanup(func() { syscall.Close(fd) })
	checktest.NeedDependency(t, "a loopback socket", syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	checktest.NeedDependency(t, "a listening socket", syscall.Listen(fd, 0))
	sa, _ := syscall.Getsockname(fd)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	fails := 0
	for i := 0; i < 16 && fails < 2; i++ {
		c, err := net.DialTimeout("tcp", addr, 150*time.Millisecond)
		if err != nil {
			fails++ // two dials in a row time out: the queue is full
			continue
		}
		fails = 0
		t.Cleanup(func() { c.Close() })
	}
	if fails == 2 {
		return addr
	}
	checktest.NeedDependency(t, "a loopback listener whose full accept queue makes dials hang", errors.New("could not fill its accept queue"))
	return ""
}

type causeCase struct {
	name      string
	target    func(t *testing.T) string
	spec      checks.HTTPSpec
	expect    checks.Expect
	timeout   time.Duration
	cause     checks.Cause
	errHas    string
	assertion string // a failing assertion that must be listed
}

func TestHTTPCauses(t *testing.T) {
	ok := checktest.NewOrigin()
	t.Cleanup(ok.Close)
	mode := func(m checktest.Mode, opts ...checktest.Option) func(t *testing.T) string {
		return func(t *testing.T) string {
			o := checktest.NewOrigin(append(opts, checktest.WithMode(m))...)
			t.Cleanup(o.Close)
			return o.URL()
		}
	}
	fixed := func(u string) func(*testing.T) string { return func(*testing.T) string { return u } }
	tlsOrigin := checktest.NewTLSOrigin()
	t.Cleanup(tlsOrigin.Close)
	soon := checktest.NewTLSOrigin(checktest.WithCert(checktest.CertOptions{NotAfter: time.Now().Add(5*24*time.Hour + time.Hour)}))
	t.Cleanup(soon.Close)
	expired := checktest.NewTLSOrigin(checktest.WithCert(checktest.CertOptions{NotAfter: time.Now().Add(-48 * time.Hour)}))
	t.Cleanup(expired.Close)
	caFile := func(o *checktest.Origin) string {
		f, err := o.CAFile()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	// An origin that sends headers and part of the body, then stalls
	// (/stall) or resets the connection (/cut).
	midBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cut" {
			c, _, _ := w.(http.Hijacker).Hijack()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
			time.Sleep(20 * time.Millisecond)
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			return
		}
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(midBody.Close)

	cases := []causeCase{
		{name: "timeout mid-body", target: fixed(midBody.URL), spec: checks.HTTPSpec{Path: "/stall"}, timeout: 300 * time.Millisecond,
			cause: checks.CauseTimeout, errHas: "response not complete within"},
		{name: "reset mid-body", target: fixed(midBody.URL), spec: checks.HTTPSpec{Path: "/cut"}, cause: checks.CauseReset},
		{name: "pass", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/asset.bin", CacheBust: true},
			expect: checks.Expect{Status: checks.StatusList{"200"}, Checksum: "sha256:" + checktest.AssetSHA256(), ContentType: "application/octet-stream",
				Headers: map[string]string{"cache-control": `~max-age=\d+`, "access-control-allow-origin": "present"},
				Size:    checks.SizeExpect{Min: 64 << 10, Max: 64 << 10}, TTFB: 5 * time.Second, Duration: 5 * time.Second}},
		{name: "connect_refused", target: func(t *testing.T) string { return "http://" + deadAddr(t) }, cause: checks.CauseConnectRefused, errHas: "connection refused"},
		{name: "origin down", target: mode(checktest.ModeDown), cause: checks.CauseConnectRefused},
		{name: "connect_timeout", target: func(t *testing.T) string { return "http://" + fullBacklogAddr(t) }, timeout: 300 * time.Millisecond,
			cause: checks.CauseConnectTimeout, errHas: "no connection within"},
		{name: "https blackhole", target: func(t *testing.T) string {
			o := checktest.NewTLSOrigin(checktest.WithMode(checktest.ModeBlackhole))
			t.Cleanup(o.Close)
			return o.URL()
		}, timeout: 300 * time.Millisecond, cause: checks.CauseTLS, errHas: "handshake not finished within"},
		{name: "blackhole", target: mode(checktest.ModeBlackhole), timeout: 300 * time.Millisecond, cause: checks.CauseTimeout, errHas: "no response within"},
		{name: "dns", target: fixed("http://host.invalid:80"), cause: checks.CauseDNS, errHas: "no such host"},
		{name: "reset", target: mode(checktest.ModeReset), cause: checks.CauseReset},
		{name: "unknown authority", target: fixed(tlsOrigin.URL()), cause: checks.CauseCert, errHas: "unknown authority"},
		{name: "hostname mismatch", target: fixed(tlsOrigin.URL()), spec: checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile(tlsOrigin), ServerName: "wrong.example"}},
			cause: checks.CauseCert, errHas: "wrong.example"},
		{name: "expired", target: fixed(expired.URL()), spec: checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile(expired)}}, cause: checks.CauseCert, errHas: "expired"},
		{name: "tls to plain http", target: fixed(strings.Replace(ok.URL(), "http://", "https://", 1)), cause: checks.CauseTLS, errHas: "tls"},
		{name: "cert_min_days", target: fixed(soon.URL()), spec: checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile(soon)}},
			expect: checks.Expect{CertMinDays: 14}, cause: checks.CauseCert, errHas: "certificate expires in 5 days", assertion: "cert_min_days"},
		// The boundary: 5 whole days left meets cert_min_days 5, not 6.
		{name: "cert_min_days met exactly", target: fixed(soon.URL()), spec: checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile(soon)}},
			expect: checks.Expect{CertMinDays: 5}},
		{name: "cert_min_days one day short", target: fixed(soon.URL()), spec: checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile(soon)}},
			expect: checks.Expect{CertMinDays: 6}, cause: checks.CauseCert, errHas: "certificate expires in 5 days", assertion: "cert_min_days"},
		{name: "insecure skips verify but checks days", target: fixed(soon.URL()), spec: checks.HTTPSpec{TLS: checks.TLSOptions{InsecureSkipVerify: true}},
			expect: checks.Expect{CertMinDays: 30}, cause: checks.CauseCert, assertion: "cert_min_days"},
		{name: "status", target: mode(checktest.Mode503), spec: checks.HTTPSpec{Path: "/healthz"}, expect: checks.Expect{Status: checks.StatusList{"200-299"}},
			cause: checks.CauseStatus, errHas: "status 503 not in 200-299", assertion: "status"},
		{name: "default status", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/nope"}, cause: checks.CauseStatus, errHas: "status 404 not in 200-399"},
		{name: "missing header", target: mode(checktest.ModeMissingHeader), spec: checks.HTTPSpec{Path: "/asset.bin"},
			expect: checks.Expect{Headers: map[string]string{"access-control-allow-origin": "present"}},
			cause:  checks.CauseHeader, errHas: "header Access-Control-Allow-Origin is absent, want present", assertion: "header Access-Control-Allow-Origin"},
		{name: "content_type", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/healthz"}, expect: checks.Expect{ContentType: "application/json"},
			cause: checks.CauseHeader, errHas: "content type text/plain, want application/json", assertion: "content_type"},
		{name: "checksum", target: mode(checktest.ModeCorrupt), spec: checks.HTTPSpec{Path: "/asset.bin"},
			expect: checks.Expect{Checksum: "sha256:" + checktest.AssetSHA256()}, cause: checks.CauseChecksum,
			errHas: "checksum sha256 mismatch: got ", assertion: "checksum"},
		{name: "slow ttfb", target: mode(checktest.ModeSlow, checktest.WithSlowDelay(300*time.Millisecond)), spec: checks.HTTPSpec{Path: "/api/x"},
			expect: checks.Expect{TTFB: 100 * time.Millisecond}, cause: checks.CauseTTFB, errHas: "over 100ms", assertion: "ttfb"},
		{name: "duration", target: mode(checktest.ModeSlow, checktest.WithSlowDelay(200*time.Millisecond)), spec: checks.HTTPSpec{Path: "/api/x"},
			expect: checks.Expect{Duration: 50 * time.Millisecond}, cause: checks.CauseDuration, assertion: "duration"},
		{name: "body", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/shop"},
			expect: checks.Expect{Body: checks.BodyExpect{Contains: []string{"add-to-cart", "checkout-now"}}},
			cause:  checks.CauseBody, errHas: `body does not contain "checkout-now"`, assertion: `body contains "checkout-now"`},
		{name: "body not_contains and regex", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/healthz"},
			expect: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"ok"}, Regex: []string{"^ok$"}}},
			cause:  checks.CauseBody, errHas: `body contains "ok"`, assertion: `body not_contains "ok"`},
		{name: "json", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/api/items"},
			expect: checks.Expect{JSON: []checks.JSONExpect{{Path: "$.path", Equals: "/api/items"}, {Path: "ok", Equals: false}}},
			cause:  checks.CauseJSON, errHas: "json ok: got true, want false", assertion: "json ok"},
		{name: "json on html", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/shop"},
			expect: checks.Expect{JSON: []checks.JSONExpect{{Path: "ok"}}}, cause: checks.CauseJSON, errHas: "not valid JSON"},
		{name: "size", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/asset.bin"},
			expect: checks.Expect{Size: checks.SizeExpect{Max: 1 << 10}}, cause: checks.CauseSize, errHas: "body size 64KiB, want <= 1KiB", assertion: "size"},
		{name: "size over body_limit", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/asset.bin", BodyLimit: 1 << 10},
			expect: checks.Expect{Size: checks.SizeExpect{Max: 1 << 10}}, cause: checks.CauseSize, errHas: "body size >1KiB", assertion: "size"},
		{name: "checksum over body_limit", target: fixed(ok.URL()), spec: checks.HTTPSpec{Path: "/asset.bin", BodyLimit: 1 << 10},
			expect: checks.Expect{Checksum: "sha256:" + checktest.AssetSHA256()}, cause: checks.CauseChecksum, errHas: "body over body_limit 1KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target := tc.target(t)
			h, err := checks.NewHTTP(tc.spec, tc.expect, checks.Options{Check: "t", Timeout: cmp(tc.timeout, 5*time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			r := h.Run(context.Background(), checks.Target{Name: "o", URL: target})
			if r.Cause != tc.cause || r.OK != (tc.cause == checks.CauseNone) {
				t.Fatalf("cause %q ok=%v err=%q, want cause %q\nassertions: %+v", r.Cause, r.OK, r.Err, tc.cause, r.Assertions)
			}
			if !strings.Contains(r.Err, tc.errHas) {
				t.Errorf("Err = %q, want it to contain %q", r.Err, tc.errHas)
			}
			if tc.assertion != "" {
				found := false
				for _, a := range r.Assertions {
					if a.Name == tc.assertion && !a.OK && a.Got != "" && a.Want != "" {
						found = true
					}
				}
				if !found {
					t.Errorf("no failing assertion %q with got/want in %+v", tc.assertion, r.Assertions)
				}
			}
			if r.Phases.Total <= 0 || r.Start.IsZero() {
				t.Errorf("phases %+v start %v", r.Phases, r.Start)
			}
			wantCNR := false
			switch tc.cause {
			case checks.CauseDNS, checks.CauseConnectRefused, checks.CauseConnectTimeout, checks.CauseConnect,
				checks.CauseTLS, checks.CauseTimeout, checks.CauseReset:
				wantCNR = true
			}
			if r.CouldNotRun() != wantCNR {
				t.Errorf("CouldNotRun() = %v for cause %s", r.CouldNotRun(), r.Cause)
			}
		})
	}
}

func cmp(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// TestAllAssertionsListed: when several assertions fail, every one is listed
// and the cause follows the documented order (status before checksum before
// ttfb).
func TestAllAssertionsListed(t *testing.T) {
	o := checktest.NewOrigin(checktest.WithMode(checktest.Mode503), checktest.WithFirstByteDelay(30*time.Millisecond))
	defer o.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/asset.bin"}, checks.Expect{
		Status:   checks.StatusList{"200"},
		Checksum: "sha256:" + checktest.AssetSHA256(),
		TTFB:     time.Millisecond,
		Headers:  map[string]string{"retry-after": "absent", "content-type": "application/json"},
	}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Run(context.Background(), checks.Target{URL: o.URL()})
	if r.Cause != checks.CauseStatus || r.StatusCode != 503 {
		t.Fatalf("cause %q status %d, want status 503", r.Cause, r.StatusCode)
	}
	var names []string
	for _, a := range r.Assertions {
		names = append(names, fmt.Sprintf("%s=%v", a.Name, a.OK))
	}
	want := "status=false header Content-Type=true header Retry-After=false checksum=false ttfb=false"
	if strings.Join(names, " ") != want {
		t.Errorf("assertions %q, want %q", strings.Join(names, " "), want)
	}

	// Without the status failure the header failure leads, then checksum.
	o.SetMode(checktest.ModeCorrupt)
	r = h.Run(context.Background(), checks.Target{URL: o.URL()})
	if r.Cause != checks.CauseHeader {
		t.Errorf("corrupt: cause %q (%s), want header (content-type)", r.Cause, r.Err)
	}
}

// TestRequestShape checks what the origin receives: synthetic tagging,
// canonical headers, JSON body, cache busting, Host override, method.
func TestRequestShape(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r)
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()

	h, err := checks.NewHTTP(checks.HTTPSpec{
		Method:    "post",
		Path:      "/api/orders?x=1",
		Headers:   map[string]string{"x-tenant": "acme", "host": "shop.example"},
		JSON:      map[string]any{"sku": "w-1", "qty": 2},
		CacheBust: true,
	}, checks.Expect{}, checks.Options{Check: "orders", Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := h.Run(context.Background(), checks.Target{URL: srv.URL + "/"}); !r.OK {
			t.Fatalf("run: %s %s", r.Cause, r.Err)
		}
	}
	r0, r1 := got[0], got[1]
	checksEq(t, "method", r0.Method, "POST")
	checksEq(t, "path", r0.URL.Path, "/api/orders")
	checksEq(t, "x", r0.URL.Query().Get("x"), "1")
	checksEq(t, "User-Agent", r0.Header.Get("User-Agent"), "vigil/1.2.3")
	checksEq(t, "X-Vigil-Check", r0.Header.Get("X-Vigil-Check"), "orders")
	checksEq(t, "X-Tenant", r0.Header.Get("X-Tenant"), "acme")
	checksEq(t, "Host", r0.Host, "shop.example")
	checksEq(t, "Content-Type", r0.Header.Get("Content-Type"), "application/json")
	checksEq(t, "body", bodies[0], `{"qty":2,"sku":"w-1"}`)
	cb0, cb1 := r0.URL.Query().Get("vigil_cb"), r1.URL.Query().Get("vigil_cb")
	if cb0 == "" || cb0 == cb1 {
		t.Errorf("cache bust values %q, %q: want unique per run", cb0, cb1)
	}
	if r0.Header.Get("Accept-Encoding") != "" {
		t.Errorf("Accept-Encoding %q sent; checksums must see identity bytes", r0.Header.Get("Accept-Encoding"))
	}

	// The headers map overrides the synthetic tags.
	h2, _ := checks.NewHTTP(checks.HTTPSpec{Headers: map[string]string{"user-agent": "custom/1", "x-vigil-check": "other"}}, checks.Expect{}, checks.Options{Check: "c"})
	h2.Run(context.Background(), checks.Target{URL: srv.URL})
	last := got[len(got)-1]
	checksEq(t, "override User-Agent", last.Header.Get("User-Agent"), "custom/1")
	checksEq(t, "override X-Vigil-Check", last.Header.Get("X-Vigil-Check"), "other")
	if h3, _ := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{}, checks.Options{}); h3 != nil {
		h3.Run(context.Background(), checks.Target{URL: srv.URL})
		checksEq(t, "default User-Agent", got[len(got)-1].Header.Get("User-Agent"), "vigil/dev")
	}
}

func checksEq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// TestRunWith drives a login → bearer call the way scripts do: Expand,
// KeepBody, and a cookie jar across runs.
func TestRunWith(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	vars := map[string]string{"user": "demo", "password": "demo"}
	expand := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		return s
	}
	login, err := checks.NewHTTP(checks.HTTPSpec{Method: "POST", Path: "/login", JSON: map[string]any{"user": "${user}", "password": "${password}"}},
		checks.Expect{Status: checks.StatusList{"200"}, JSON: []checks.JSONExpect{{Path: "token"}}}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, resp := login.RunWith(context.Background(), checks.Target{URL: o.URL()}, checks.RunOptions{Expand: expand, KeepBody: true})
	if !r.OK || resp == nil {
		t.Fatalf("login: %s %s", r.Cause, r.Err)
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(resp.Body, &tok); err != nil || tok.Token == "" {
		t.Fatalf("login body %q: %v", resp.Body, err)
	}
	if !strings.HasSuffix(resp.URL, "/login") || resp.StatusCode != 200 {
		t.Errorf("response URL %q status %d", resp.URL, resp.StatusCode)
	}
	vars["token"] = tok.Token
	me, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/api/me", Headers: map[string]string{"authorization": "Bearer ${token}"}},
		checks.Expect{Status: checks.StatusList{"200"}, JSON: []checks.JSONExpect{{Path: "user", Equals: "demo"}}}, checks.Options{})
	if r, _ := me.RunWith(context.Background(), checks.Target{URL: o.URL()}, checks.RunOptions{Expand: expand}); !r.OK {
		t.Errorf("/api/me with token: %s %s", r.Cause, r.Err)
	}
	if r := me.Run(context.Background(), checks.Target{URL: o.URL()}); r.OK || r.StatusCode != 401 {
		t.Errorf("/api/me without expansion: ok=%v status %d, want 401", r.OK, r.StatusCode)
	}

	// Cookies set by one run are sent by the next through the jar.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cr3t", Path: "/"})
			return
		}
		if c, err := r.Cookie("sid"); err != nil || c.Value != "s3cr3t" {
			w.WriteHeader(403)
		}
	}))
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	set, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/set"}, checks.Expect{}, checks.Options{})
	use, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/use"}, checks.Expect{Status: checks.StatusList{"200"}}, checks.Options{})
	set.RunWith(context.Background(), checks.Target{URL: srv.URL}, checks.RunOptions{Jar: jar})
	if r, _ := use.RunWith(context.Background(), checks.Target{URL: srv.URL}, checks.RunOptions{Jar: jar}); !r.OK {
		t.Errorf("cookie not carried by the jar: %s %s", r.Cause, r.Err)
	}
}

func TestRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, "new")
	}))
	defer srv.Close()
	noFollow, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/old"}, checks.Expect{Status: checks.StatusList{"301"}}, checks.Options{})
	if r := noFollow.Run(context.Background(), checks.Target{URL: srv.URL}); !r.OK || r.StatusCode != 301 {
		t.Errorf("without follow: %d %s", r.StatusCode, r.Err)
	}
	follow, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/old", FollowRedirects: true}, checks.Expect{Status: checks.StatusList{"200"}, Body: checks.BodyExpect{Contains: []string{"new"}}}, checks.Options{})
	r, resp := follow.RunWith(context.Background(), checks.Target{URL: srv.URL}, checks.RunOptions{})
	if !r.OK || !strings.HasSuffix(resp.URL, "/new") {
		t.Errorf("with follow: %d %s, final URL %q", r.StatusCode, r.Err, resp.URL)
	}
}

// TestPhases: a fresh connection per run measures connect every time; with
// reuse_connections the second run reuses the connection (connect 0).
func TestPhases(t *testing.T) {
	o := checktest.NewTLSOrigin()
	defer o.Close()
	ca, _ := o.CAFile()
	u := strings.Replace(o.URL(), "127.0.0.1", "localhost", 1)
	for _, reuse := range []bool{false, true} {
		h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/healthz", ReuseConnections: reuse, TLS: checks.TLSOptions{CAFile: ca}}, checks.Expect{}, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ps []checks.Phases
		for range 2 {
			r := h.Run(context.Background(), checks.Target{URL: u})
			if !r.OK {
				t.Fatalf("reuse=%v: %s %s", reuse, r.Cause, r.Err)
			}
			if r.CertExpiry.IsZero() {
				t.Error("CertExpiry not set")
			}
			ps = append(ps, r.Phases)
		}
		h.Close()
		p := ps[0]
		if p.DNS <= 0 || p.Connect <= 0 || p.TLS <= 0 || p.TTFB <= 0 || p.Total < p.TTFB {
			t.Errorf("reuse=%v first run phases %+v: want dns, connect, tls, ttfb > 0", reuse, p)
		}
		if p.TTFB < p.DNS+p.Connect+p.TLS {
			t.Errorf("reuse=%v ttfb %v shorter than dns+connect+tls (measured from the run start)", reuse, p.TTFB)
		}
		second := ps[1]
		if reuse && (second.Connect != 0 || second.TLS != 0) {
			t.Errorf("reuse: second run connect %v tls %v, want 0 (reused)", second.Connect, second.TLS)
		}
		if !reuse && (second.Connect == 0 || second.TLS == 0) {
			t.Errorf("fresh: second run connect %v tls %v, want > 0", second.Connect, second.TLS)
		}
	}
}

// TestTTFBAccuracy: an origin that delays its first byte by d is reported
// with ttfb >= d and within a lenient bound (the precise figure is in
// BenchmarkTTFBError).
func TestTTFBAccuracy(t *testing.T) {
	delays := []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, time.Second}
	if testing.Short() {
		delays = delays[:2]
	}
	for _, d := range delays {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			o := checktest.NewOrigin(checktest.WithFirstByteDelay(d))
			defer o.Close()
			h, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/healthz"}, checks.Expect{}, checks.Options{})
			// Every run must report at least the delay; scheduler noise on a
			// loaded machine only adds, so one of three runs within the bound
			// is enough.
			var got []time.Duration
			for range 3 {
				r := h.Run(context.Background(), checks.Target{URL: o.URL()})
				if !r.OK {
					t.Fatalf("%s %s", r.Cause, r.Err)
				}
				if r.Phases.TTFB < d {
					t.Fatalf("ttfb %v below the origin's %v first-byte delay", r.Phases.TTFB, d)
				}
				if r.Phases.TTFB <= d+150*time.Millisecond {
					return
				}
				got = append(got, r.Phases.TTFB)
			}
			t.Errorf("ttfb %v for a %v delay, want one within [%v, %v]", got, d, d, d+150*time.Millisecond)
		})
	}
}

// TestConcurrentRuns runs one compiled check from many goroutines (run with
// -race).
func TestConcurrentRuns(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	for _, reuse := range []bool{false, true} {
		h, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/asset.bin", ReuseConnections: reuse, CacheBust: true},
			checks.Expect{Checksum: "sha256:" + checktest.AssetSHA256(), Body: checks.BodyExpect{NotContains: []string{"zzzz"}}}, checks.Options{})
		var wg sync.WaitGroup
		errs := make(chan string, 40)
		for range 8 {
			wg.Go(func() {
				for range 5 {
					if r := h.Run(context.Background(), checks.Target{URL: o.URL()}); !r.OK {
						errs <- r.Err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("reuse=%v: %s", reuse, e)
		}
		h.Close()
	}
}

// TestContextCancel: the canary's ctx deadline bounds a run even with no
// Options.Timeout.
func TestContextCancel(t *testing.T) {
	o := checktest.NewOrigin(checktest.WithMode(checktest.ModeBlackhole))
	defer o.Close()
	h, _ := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{}, checks.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := h.Run(ctx, checks.Target{URL: o.URL()})
	if r.Cause != checks.CauseTimeout {
		t.Errorf("cause %q (%s), want timeout", r.Cause, r.Err)
	}
}

func TestBadTarget(t *testing.T) {
	h, _ := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{}, checks.Options{})
	r := h.Run(context.Background(), checks.Target{URL: "tcp://127.0.0.1:1"})
	if r.OK || r.Cause != checks.CauseInternal || !strings.Contains(r.Err, "want an http:// or https:// URL") {
		t.Errorf("tcp target for an http check: %s %q", r.Cause, r.Err)
	}
}

// TestRedirectKeepsHeadersOnOrigin: with follow_redirects, the configured
// headers reach only the host:port the check names; a redirect elsewhere
// gets none of them, and no hop gets a Referer (which would carry the
// previous URL and its query).
func TestRedirectKeepsHeadersOnOrigin(t *testing.T) {
	type seen struct{ key, auth, referer string }
	var mu sync.Mutex
	record := func(m map[string]seen) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			m[r.URL.Path] = seen{r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), r.Header.Get("Referer")}
			mu.Unlock()
		}
	}
	other := map[string]seen{}
	elsewhere := httptest.NewServer(record(other))
	defer elsewhere.Close()
	own := map[string]seen{}
	rec := record(own)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec(w, r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/landed", http.StatusTemporaryRedirect)
		case "/stay":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		}
	}))
	defer origin.Close()

	for _, path := range []string{"/away?api_key=LiteralQueryKey77", "/stay?api_key=LiteralQueryKey77"} {
		h, err := checks.NewHTTP(checks.HTTPSpec{Path: path, FollowRedirects: true,
			Headers: map[string]string{"x-api-key": "${RKEY}", "authorization": "Bearer ${RTOK}"}},
			checks.Expect{Status: checks.StatusList{"200"}}, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expand := strings.NewReplacer("${RKEY}", "rkey-secret", "${RTOK}", "rtok-secret").Replace
		if r, _ := h.RunWith(context.Background(), checks.Target{URL: origin.URL}, checks.RunOptions{Expand: expand}); !r.OK {
			t.Fatalf("%s: %s %s", path, r.Cause, r.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := own["/away"], (seen{"rkey-secret", "Bearer rtok-secret", ""}); got != want {
		t.Errorf("origin got %+v, want %+v", got, want)
	}
	if got := other["/landed"]; got != (seen{}) {
		t.Errorf("the other host got X-Api-Key %q, Authorization %q, Referer %q: want none", got.key, got.auth, got.referer)
	}
	if _, ok := other["/landed"]; !ok {
		t.Error("the redirect to the other host was not followed")
	}
	if got, want := own["/here"], (seen{"rkey-secret", "Bearer rtok-secret", ""}); got != want {
		t.Errorf("same-origin redirect: got %+v, want %+v (headers kept, no Referer)", got, want)
	}
}
