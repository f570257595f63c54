package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestNoUserAgentAdded: a request without User-Agent reaches the origin
// without one on every path, Go's transport included (requests with a
// body; https:// origins), which sent "Go-http-client/1.1" the client
// never did; a client's own User-Agent is passed as it is.
func TestNoUserAgentAdded(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%q", r.Header["User-Agent"])
	}))
	t.Cleanup(origin.Close)
	for _, engineName := range bothEngines {
		h := startWith(t, pool1(PolicyFirst, origin.URL), nil, false, engineName)
		for _, tc := range []struct{ name, req, want string }{
			{"GET", "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", `[]`},
			{"POST with a body", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nb", `[]`},
			{"POST with the client's", "POST /x HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8\r\nContent-Length: 1\r\nConnection: close\r\n\r\nb", `["curl/8"]`},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				resps, bodies, _ := rawExchange(t, h, tc.req)
				if len(resps) != 1 || resps[0].StatusCode != 200 || bodies[0] != tc.want {
					t.Fatalf("origin saw User-Agent %q, want %s", bodies, tc.want)
				}
			})
		}
	}
}

// TestNoContentTypeAdded: an answer without Content-Type reaches the client
// without one on both engines (was: net/http's server, engine stdlib,
// sniffed "text/plain; charset=utf-8" the origin never sent).
func TestNoContentTypeAdded(t *testing.T) {
	origin := checktest.CannedOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			h := startWith(t, pool1(PolicyFirst, origin), nil, false, engineName)
			resps, bodies, _ := rawExchange(t, h, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if len(resps) != 1 || bodies[0] != "ok" {
				t.Fatalf("answers %d, bodies %q", len(resps), bodies)
			}
			if ct, ok := resps[0].Header["Content-Type"]; ok {
				t.Fatalf("the client got Content-Type %q the origin did not send", ct)
			}
		})
	}
}

// TestReasonPhrasePassed: the fast engine passes an origin's own reason
// phrase on ("200 Custom Fine", "599 Weird Thing"), as nginx does, on the
// fast path and through Go's transport (was: the standard phrase, or none
// for a code without one); a phrase with a control character is replaced
// by the standard one.
func TestReasonPhrasePassed(t *testing.T) {
	for _, tc := range []struct{ origin, want string }{
		{"200 Custom Fine", "HTTP/1.1 200 Custom Fine"},
		{"599 Weird Thing", "HTTP/1.1 599 Weird Thing"},
		{"200 OK", "HTTP/1.1 200 OK"},
		{"404 Nope\x01", "HTTP/1.1 404 Not Found"},
	} {
		origin := checktest.CannedOrigin(t, "HTTP/1.1 "+tc.origin+"\r\nContent-Length: 2\r\n\r\nok")
		h := startWith(t, pool1(PolicyFirst, origin), nil, false, EngineFast)
		for _, req := range []string{
			"GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nb",
		} {
			resps, _, _ := rawExchange(t, h, req)
			if len(resps) != 1 || "HTTP/1.1 "+resps[0].Status != tc.want {
				var got []string
				for _, r := range resps {
					got = append(got, r.Status)
				}
				t.Errorf("origin %q, %s: status lines %q, want %q", tc.origin, req[:4], got, tc.want)
			}
		}
	}
}

// TestStatusAbove599Counted: an origin's status above 599 (passed on, as
// nginx does) is counted under its own code in vigil_proxy_requests_total
// (was: code "0", which no documented query matches).
func TestStatusAbove599Counted(t *testing.T) {
	origin := checktest.CannedOrigin(t, "HTTP/1.1 999 Weird\r\nContent-Length: 2\r\n\r\nok")
	h := startWith(t, pool1(PolicyFirst, origin), nil, false, testEngine())
	if code, _, _ := h.do("GET", "/x", ""); code != 999 {
		t.Fatalf("status %d, want the origin's 999", code)
	}
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": "o0", "code": "999"}); v != 1 {
		t.Errorf(`requests_total{code="999"} = %v, want 1`, v)
	}
	if v, ok := h.metric("vigil_proxy_requests_total", map[string]string{"origin": "o0", "code": "0"}); ok {
		t.Errorf(`requests_total{code="0"} = %v, want no such series`, v)
	}
}
