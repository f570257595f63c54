package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestBodyTimeout: an origin that sends an answer's head and part of its
// body, then falls silent, fails the try after body_timeout (cause
// timeout, logged with the origin) and the client's answer is cut off
// (connection closed before the promised length), on the fast path and
// through Go's transport (a request with a body), on both engines. Was:
// no read timeout once the head had arrived, the client and the origin's
// max_conns slot held for as long as the origin stayed silent.
func TestBodyTimeout(t *testing.T) {
	origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
		time.Sleep(5 * time.Second)
	})
	for _, engineName := range bothEngines {
		for _, tc := range []struct{ name, req string }{
			{"GET", "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"},
			{"POST", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb"},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				cfg := pool1(PolicyFirst, origin)
				cfg.Pools[0].BodyTimeout = 300 * time.Millisecond
				h, logs := startCapturing(t, cfg, engineName)
				b, took, err := readCutOff(t, h, tc.req)
				if string(b) != "abc" || err != io.ErrUnexpectedEOF {
					t.Fatalf("body %q, %v after %v; want \"abc\" cut off (unexpected EOF)", b, err, took)
				}
				if took > 2*time.Second {
					t.Errorf("cut off after %v, want about body_timeout (300ms)", took)
				}
				if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": CauseTimeout}); v != 1 {
					t.Errorf("tries_total{result=timeout} = %v, want 1", v)
				}
				if got := logs.lines("origin body broke", "origin=o0", "cause=timeout", "body_timeout"); len(got) != 1 {
					t.Errorf("want one log line naming the timeout, got %q", strings.Join(logs.lines("origin body broke"), "\n"))
				}
			})
		}
	}
}

// TestBodyTimeoutPartialChunkLine: a chunked answer whose head arrives
// with the start of the next chunk's size line in the same read, the
// origin then silent, is cut off after body_timeout too (was: the first
// read found bytes buffered, set no deadline, and waited for good).
func TestBodyTimeoutPartialChunkLine(t *testing.T) {
	for _, tail := range []string{"5\r\nhello\r\n3", "5\r\nhello\r"} {
		origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + tail))
			time.Sleep(5 * time.Second)
		})
		for _, engineName := range bothEngines {
			t.Run(engineName+"/"+strconv.Quote(tail), func(t *testing.T) {
				cfg := pool1(PolicyFirst, origin)
				cfg.Pools[0].BodyTimeout = 300 * time.Millisecond
				h := startWith(t, cfg, nil, false, engineName)
				b, took, err := readCutOff(t, h, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
				if string(b) != "hello" || err != io.ErrUnexpectedEOF || took > 2*time.Second {
					t.Fatalf("body %q, %v after %v; want \"hello\" cut off after about body_timeout (300ms)", b, err, took)
				}
			})
		}
	}
}

// readCutOff sends req on a new connection to h and reads the answer,
// which must have a 200 head: it returns the body read, how long the
// exchange took (at most 4s) and the error that ended the body.
func readCutOff(t *testing.T, h *harness, req string) ([]byte, time.Duration, error) {
	t.Helper()
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(4 * time.Second))
	start := time.Now()
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("answer %v %v, want the origin's 200 head", resp, err)
	}
	b, err := io.ReadAll(resp.Body)
	return b, time.Since(start), err
}
