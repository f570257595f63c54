package checktest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

func client() *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp, b
}

func TestRoutes(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	c := client()

	resp, body := get(t, c, o.URL()+"/healthz")
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("/healthz = %d %q, want 200 \"ok\"", resp.StatusCode, body)
	}
	resp, body = get(t, c, o.URL()+"/asset.bin")
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != checktest.AssetSHA256() || len(body) != checktest.AssetSize {
		t.Errorf("/asset.bin: %d bytes, sha256 %x; want %d bytes, %s", len(body), sum, checktest.AssetSize, checktest.AssetSHA256())
	}
	for k, want := range map[string]string{"Content-Type": "application/octet-stream", "Cache-Control": "max-age=300", "Access-Control-Allow-Origin": "*"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("/asset.bin %s = %q, want %q", k, got, want)
		}
	}
	if !bytes.Equal(body, checktest.Asset()) {
		t.Error("Asset() differs from /asset.bin")
	}
	resp, body = get(t, c, o.URL()+"/api/things?x=1")
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"ok":true,"path":"/api/things"}` {
		t.Errorf("/api/things = %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, c, o.URL()+"/shop")
	for _, want := range []string{"add-to-cart", "cart-count", "<script>"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/shop lacks %q", want)
		}
	}
	if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("/shop content type %q", resp.Header.Get("Content-Type"))
	}
	if n := o.Count("GET", "/api/things"); n != 1 {
		t.Errorf("Count(GET /api/things) = %d, want 1", n)
	}
	if got := o.Requests()["GET /healthz"]; got != 1 {
		t.Errorf(`Requests()["GET /healthz"] = %d, want 1`, got)
	}
	if o.Total() != 4 {
		t.Errorf("Total() = %d, want 4", o.Total())
	}
}

func TestLoginAndBearer(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	c := client()

	resp, _ := get(t, c, o.URL()+"/api/me")
	if resp.StatusCode != 401 {
		t.Fatalf("/api/me without token = %d, want 401", resp.StatusCode)
	}
	bad, err := c.Post(o.URL()+"/login", "application/json", strings.NewReader(`{"user":"demo","password":"nope"}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != 401 {
		t.Errorf("bad login = %d, want 401", bad.StatusCode)
	}
	r, err := c.Post(o.URL()+"/login", "application/json", strings.NewReader(`{"user":"demo","password":"demo"}`))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	json.NewDecoder(r.Body).Decode(&tok)
	r.Body.Close()
	if r.StatusCode != 200 || tok.Token == "" {
		t.Fatalf("login = %d token %q", r.StatusCode, tok.Token)
	}
	req, _ := http.NewRequest("GET", o.URL()+"/api/me", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	me, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(me.Body)
	me.Body.Close()
	if me.StatusCode != 200 || !strings.Contains(string(b), `"user":"demo"`) {
		t.Errorf("/api/me with token = %d %s", me.StatusCode, b)
	}
}

func TestModes(t *testing.T) {
	o := checktest.NewOrigin(checktest.WithSlowDelay(150*time.Millisecond), checktest.WithPartialPercent(25), checktest.WithFlapEvery(2))
	defer o.Close()
	c := client()
	status := func(path string) int {
		resp, _ := get(t, c, o.URL()+path)
		return resp.StatusCode
	}

	o.SetMode(checktest.Mode503)
	if s := status("/healthz"); s != 503 {
		t.Errorf("503 mode /healthz = %d", s)
	}

	o.SetMode(checktest.ModePartial)
	fails := 0
	for range 20 {
		if status("/api/x") == 503 {
			fails++
		}
	}
	if fails != 5 {
		t.Errorf("partial 25%%: %d of 20 /api/* got 503, want 5", fails)
	}
	if s := status("/healthz"); s != 200 {
		t.Errorf("partial /healthz = %d", s)
	}

	o.SetMode(checktest.ModeFlapping)
	var seq []int
	for range 6 {
		seq = append(seq, status("/healthz"))
	}
	if want := []int{200, 200, 503, 503, 200, 200}; !equalInts(seq, want) {
		t.Errorf("flapping every 2: %v, want %v", seq, want)
	}

	o.SetMode(checktest.ModeCorrupt)
	_, body := get(t, c, o.URL()+"/asset.bin")
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) == checktest.AssetSHA256() || len(body) != checktest.AssetSize {
		t.Errorf("corrupt asset: len %d, checksum unchanged=%v", len(body), hex.EncodeToString(sum[:]) == checktest.AssetSHA256())
	}
	if s := status("/healthz"); s != 200 {
		t.Errorf("corrupt /healthz = %d", s)
	}

	o.SetMode(checktest.ModeMissingHeader)
	resp, _ := get(t, c, o.URL()+"/asset.bin")
	if _, ok := resp.Header["Access-Control-Allow-Origin"]; ok {
		t.Error("missing_header still sends Access-Control-Allow-Origin")
	}

	o.SetMode(checktest.ModeSlow)
	start := time.Now()
	status("/api/x")
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("slow /api/x answered after %v, want >= 150ms", d)
	}
	if o.Mode() != checktest.ModeSlow {
		t.Errorf("Mode() = %v", o.Mode())
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDownRelistensOnSamePort(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	addr := o.Addr()
	if err := o.SetMode(checktest.ModeDown); err != nil {
		t.Fatal(err)
	}
	_, err := net.DialTimeout("tcp", addr, time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while down: %v, want connection refused", err)
	}
	if err := o.SetMode(checktest.ModeOK); err != nil {
		t.Fatal(err)
	}
	if o.Addr() != addr {
		t.Fatalf("address changed: %s → %s", addr, o.Addr())
	}
	resp, _ := get(t, client(), "http://"+addr+"/healthz")
	if resp.StatusCode != 200 {
		t.Errorf("after down→ok: %d", resp.StatusCode)
	}
}

func TestBlackholeAndReset(t *testing.T) {
	o := checktest.NewOrigin(checktest.WithMode(checktest.ModeBlackhole))
	defer o.Close()
	c := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	_, err := c.Get(o.URL() + "/healthz")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("blackhole: %v, want a timeout", err)
	}
	o.SetMode(checktest.ModeReset)
	_, err = client().Get(o.URL() + "/healthz")
	if err == nil || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)) {
		t.Errorf("reset: %v, want connection reset", err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range checktest.Modes() {
		got, err := checktest.ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if m, err := checktest.ParseMode("Missing-Header"); err != nil || m != checktest.ModeMissingHeader {
		t.Errorf("ParseMode(Missing-Header) = %v, %v", m, err)
	}
	if _, err := checktest.ParseMode("meltdown"); err == nil || !strings.Contains(err.Error(), "flapping") {
		t.Errorf("ParseMode(meltdown) error = %v, want the list of modes", err)
	}
}

func TestTLSOrigin(t *testing.T) {
	o := checktest.NewTLSOrigin()
	defer o.Close()
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: o.TLSClientConfig(), DisableKeepAlives: true}}
	resp, body := get(t, c, o.URL()+"/healthz")
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("https /healthz = %d %q", resp.StatusCode, body)
	}
	if _, err := client().Get(o.URL() + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	f, err := o.CAFile()
	if err != nil || f == "" {
		t.Fatalf("CAFile() = %q, %v", f, err)
	}
}

// TestCloseLeavesNoGoroutines closes origins in every mode, with requests
// in flight, and checks the goroutine count returns to where it was.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, m := range checktest.Modes() {
		o := checktest.NewOrigin(checktest.WithSlowDelay(time.Hour))
		o.SetMode(m)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", o.URL()+"/api/x", nil)
		tr := &http.Transport{}
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
		cancel()
		tr.CloseIdleConnections()
		o.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines left after Close (before: %d)\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestSetFault(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	c := client()
	status := func(path string) int {
		resp, _ := get(t, c, o.URL()+path)
		return resp.StatusCode
	}
	if err := o.SetFault("partial:50%"); err != nil {
		t.Fatal(err)
	}
	fails := 0
	for range 10 {
		if status("/api/x") == 503 {
			fails++
		}
	}
	if fails != 5 {
		t.Errorf("partial:50%%: %d of 10 failed, want 5", fails)
	}
	if err := o.SetFault("flapping:1"); err != nil {
		t.Fatal(err)
	}
	if a, b := status("/healthz"), status("/healthz"); a != 200 || b != 503 {
		t.Errorf("flapping:1: %d then %d, want 200 then 503", a, b)
	}
	if err := o.SetFault("slow:120ms"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	status("/api/x")
	if d := time.Since(start); d < 120*time.Millisecond {
		t.Errorf("slow:120ms answered after %v", d)
	}
	for _, bad := range []string{"partial:150%", "slow:fast", "flapping:0", "down:1", "nope"} {
		if err := o.SetFault(bad); err == nil {
			t.Errorf("SetFault(%q) accepted", bad)
		}
	}
	if o.Mode() != checktest.ModeSlow {
		t.Errorf("a rejected fault changed the mode to %v", o.Mode())
	}
}
