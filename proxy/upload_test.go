package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
