package scripts

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// lineOrigin is a raw HTTP/1.1 origin that records each request's request
// line, headers and body as received on the socket, and answers
// {"body": body} to every request, so a script can extract body into a
// variable.
type lineOrigin struct {
	URL string
	mu  sync.Mutex
	got []rawRequest
}

type rawRequest struct {
	line   string
	header map[string]string // lower-case name → value
	body   string
}

func newLineOrigin(t *testing.T, body string) *lineOrigin {
	t.Helper()
	o := &lineOrigin{}
	answer := fmt.Sprintf(`{"body":%s}`, strconv.Quote(body))
	o.URL = checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			rq := rawRequest{line: strings.TrimRight(line, "\r\n"), header: map[string]string{}}
			for {
				h, err := br.ReadString('\n')
				if err != nil {
					return
				}
				h = strings.TrimRight(h, "\r\n")
				if h == "" {
					break
				}
				k, v, _ := strings.Cut(h, ":")
				rq.header[strings.ToLower(k)] = strings.TrimSpace(v)
			}
			if n, _ := strconv.Atoi(rq.header["content-length"]); n > 0 && n < 1<<16 {
				b := make([]byte, n)
				if _, err := io.ReadFull(br, b); err != nil {
					return
				}
				rq.body = string(b)
			}
			o.mu.Lock()
			o.got = append(o.got, rq)
			o.mu.Unlock()
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
		}
	})
	return o
}

func (o *lineOrigin) requests() []rawRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]rawRequest(nil), o.got...)
}

// A value with a space, "&", "+", "%" and "#" reaches the origin intact
// through http.query and http.form, from a script variable and from a
// secret; the same value pasted into path is not sent: the step fails with
// cause internal naming http.path and pointing to http.query.
func TestScriptQueryAndFormEncodeValues(t *testing.T) {
	const tricky = "a b&c+d%e#f=g"
	t.Setenv("ENC_SECRET", "pw&x+y %z")
	o := newLineOrigin(t, tricky)
	r := apiScript(t, `
- http: {path: /a}
  extract: {v: {json: body}}
- http: {path: "/q?fixed=1", query: {id: "${v}", pw: "${env:ENC_SECRET}"}}
- http: {method: POST, path: /login, form: {username: alice, password: "${v}", token: "${env:ENC_SECRET}"}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
	if !res.OK {
		t.Fatalf("run failed: %s: %s", res.Cause, res.Err)
	}
	got := o.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	if want := "GET /q?fixed=1&id=a+b%26c%2Bd%25e%23f%3Dg&pw=pw%26x%2By+%25z HTTP/1.1"; got[1].line != want {
		t.Errorf("query step sent %q, want %q", got[1].line, want)
	}
	q, _ := url.ParseQuery(strings.TrimSuffix(strings.TrimPrefix(got[1].line, "GET /q?"), " HTTP/1.1"))
	if q.Get("id") != tricky || q.Get("pw") != "pw&x+y %z" {
		t.Errorf("origin reads id=%q pw=%q", q.Get("id"), q.Get("pw"))
	}
	form, err := url.ParseQuery(got[2].body)
	if err != nil || form.Get("password") != tricky || form.Get("token") != "pw&x+y %z" || form.Get("username") != "alice" || len(form) != 3 {
		t.Errorf("form body %q decodes to %v (%v)", got[2].body, form, err)
	}
	if ct := got[2].header["content-type"]; ct != "application/x-www-form-urlencoded" {
		t.Errorf("form Content-Type %q", ct)
	}
}

func TestScriptUnencodedVariableInQueryIsNotSent(t *testing.T) {
	t.Setenv("ENC_SECRET", "s3cret value")
	for _, c := range []struct{ name, step, key string }{
		{"variable in path", `http: {path: "/echo?id=${v}&x=1"}`, "http.path"},
		{"secret in path", `http: {path: "/echo?id=${env:ENC_SECRET}"}`, "http.path"},
		{"variable in url", `http: {url: "URL/echo?id=${v}"}`, "http.url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newLineOrigin(t, "a b%")
			r := apiScript(t, `
- http: {path: /a}
  extract: {v: {json: body}}
- `+strings.ReplaceAll(c.step, "URL", o.URL)+"\n")
			res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
			if res.OK {
				t.Fatal("run passed")
			}
			if n := len(o.requests()); n != 1 {
				t.Errorf("origin got %d requests, want 1 (the bad one must not be sent)", n)
			}
			want := c.key + ": after variables are substituted, the request URL's query contains a space, which cannot be sent in a request line; put the parameters in http.query (values are percent-encoded)"
			if res.Cause != checks.CauseInternal || !strings.Contains(res.Err, want) {
				t.Errorf("cause %s, err %q; want internal with %q", res.Cause, res.Err, want)
			}
			if strings.Contains(res.Err, "s3cret") {
				t.Errorf("error shows the secret: %q", res.Err)
			}
		})
	}
}

// A header built from a variable holding CR/LF is refused before dialling,
// as cause internal naming the header (not connect, a network failure),
// without the value.
func TestScriptHeaderWithLineBreakIsInternal(t *testing.T) {
	o := newLineOrigin(t, "tok\r\nX-Evil: 1")
	t.Setenv("ENC_SECRET", "line1\nline2")
	for _, c := range []struct{ name, header string }{
		{"variable", `"${v}"`},
		{"secret", `"Bearer ${env:ENC_SECRET}"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := apiScript(t, `
- http: {path: /a}
  extract: {v: {json: body}}
- http: {method: POST, path: /echo, headers: {X-Api-Key: `+c.header+`}}
`)
			res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
			want := "http.headers.X-Api-Key: the value contains a line break (CR or LF) after variables are substituted, which cannot be sent in a header"
			if res.OK || res.Cause != checks.CauseInternal || !strings.Contains(res.Err, want) {
				t.Fatalf("ok %v cause %s err %q; want internal with %q", res.OK, res.Cause, res.Err, want)
			}
			if strings.Contains(res.Err, "tok") || strings.Contains(res.Err, "line1") {
				t.Errorf("error shows the value: %q", res.Err)
			}
		})
	}
	for _, rq := range o.requests() {
		if strings.HasPrefix(rq.line, "POST") {
			t.Errorf("origin got %q", rq.line)
		}
	}
}

// basic_auth in a script step sends the secret password as Basic
// credentials.
func TestScriptBasicAuthFromSecret(t *testing.T) {
	t.Setenv("ENC_SECRET", "p@ss:w0rd&")
	o := newLineOrigin(t, "x")
	r := apiScript(t, `
- http: {path: /a, basic_auth: {username: alice, password: "${env:ENC_SECRET}"}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
	if !res.OK {
		t.Fatalf("run failed: %s: %s", res.Cause, res.Err)
	}
	if got, want := o.requests()[0].header["authorization"], "Basic YWxpY2U6cEBzczp3MHJkJg=="; got != want {
		t.Errorf("Authorization %q, want %q", got, want)
	}
}

// A secret sent through http.query is hidden in its encoded form too
// when the origin echoes the request URI into a failed assertion.
func TestScriptQuerySecretRedactedWhenEchoed(t *testing.T) {
	t.Setenv("ENC_SECRET", "pw&x+y %z")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "you asked for "+r.RequestURI)
	}))
	defer srv.Close()
	r := apiScript(t, `
- http: {path: /a, query: {user: alice, pw: "${env:ENC_SECRET}"}}
  expect: {body: {regex: ["^nothing like this$"]}}
`)
	res := r.Run(context.Background(), checks.Target{Name: "o", URL: srv.URL})
	if res.OK || len(res.Steps) != 1 || len(res.Steps[0].Assertions) == 0 {
		t.Fatalf("ok %v steps %+v", res.OK, res.Steps)
	}
	var got string
	for _, a := range res.Steps[0].Assertions {
		got += a.Got + "\n"
	}
	if strings.Contains(got, "pw%26x%2By+%25z") || !strings.Contains(got, "pw=[redacted]&user=alice") {
		t.Errorf("assertions got %q: want the encoded secret redacted and user=alice kept", got)
	}
}
