package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sendSlowly writes a POST head and then body in n pieces with gap between
// them over a raw connection to the proxy, and returns the answer's status.
// stallAfter > 0 stops sending after that many pieces (the client stalls).
func sendSlowly(t *testing.T, h *harness, head, body string, n int, gap time.Duration, stallAfter int) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	step := (len(body) + n - 1) / n
	for i := 0; i < n && i*step < len(body); i++ {
		if stallAfter > 0 && i == stallAfter {
			break
		}
		time.Sleep(gap)
		end := min((i+1)*step, len(body))
		if _, err := c.Write([]byte(body[i*step : end])); err != nil {
			break // the proxy answered early and closed
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An upload slower than try_timeout and budget is the client's time: it must
// reach the origin (nginx: 200), and a client that stops sending gets 408
// without the origin being blamed.
func TestSlowUploadIsNotTheOriginsFault(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Pools[0].Retry.TryTimeout = 300 * time.Millisecond
			cfg.Pools[0].Retry.Budget = 600 * time.Millisecond
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			h := startWith(t, cfg, nil, false, engineName)
			o := h.origin("web", "o0")

			small := strings.Repeat("s", 20<<10) // buffered (under max_buffered_body)
			head := fmt.Sprintf("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(small))
			if code := sendSlowly(t, h, head, small, 8, 120*time.Millisecond, 0); code != 200 || a.body != small {
				t.Fatalf("buffered body sent over ~1s: %d (origin got %d bytes), want 200 and the whole body", code, len(a.body))
			}
			large := strings.Repeat("L", 256<<10) // streamed
			head = fmt.Sprintf("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(large))
			if code := sendSlowly(t, h, head, large, 8, 120*time.Millisecond, 0); code != 200 || a.body != large {
				t.Fatalf("streamed body sent over ~1s: %d (origin got %d bytes), want 200 and the whole body", code, len(a.body))
			}
			if code := sendSlowly(t, h, head, large, 8, 50*time.Millisecond, 3); code != http.StatusRequestTimeout {
				t.Fatalf("client stalled mid-body: %d, want 408", code)
			}
			// A small (buffered) body that stalls gets 408 too, not a request
			// held open forever.
			began := time.Now()
			head = "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
			if code := sendSlowly(t, h, head, "5\r\nhello\r\n", 1, 0, 0); code != http.StatusRequestTimeout {
				t.Fatalf("client stalled in a small chunked body: %d, want 408", code)
			} else if d := time.Since(began); d > 5*time.Second {
				t.Fatalf("the 408 came after %v, want about try_timeout (300ms)", d)
			}
			if n := o.stats.timeouts.Load() + o.stats.connErrors.Load(); n != 0 {
				t.Fatalf("the origin was charged %d timeouts/connection errors for the client's slowness", n)
			}
		})
	}
}

// A request body that is not valid chunked encoding is the client's error:
// 400, and nothing reaches the origin.
func TestMalformedChunkedBody400(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			h := startWith(t, pool1(PolicyFirst, a.srv.URL), nil, false, engineName)
			c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprint(c, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || a.hits.Load() != 0 {
				t.Fatalf("got %d with %d origin hits, want 400 and none", resp.StatusCode, a.hits.Load())
			}
		})
	}
}

// An origin may answer while the client is still uploading (full duplex):
// the answer must stream to its end even when the upload goes on for longer
// than try_timeout, on both engines.
func TestAnswerStreamsWhileUploadContinues(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctl := http.NewResponseController(w)
		ctl.EnableFullDuplex()
		w.WriteHeader(200)
		ctl.Flush()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				fmt.Fprintf(w, "got %d\n", n)
				ctl.Flush()
			}
			if err != nil {
				break
			}
		}
		for i := 0; i < 3; i++ { // the answer goes on after the upload ended
			time.Sleep(300 * time.Millisecond)
			io.WriteString(w, "tail\n")
			ctl.Flush()
		}
		io.WriteString(w, "end\n")
	}))
	defer origin.Close()
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].Retry.TryTimeout = 400 * time.Millisecond
			cfg.Pools[0].Retry.Budget = 800 * time.Millisecond
			cfg.RequestBuffering = RequestBufferingOff // streamed, not spooled
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			h := startWith(t, cfg, nil, false, engineName)
			c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			big := strings.Repeat("b", 70000) // over max_buffered_body: streamed
			fmt.Fprintf(c, "POST /duplex HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(big), big)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("answer head: %v %v", resp, err)
			}
			done := make(chan string, 1)
			go func() { b, _ := io.ReadAll(resp.Body); done <- string(b) }()
			for i := 0; i < 6; i++ { // 1.5 s more upload: several try_timeouts
				time.Sleep(250 * time.Millisecond)
				fmt.Fprintf(c, "3\r\nabc\r\n")
			}
			io.WriteString(c, "0\r\n\r\n")
			body := <-done
			if !strings.HasSuffix(body, "end\n") {
				t.Fatalf("the answer was cut while the upload went on: %q", body)
			}
		})
	}
}

// A request whose body was not read to its end (malformed, stalled, or
// still arriving when the answer went out) closes the connection after the
// answer, on both engines: what follows in the stream must never be parsed
// as another request (smuggling), and a client that stops sending must not
// hold the connection.
func TestBodyErrorsCloseTheConnection(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/early" {
			// The whole answer goes out before the body is read (net/http
			// would read the body first without full duplex).
			ctl := http.NewResponseController(w)
			ctl.EnableFullDuplex()
			w.Header().Set("Content-Length", "12")
			io.WriteString(w, "early answer")
			ctl.Flush()
			// The rest of the body is read here, not left to net/http:
			// after a full-duplex handler returns, the server reads it
			// away itself and, when that meets the connection's end,
			// starts its background read while it goes on to read the
			// next request, and panics "invalid concurrent Body.Read
			// call" (golang/go#68560).
			io.Copy(io.Discard, r.Body)
			return
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	var originLog syncBuf
	origin.Config.ErrorLog = log.New(&originLog, "", 0)
	origin.Start()
	defer origin.Close()
	defer func() {
		if l := originLog.String(); strings.Contains(l, "panic") {
			t.Errorf("the origin's server panicked:\n%s", l)
		}
	}()
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].Retry.TryTimeout = 500 * time.Millisecond
			cfg.Pools[0].Retry.Budget = time.Second
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			cfg.RequestBuffering = RequestBufferingOff // streamed, not spooled
			dead := cfg.Pools[0]
			dead.Name, dead.Hosts = "dead", []string{"dead.example"}
			dead.Origins = []OriginConfig{{Target: "gone", URL: deadURL(t)}}
			cfg.Pools = append([]PoolConfig{dead}, cfg.Pools...)
			h := startWith(t, cfg, nil, false, engineName)
			// exchange writes raw, reads one answer, then reports whether the
			// proxy closed the connection within limit.
			var answered time.Duration // how long the last answer's head took
			exchange := func(raw string, limit time.Duration) (*http.Response, bool) {
				t.Helper()
				began := time.Now()
				c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, raw)
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				answered = time.Since(began)
				io.Copy(io.Discard, resp.Body)
				c.SetReadDeadline(time.Now().Add(limit))
				_, err = br.ReadByte()
				return resp, err == io.EOF || err != nil && !isTimeoutErr(err)
			}
			big := strings.Repeat("b", 70000) // streamed (over max_buffered_body)
			resp, closed := exchange(fmt.Sprintf("POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\nZZZ\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", len(big), big), 3*time.Second)
			if resp.StatusCode != http.StatusBadRequest || !closed {
				t.Errorf("malformed chunk after a streamed one: %d, closed %v; want 400 and the connection closed", resp.StatusCode, closed)
			}
			resp, closed = exchange("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n"+strings.Repeat("s", 100000), 3*time.Second)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || !closed {
				t.Errorf("stalled body: %d, Connection: close %v, closed %v; want 408, Connection: close and the connection closed", resp.StatusCode, resp.Close, closed)
			}
			resp, closed = exchange("POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n"+strings.Repeat("e", 100000), 3*time.Second)
			if resp.StatusCode != 200 || !closed || answered > 300*time.Millisecond {
				t.Errorf("answered before the upload ended, then the client stalled: %d after %v, closed %v; want 200 at once and the connection closed within try_timeout", resp.StatusCode, answered, closed)
			}
			// The proxy's own answer (no origin available) after a streamed
			// body that no try read to its end: closed too, nothing smuggled.
			resp, closed = exchange(fmt.Sprintf("POST /up HTTP/1.1\r\nHost: dead.example\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\nZZZ\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", len(big), big), 3*time.Second)
			if resp.StatusCode < 500 || !closed || resp.ContentLength <= 0 {
				t.Errorf("proxy's own answer after an unread streamed body: %d (Content-Length %d), closed %v; want 5xx with a Content-Length and the connection closed", resp.StatusCode, resp.ContentLength, closed)
			}
			mu.Lock()
			defer mu.Unlock()
			if slices.Contains(paths, "/smuggled") {
				t.Fatalf("the origin received the smuggled request: %v", paths)
			}
		})
	}
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Uploads that complete normally keep the connection alive, on both
// engines, whatever their size (buffered or streamed).
func TestCompletedUploadsKeepAlive(t *testing.T) {
	a := newBackend(t, "a")
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			h := startWith(t, pool1(PolicyFirst, a.srv.URL), nil, false, engineName)
			c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(c)
			for _, size := range []int{1 << 10, 100 << 10, 1 << 20, 100 << 10} {
				fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, strings.Repeat("k", size))
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("%d-byte upload: %v (the connection was closed?)", size, err)
				}
				io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != 200 || resp.Close || len(a.body) != size {
					t.Fatalf("%d-byte upload: %d, Connection: close %v, origin got %d bytes", size, resp.StatusCode, resp.Close, len(a.body))
				}
			}
		})
	}
}

// The proxy answers Expect: 100-continue itself and does not pass it on: an
// origin that never sends 100 must not cost the request the transport's
// one-second wait. The test asserts the header the origin received, not the
// time taken: this origin (net/http) sends 100 itself, so no wait would show.
func TestExpectContinueNotForwarded(t *testing.T) {
	var mu sync.Mutex
	var expect []string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		expect = append(expect, r.Header.Get("Expect"))
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
	}))
	defer origin.Close()
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			mu.Lock()
			expect = nil
			mu.Unlock()
			h := startWith(t, pool1(PolicyFirst, origin.URL), nil, false, engineName)
			sizes := []int{1 << 10, 100 << 10}
			for _, size := range sizes {
				code, _, _ := h.do("POST", "/x", strings.Repeat("e", size), "Expect", "100-continue")
				if code != 200 {
					t.Fatalf("%d-byte POST with Expect: %d, want 200", size, code)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(expect) != len(sizes) {
				t.Fatalf("the origin received %d requests, want %d", len(expect), len(sizes))
			}
			for _, e := range expect {
				if e != "" {
					t.Fatalf("the origin received Expect: %q", e)
				}
			}
		})
	}
}

// TestChunkOverMaxBody413AtOnce: a chunked body whose chunk-size line
// announces more than max_body gets 413 at once, on the fast engine, and
// nothing reaches the origin (was: the proxy waited for the data and
// answered 408 after try_timeout while the client held its connection), as
// nginx answers 413 at once.
func TestChunkOverMaxBody413AtOnce(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Retry.TryTimeout = 5 * time.Second
	cfg.MaxBody = 1 << 20
	h := startWith(t, cfg, nil, false, EngineFast)
	// A chunk over the limit; and chunks that add up to more than it, the
	// first within max_buffered_body, so the body is still being buffered
	// (no origin has been asked) when the second one says so.
	for _, body := range []string{"200000\r\nhello", "8000\r\n" + strings.Repeat("x", 0x8000) + "\r\nF8001\r\nabc"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		began := time.Now()
		fmt.Fprint(c, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || time.Since(began) > 2*time.Second {
			t.Fatalf("chunks announcing more than max_body (1 MiB): %d after %v, want 413 at once", resp.StatusCode, time.Since(began))
		}
	}
	if n := a.hits.Load(); n != 0 {
		t.Fatalf("origin got %d requests, want none", n)
	}
}
