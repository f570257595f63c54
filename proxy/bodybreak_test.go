package proxy

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// breakingOrigin is an origin on a real socket that reads each request
// (head and Content-Length body), writes answer and ends the connection:
// with a reset (SO_LINGER 0) when rst, else with a close. reqs counts the
// requests it read.
func breakingOrigin(t *testing.T, answer string, rst bool) (url string, reqs *atomic.Int64) {
	t.Helper()
	reqs = &atomic.Int64{}
	return checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		tp := textproto.NewReader(br)
		if _, err := tp.ReadLine(); err != nil {
			return
		}
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			return
		}
		if n, _ := strconv.Atoi(hdr.Get("Content-Length")); n > 0 {
			if _, err := io.CopyN(io.Discard, tp.R, int64(n)); err != nil {
				return
			}
		}
		reqs.Add(1)
		io.WriteString(c, answer)
		if rst {
			time.Sleep(50 * time.Millisecond) // the head reaches the client first
			c.(*net.TCPConn).SetLinger(0)
		}
	}), reqs
}

// startLogged is startWith logging to the returned tryLogs, with the
// background loops (passive evaluation, signals every 50ms) running.
func startLogged(t *testing.T, cfg Config, engineName string) (*harness, *tryLogs) {
	t.Helper()
	logs := &tryLogs{}
	cfg.SignalWindow = 50 * time.Millisecond
	h := startLog(t, cfg, nil, true, engineName, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return h, logs
}

// TestOriginBodyBreakIsAFailedTry: an origin whose answer breaks after its
// head (a body shorter than its Content-Length, then a close; a reset after
// 7 bytes) is a failed try, on both engines and through both origin paths
// (the fast path for GET, http.Transport for a POST): counted in
// vigil_proxy_tries_total under protocol or reset and never as ok, seen by
// the passive detector (three of them eject the origin with
// consecutive_5xx 3), published in the signals as connection errors, and
// logged naming the origin and cause, rate-limited like the try-failed
// lines. The client still gets the truncated answer: its head went out, so
// nothing is retried. Was: counted as ok, never ejected, logged without the
// origin on every request.
func TestOriginBodyBreakIsAFailedTry(t *testing.T) {
	for _, engineName := range bothEngines {
		for _, tc := range []struct {
			name, answer, cause string
			rst                 bool
			method, body        string
		}{
			{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", CauseProtocol, false, "GET", ""},
			{"reset mid-body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456", CauseReset, true, "GET", ""},
			{"chunked cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n", CauseProtocol, false, "GET", ""},
			{"short body to a POST", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", CauseProtocol, false, "POST", "item=1"},
			{"reset mid-body to a POST", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456", CauseReset, true, "POST", "item=1"},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				broken, reqs := breakingOrigin(t, tc.answer, tc.rst)
				good := newBackend(t, "good")
				cfg := pool1(PolicyFirst, broken, good.srv.URL)
				cfg.Pools[0].Passive.Consecutive5xx = 3
				h, logs := startLogged(t, cfg, engineName)
				for i := 0; i < 3; i++ {
					var rb io.Reader
					if tc.body != "" {
						rb = strings.NewReader(tc.body)
					}
					req, _ := http.NewRequest(tc.method, h.front.URL+"/x", rb)
					resp, err := h.client.Do(req)
					if err != nil {
						t.Fatalf("request %d: %v, want the origin's 200 head", i, err)
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || err == nil || len(b) >= 100 {
						t.Fatalf("request %d: %d, %d bytes, read error %v; want the 200 cut short", i, resp.StatusCode, len(b), err)
					}
				}
				if n := reqs.Load(); n != 3 {
					t.Fatalf("the broken origin got %d requests, want 3 (none retried after the head went out)", n)
				}
				tries := func(result string) float64 {
					v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": result})
					return v
				}
				if ok, c := tries("ok"), tries(tc.cause); ok != 0 || c != 3 {
					t.Errorf("tries_total{origin=o0}: ok %v, %s %v; want 0 and 3", ok, tc.cause, c)
				}
				var st OriginStatus
				for _, s := range h.p.Origins() {
					if s.Name == "o0" {
						st = s
					}
				}
				if !st.PassiveEjected || st.Why["passive"] != ReasonConsecutive5xx {
					t.Errorf("after 3 broken bodies o0 is %+v, want passively ejected for consecutive_5xx", st)
				}
				if code, body, _ := h.do(tc.method, "/x", tc.body); code != 200 || body != "ok good" {
					t.Errorf("after the ejection: %d %q, want the good origin's answer", code, body)
				}
				lines := logs.lines(`msg="proxy: origin body broke after the answer began"`, "origin=o0", "cause="+tc.cause)
				if len(lines) != 1 || !strings.Contains(lines[0], "status=200") || !strings.Contains(lines[0], "method="+tc.method) {
					t.Errorf("want one rate-limited line naming the origin and cause, got %q (all: %q)",
						lines, logs.lines("body broke"))
				}
				eventually(t, "signals with o0's 3 broken bodies as connection errors and a p95", func() bool {
					var req, ce int
					var p95 time.Duration
					for _, s := range h.signals.all() {
						if s.Origin == "o0" {
							req += s.Requests
							ce += s.ConnErrors
							p95 = max(p95, s.P95)
						}
					}
					return req == 3 && ce == 3 && p95 > 0
				})
			})
		}
	}
}

// TestClientLeftMidBodyNotCharged: a client that leaves while the origin's
// body streams is not the origin's fault: the try counts as ok, nothing is
// logged as a broken origin body, the origin is not ejected.
func TestClientLeftMidBodyNotCharged(t *testing.T) {
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			left := make(chan struct{})
			origin := newRawHandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				// No Content-Length: the proxy passes each part on at once.
				io.WriteString(w, "0123456789")
				w.(http.Flusher).Flush()
				select {
				case <-left:
				case <-time.After(10 * time.Second):
				}
				// More body, until the proxy notices its client is gone
				// and closes this connection (bounded: 4 s).
				chunk := strings.Repeat("x", 64<<10)
				for i := 0; i < 200; i++ {
					if _, err := io.WriteString(w, chunk); err != nil {
						break
					}
					w.(http.Flusher).Flush()
					time.Sleep(20 * time.Millisecond)
				}
			})
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].Passive.Consecutive5xx = 1
			h, logs := startLogged(t, cfg, engineName)
			c, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
				t.Fatalf("the first body bytes: %v", err)
			}
			c.Close()
			close(left)
			eventually(t, "the try counted as ok", func() bool {
				v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": "ok"})
				return v == 1
			})
			for _, cause := range retryCauses {
				if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": cause}); v != 0 {
					t.Errorf("tries_total{result=%s} = %v: the origin was charged for the client leaving", cause, v)
				}
			}
			if got := logs.lines("body broke"); len(got) != 0 {
				t.Errorf("a client leaving was logged as a broken origin body: %q", got)
			}
			if st := h.p.Origins()[0]; st.PassiveEjected {
				t.Errorf("the origin was ejected for a client leaving: %+v", st)
			}
		})
	}
}
