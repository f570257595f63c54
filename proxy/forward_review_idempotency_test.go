package proxy

import (
	"bufio"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// receivingRacer is an origin on a real socket that answers the first
// request on each connection 200 (keep-alive) and closes the connection
// after reading a later one, without answering: an origin that received the
// request and then went away. reqs counts the requests it read; heads
// keeps each one's header fields as they came on the wire.
type receivingRacer struct {
	url  string
	reqs atomic.Int64
	mu   sync.Mutex
	seen []textproto.MIMEHeader
}

func newReceivingRacer(t *testing.T) *receivingRacer {
	t.Helper()
	o := &receivingRacer{}
	o.url = checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		tp := textproto.NewReader(br)
		for n := 0; n < 10; n++ {
			if _, err := tp.ReadLine(); err != nil {
				return
			}
			// Raw lines, not ReadMIMEHeader: it would canonicalise the
			// names the test wants to see as they were sent.
			h := textproto.MIMEHeader{}
			for {
				line, err := tp.ReadLine()
				if err != nil {
					return
				}
				if line == "" {
					break
				}
				k, v, _ := strings.Cut(line, ":")
				h[k] = append(h[k], strings.TrimSpace(v))
			}
			o.mu.Lock()
			o.seen = append(o.seen, h)
			o.mu.Unlock()
			o.reqs.Add(1)
			if n > 0 {
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	})
	return o
}

// last returns the header fields of the last request the origin read.
func (o *receivingRacer) last() textproto.MIMEHeader {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		return nil
	}
	return o.seen[len(o.seen)-1]
}

// fieldValue returns the value of the field named name in any case, and
// whether h has it.
func fieldValue(h textproto.MIMEHeader, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0], true
		}
	}
	return "", false
}

// TestForwardIdempotencyKeyNotReplayedByTransport: a body-less POST that
// the origin received on a reused connection and then closed without an
// answer is not sent again when it carries X-Idempotency-Key or an empty
// Idempotency-Key, which do not make it replay-safe (was: Go's transport
// resent it on a new connection, the origin getting it twice, because
// Request.isReplayable accepts either key by presence). The origin still
// gets both fields with their values. A POST with a non-empty
// Idempotency-Key, and a GET, are replay-safe and still sent again once.
func TestForwardIdempotencyKeyNotReplayedByTransport(t *testing.T) {
	for _, engineName := range bothEngines {
		for _, tc := range []struct {
			name      string
			method    string
			hdr       []string
			wantReqs  int64
			wantCode  int
			wantField string // a field the origin must get with value "abc" or ""
		}{
			{"POST X-Idempotency-Key", "POST", []string{"X-Idempotency-Key", "abc"}, 2, 502, "X-Idempotency-Key"},
			{"POST empty Idempotency-Key", "POST", []string{"Idempotency-Key", ""}, 2, 502, "Idempotency-Key"},
			{"PATCH X-Idempotency-Key", "PATCH", []string{"X-Idempotency-Key", "abc"}, 2, 502, "X-Idempotency-Key"},
			{"POST Idempotency-Key", "POST", []string{"Idempotency-Key", "abc"}, 3, 200, "Idempotency-Key"},
			{"GET", "GET", nil, 3, 200, ""},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				o := newReceivingRacer(t)
				cfg := pool1(PolicyFirst, o.url)
				cfg.Pools[0].Passive.Consecutive5xx = -1
				h, logs := startCapturing(t, cfg, engineName)
				// Warm one keep-alive connection of the engine that
				// carries the request: Go's transport for a POST, the
				// fast path for a GET.
				if code, body, _ := h.do(tc.method, "/warm", ""); code != 200 || body != "ok" {
					t.Fatalf("warm-up %s: %d %q, want 200 ok", tc.method, code, body)
				}
				code, body, _ := h.do(tc.method, "/x", "", tc.hdr...)
				if code != tc.wantCode {
					t.Errorf("%s on the connection the origin closed: %d %q, want %d", tc.method, code, body, tc.wantCode)
				}
				if n := o.reqs.Load(); n != tc.wantReqs {
					t.Fatalf("the origin read %d requests (warm-up included), want %d", n, tc.wantReqs)
				}
				resent := logs.lines("request sent again on a new connection")
				if tc.wantReqs == 2 && len(resent) != 0 {
					t.Errorf("logged a resend of a request that is not replay-safe: %q", resent)
				}
				if tc.wantField != "" {
					want := tc.hdr[1]
					if v, ok := fieldValue(o.last(), tc.wantField); !ok || v != want {
						t.Errorf("the origin got %s = %q (present %v), want %q; fields %v", tc.wantField, v, ok, want, o.last())
					}
				}
			})
		}
	}
}

// TestForwardIdempotencyKeyReachesHTTP2Origin: over HTTP/2 (h2c) the origin
// gets X-Idempotency-Key and an empty Idempotency-Key of a POST as the
// client sent them.
func TestForwardIdempotencyKeyReachesHTTP2Origin(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	origin := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Write([]byte(r.Proto))
	})
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].OriginProtocol = OriginHTTP2
	h := start(t, cfg, nil, false)
	for _, hdr := range [][]string{{"X-Idempotency-Key", "abc"}, {"Idempotency-Key", ""}} {
		code, body, _ := h.do("POST", "/x", "", hdr...)
		if code != 200 || body != "HTTP/2.0" {
			t.Fatalf("POST with %s: %d %q, want 200 over HTTP/2", hdr[0], code, body)
		}
		mu.Lock()
		v, ok := got[hdr[0]]
		mu.Unlock()
		if !ok || len(v) != 1 || v[0] != hdr[1] {
			t.Errorf("the HTTP/2 origin got %s = %q (present %v), want %q", hdr[0], v, ok, hdr[1])
		}
	}
}
