package checks_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// rfc3986 percent-encodes every byte of s but A-Za-z0-9 and keep, with
// upper-case hex: Python's urllib.parse.quote(s, safe=keep), PHP's
// rawurlencode and .NET's Uri.EscapeDataString (keep "").
func rfc3986(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~"+keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// lowerHex lower-cases the hex digits of every %XX escape in s.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = strings.ToLower(string(b[i+1]))[0], strings.ToLower(string(b[i+2]))[0]
		}
	}
	return string(b)
}

// echoOrigin answers the request's Authorization header, without a
// "Bearer " or "Token " prefix, encoded by the function its ?f= names, followed by
// " ... end": an origin's error message quoting the credential.
func echoOrigin(t *testing.T, encoders map[string]func(string) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimPrefix(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), "Token ")
		enc, ok := encoders[r.URL.Query().Get("f")]
		if !ok {
			http.Error(w, "unknown f", http.StatusBadRequest)
			return
		}
		w.Write([]byte(enc(v) + " ... end"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// echoGot runs an http check that sends "Bearer "+secret to the origin
// at base, whose body regex fails, and returns the body assertion's got
// as vigil shows it: through a Redactor that knows secret, as the config
// loader's knows a ${NAME} value.
func echoGot(t *testing.T, base, f, header, secret string) string {
	t.Helper()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/enc?f=" + f, Headers: map[string]string{"Authorization": header}},
		checks.Expect{Body: checks.BodyExpect{Regex: []string{"zzzq"}}}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res := h.Run(context.Background(), checks.Target{URL: base})
	if len(res.Assertions) < 2 || res.Assertions[1].Name != "body regex ~zzzq" {
		t.Fatalf("assertions %+v", res.Assertions)
	}
	var red checks.Redactor
	red.Add(secret)
	return red.Redact(res.Assertions[1].Got)
}

// TestRedactorRFC3986Echo: a secret an origin echoes percent-encoded the
// RFC 3986 way (space as %20, ' as %27, & as %26, hex in either case), as
// Python's quote(s, safe=""), PHP's rawurlencode and .NET's
// Uri.EscapeDataString write it, shows as *** in the body assertion's got.
func TestRedactorRFC3986Echo(t *testing.T) {
	encoders := map[string]func(string) string{
		"quote":      func(s string) string { return rfc3986(s, "") },
		"quotelower": func(s string) string { return lowerHex(rfc3986(s, "")) },
		"quoteslash": func(s string) string { return rfc3986(s, "/") },
	}
	base := echoOrigin(t, encoders)
	for _, secret := range []string{"Sp&c'al 1xabcdef", "Spc'al+ 1xabcdef", "a/b (c)!*' d&e=f"} {
		for f := range encoders {
			t.Run(f+" "+secret, func(t *testing.T) {
				got := echoGot(t, base, f, "Bearer "+secret, secret)
				if want := `no match in "*** ... end"`; got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
		}
	}
}

// TestRedactorHTMLEcho: a secret an origin's HTML page echoes escaped
// (Go's html.EscapeString, Python's html.escape, PHP's htmlspecialchars,
// XML's &apos;, numeric references) shows as *** in the body assertion's
// got.
func TestRedactorHTMLEcho(t *testing.T) {
	repl := func(pairs ...string) func(string) string { return strings.NewReplacer(pairs...).Replace }
	encoders := map[string]func(string) string{
		"go":      html.EscapeString,
		"python":  repl("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;"),
		"php":     repl("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#039;"),
		"xml":     repl("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;"),
		"noquote": repl("&", "&amp;", "<", "&lt;", ">", "&gt;"),
		"numeric": repl("&", "&#38;", "<", "&#60;", ">", "&#62;", `"`, "&#34;", "'", "&#39;"),
		"hex":     repl("&", "&#x26;", "<", "&#x3C;", ">", "&#x3e;", `"`, "&#x22;", "'", "&#x27;"),
	}
	base := echoOrigin(t, encoders)
	for _, secret := range []string{"Sp&c'al 1xabcdef", "pass&word=1234 x", `<a href="x">'q'</a>`} {
		for f := range encoders {
			t.Run(f+" "+secret, func(t *testing.T) {
				got := echoGot(t, base, f, "Bearer "+secret, secret)
				if want := `no match in "*** ... end"`; got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
		}
	}
}

// TestRedactorHeaderValueSecret: a secret that is a whole Authorization
// value (an AUTH_HEADER="Bearer <token>" variable) is also hidden by its
// credentials, in their forms, when an origin echoes them without the
// scheme; a Basic value also by the user:password and the password it
// decodes to.
func TestRedactorHeaderValueSecret(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	basicPart := func(i int) func(string) string {
		return func(v string) string {
			b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, "Basic "))
			if err != nil {
				return "not basic: " + v
			}
			if i < 0 {
				return string(b)
			}
			return strings.SplitN(string(b), ":", 2)[i]
		}
	}
	encoders := map[string]func(string) string{
		"plain":    func(s string) string { return s },
		"b64":      b64,
		"quote":    func(s string) string { return rfc3986(s, "") },
		"userpass": basicPart(-1),
		"password": basicPart(1),
	}
	base := echoOrigin(t, encoders)
	cases := []struct{ header, f string }{
		{"Bearer TokAfterBearerOOOO8181", "plain"},
		{"Bearer TokAfterBearerOOOO8181", "b64"},
		{"Token tok/with+odd=chars12", "quote"},
		{"Basic " + b64("monitor:Pa55w0rd-Basic"), "userpass"},
		{"Basic " + b64("monitor:Pa55w0rd-Basic"), "password"},
	}
	for _, tc := range cases {
		t.Run(tc.f+" "+tc.header, func(t *testing.T) {
			got := echoGot(t, base, tc.f, tc.header, tc.header)
			if want := `no match in "*** ... end"`; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
