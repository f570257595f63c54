package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// runTLSProxy runs the proxy (fast engine) with a TLS listener and returns
// that listener's address and the roots that trust its certificate.
func runTLSProxy(t *testing.T, cfg Config) (string, *x509.CertPool) {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.Engine = EngineFast
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	return runProxyOn(t, p, 2)[1], roots
}

// h2Get opens an HTTP/2 connection by hand (so the test decides when to
// grant flow-control window), asks GET path on stream 1 and reads until
// the answer's HEADERS; it returns the connection and its framer.
func h2Get(t *testing.T, addr string, roots *x509.CertPool, path string) (*tls.Conn, *http2.Framer) {
	t.Helper()
	c, fr := h2Open(t, addr, roots, [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "x"}, {":path", path}})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("GET %s over HTTP/2: %v before the answer's HEADERS", path, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("GET %s over HTTP/2: stream reset (%v) before the answer's HEADERS", path, f.ErrCode)
		case *http2.HeadersFrame:
			return c, fr
		}
	}
}

// h2Open opens an HTTP/2 connection by hand and sends fields (pseudo-header
// fields first, any others as given) as a body-less request on stream 1.
func h2Open(t *testing.T, addr string, roots *x509.CertPool, fields [][2]string) (*tls.Conn, *http2.Framer) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN chose %q, want h2", p)
	}
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range fields {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c, fr
}

// TestSendTimeoutHTTP2FreesOriginOfNonReadingClient: an HTTP/2 client on
// the TLS listener that asks for a large answer and never grants window
// (no WINDOW_UPDATE) has its stream reset after send_timeout, and the
// origin's only max_conns slot it held is freed: the next request to that
// origin is answered 200 instead of 503 for as long as the client likes.
func TestSendTimeoutHTTP2FreesOriginOfNonReadingClient(t *testing.T) {
	const size = 64 << 20
	origin := bigOrigin(t, size)
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.Pools[0].Origins[0].MaxConns = 1
	cfg.Pools[0].Retry.Tries = 1
	cfg.SendTimeout = time.Second
	addr, roots := runTLSProxy(t, cfg)

	stuck, fr := h2Get(t, addr, roots, "/big")
	start := time.Now()
	for {
		hc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		resp, body := roundTrip(t, hc, bufio.NewReader(hc), "GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		hc.Close()
		if resp.StatusCode == http.StatusOK && body == "small" {
			t.Logf("slot freed %v after the answer began", time.Since(start).Round(time.Millisecond))
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("GET /small: %d %q, want 200 (or 503 while the slot is held)", resp.StatusCode, body)
		}
		if time.Since(start) > 6*time.Second {
			t.Fatal("an HTTP/2 client that grants no window still holds the origin's max_conns slot 6s after send_timeout 1s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The stuck stream was reset; what it got (its first window) is short.
	got := 0
	stuck.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the stuck stream: %v (got %d bytes), want RST_STREAM", err, got)
		}
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
			if d.StreamEnded() {
				t.Fatalf("the stuck stream ended normally after %d bytes, want it reset", got)
			}
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == 1 {
			break
		}
	}
	if got >= size {
		t.Fatalf("the stuck stream got the whole answer (%d bytes)", got)
	}
}

// TestSendTimeoutHTTP2KeepsSlowReader: an HTTP/2 client that grants window
// a little at a time gets a large answer whole, over several times
// send_timeout: the timeout bounds a write that makes no progress.
func TestSendTimeoutHTTP2KeepsSlowReader(t *testing.T) {
	const size = 512 << 10
	origin := bigOrigin(t, size)
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.SendTimeout = time.Second
	addr, roots := runTLSProxy(t, cfg)

	c, fr := h2Get(t, addr, roots, "/big")
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, owed := 0, 0
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %d of %d bytes in %v: %v", got, size, time.Since(start), err)
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok {
			t.Fatalf("stream reset (%v) after %d of %d bytes in %v", r.ErrCode, got, size, time.Since(start))
		}
		d, ok := f.(*http2.DataFrame)
		if !ok {
			continue
		}
		got += len(d.Data())
		owed += len(d.Data())
		if d.StreamEnded() {
			break
		}
		if owed >= 32<<10 { // about 128 KiB a second
			time.Sleep(250 * time.Millisecond)
			fr.WriteWindowUpdate(0, uint32(owed))
			fr.WriteWindowUpdate(1, uint32(owed))
			owed = 0
		}
	}
	took := time.Since(start)
	if got != size {
		t.Fatalf("got %d bytes, want %d", got, size)
	}
	if took < 3*time.Second {
		t.Fatalf("the answer took %v, want several times send_timeout 1s for the test to mean anything", took)
	}
}

// TestSendTimeoutHTTP2KeepsQuietStream: over HTTP/2, time the origin takes
// between parts of an answer (an event stream that is quiet for longer than
// send_timeout) is not a send timeout: the client gets every part.
func TestSendTimeoutHTTP2KeepsQuietStream(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(2500 * time.Millisecond)
		io.WriteString(w, "data: second\n\n")
	}))
	t.Cleanup(origin.Close)
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.SendTimeout = time.Second
	addr, roots := runTLSProxy(t, cfg)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get("https://" + addr + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 {
		t.Fatalf("answer over %s, want HTTP/2", resp.Proto)
	}
	if err != nil || string(body) != "data: first\n\ndata: second\n\n" {
		t.Fatalf("body %q, err %v; want both events", body, err)
	}
}
