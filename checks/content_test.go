package checks_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// contentOrigin serves fixed answers by path: /doc (JSON), /big (2 KiB of
// "x" then TAILMARK), /gzip, /zlib, /rawdeflate (the JSON compressed),
// /br (bytes labelled br), /badgzip, /bomb (64 MiB of zeros gzipped).
func contentOrigin(t *testing.T) string {
	t.Helper()
	const doc = `{"n":1,"error":null,"f":1.0,"big":12345678901234567890,"status":"up","msg":"compressed hello"}`
	compress := func(w io.WriteCloser, buf *bytes.Buffer) []byte {
		w.Write([]byte(doc))
		w.Close()
		return buf.Bytes()
	}
	var gz, zl, fl bytes.Buffer
	gzBody := compress(gzip.NewWriter(&gz), &gz)
	zlBody := compress(zlib.NewWriter(&zl), &zl)
	fw, _ := flate.NewWriter(&fl, flate.BestSpeed)
	flBody := compress(fw, &fl)
	var bomb bytes.Buffer
	bw := gzip.NewWriter(&bomb)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		bw.Write(zeros)
	}
	bw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		send := func(enc string, b []byte) {
			if enc != "" {
				w.Header().Set("Content-Encoding", enc)
			}
			w.Write(b)
		}
		switch r.URL.Path {
		case "/doc":
			send("", []byte(doc))
		case "/big":
			send("", append(bytes.Repeat([]byte("x"), 2048), "TAILMARK"...))
		case "/gzip":
			send("gzip", gzBody)
		case "/zlib":
			send("deflate", zlBody)
		case "/rawdeflate":
			send("Deflate", flBody)
		case "/br":
			send("br", []byte(doc)) // plain text labelled br: must not be matched
		case "/badgzip":
			send("gzip", []byte("this is not gzip at all"))
		case "/bomb":
			send("gzip", bomb.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func runContent(t *testing.T, base, path string, limit units.ByteSize, e checks.Expect) checks.Result {
	t.Helper()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: path, BodyLimit: limit}, e, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return h.Run(context.Background(), checks.Target{URL: base})
}

func docSum() string {
	s := sha256.Sum256([]byte(`{"n":1,"error":null,"f":1.0,"big":12345678901234567890,"status":"up","msg":"compressed hello"}`))
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestContentAssertions runs body, json and checksum assertions against a
// real origin and checks what a user sees: pass/fail, cause and message.
func TestContentAssertions(t *testing.T) {
	base := contentOrigin(t)
	jsonEq := func(path string, v any) checks.Expect {
		return checks.Expect{JSON: []checks.JSONExpect{{Path: path, Equals: v}}}
	}
	cases := []struct {
		name  string
		path  string
		limit units.ByteSize
		e     checks.Expect
		ok    bool
		cause checks.Cause
		err   string // exact Result.Err when failing
	}{
		// equals null asserts null; it used to become "exists".
		{name: "null on a number", path: "/doc", e: jsonEq("n", checks.JSONNull{}), cause: checks.CauseJSON, err: "json n: got 1, want null"},
		{name: "null on missing", path: "/doc", e: jsonEq("missing", checks.JSONNull{}), cause: checks.CauseJSON, err: "json missing: got (missing), want null"},
		{name: "null on null", path: "/doc", e: jsonEq("error", checks.JSONNull{}), ok: true},

		// Numbers compare as exact decimals.
		{name: "big integer off by one", path: "/doc", e: jsonEq("big", uint64(12345678901234567891)), cause: checks.CauseJSON,
			err: "json big: got 12345678901234567890, want 12345678901234567891"},
		{name: "big integer rounded", path: "/doc", e: jsonEq("big", 12345678901234567000.0), cause: checks.CauseJSON,
			err: "json big: got 12345678901234567890, want 12345678901234567000"},
		{name: "big integer exact", path: "/doc", e: jsonEq("big", uint64(12345678901234567890)), ok: true},
		{name: "1.0 equals 1", path: "/doc", e: jsonEq("f", 1), ok: true},
		{name: "1 equals 1.0", path: "/doc", e: jsonEq("n", 1.0), ok: true},

		// Content-Encoding gzip and deflate are decoded first.
		{name: "gzip contains", path: "/gzip", e: checks.Expect{Body: checks.BodyExpect{Contains: []string{"compressed hello"}}}, ok: true},
		{name: "gzip not_contains", path: "/gzip", e: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"compressed hello"}}},
			cause: checks.CauseBody, err: `body contains "compressed hello"`},
		{name: "gzip json", path: "/gzip", e: jsonEq("status", "up"), ok: true},
		{name: "gzip checksum of the content", path: "/gzip", e: checks.Expect{Checksum: docSum()}, ok: true},
		{name: "gzip size of the content", path: "/gzip", e: checks.Expect{Size: checks.SizeExpect{Min: 94, Max: 94}}, ok: true},
		{name: "zlib deflate", path: "/zlib", e: jsonEq("status", "up"), ok: true},
		{name: "raw deflate", path: "/rawdeflate", e: checks.Expect{Checksum: docSum()}, ok: true},
		{name: "corrupt gzip", path: "/badgzip", e: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"boom"}}},
			cause: checks.CauseProtocol, err: "protocol: body does not decode as Content-Encoding gzip: gzip: invalid header"},
		{name: "gzip bomb stops at body_limit", path: "/bomb", limit: 1 << 20, e: checks.Expect{Body: checks.BodyExpect{Contains: []string{"x"}}},
			cause: checks.CauseBody, err: `body does not contain "x" (body cut at body_limit 1MiB: only the first 1048576 bytes were read)`},

		// An encoding vigil does not decode never passes content assertions.
		{name: "br not_contains", path: "/br", e: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"nothing"}}}, cause: checks.CauseBody,
			err: "body not_contains: body has Content-Encoding br, which vigil does not decode (gzip and deflate only); send Accept-Encoding: gzip or identity"},
		{name: "br json", path: "/br", e: jsonEq("status", "up"), cause: checks.CauseJSON,
			err: "json status: body has Content-Encoding br, which vigil does not decode (gzip and deflate only); send Accept-Encoding: gzip or identity"},
		{name: "br checksum", path: "/br", e: checks.Expect{Checksum: docSum()}, cause: checks.CauseChecksum,
			err: "checksum sha256 not computed: body has Content-Encoding br, which vigil does not decode (gzip and deflate only); send Accept-Encoding: gzip or identity"},
		{name: "br without content assertions", path: "/br", ok: true},

		// A body cut at body_limit.
		{name: "cut: not_contains cannot pass", path: "/big", limit: 1024, e: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"TAILMARK"}}},
			cause: checks.CauseBody, err: `body not_contains "TAILMARK" cannot be checked: body over body_limit 1KiB (1024 bytes read), so its absence cannot be shown`},
		{name: "cut: not_contains found in the prefix", path: "/big", limit: 1024, e: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"xx"}}},
			cause: checks.CauseBody, err: `body contains "xx"`},
		{name: "cut: contains missing", path: "/big", limit: 1024, e: checks.Expect{Body: checks.BodyExpect{Contains: []string{"TAILMARK"}}},
			cause: checks.CauseBody, err: `body does not contain "TAILMARK" (body cut at body_limit 1KiB: only the first 1024 bytes were read)`},
		{name: "cut: regex missing", path: "/big", limit: 1024, e: checks.Expect{Body: checks.BodyExpect{Regex: []string{"TAIL"}}},
			cause: checks.CauseBody, err: `body does not match ~TAIL (body cut at body_limit 1KiB: only the first 1024 bytes were read)`},
		{name: "cut: contains in the prefix", path: "/big", limit: 1024, e: checks.Expect{Body: checks.BodyExpect{Contains: []string{"xxx"}, Regex: []string{"^x+$"}}}, ok: true},
		{name: "cut: json", path: "/doc", limit: 10, e: jsonEq("n", 1), cause: checks.CauseJSON,
			err: "json n: not parsed: body over body_limit 10B (10 bytes read)"},
		{name: "whole body: not_contains", path: "/big", e: checks.Expect{Body: checks.BodyExpect{NotContains: []string{"nothing"}}}, ok: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runContent(t, base, c.path, c.limit, c.e)
			if r.OK != c.ok {
				t.Fatalf("ok = %v, want %v (cause %s, err %q, assertions %+v)", r.OK, c.ok, r.Cause, r.Err, r.Assertions)
			}
			if !c.ok && (r.Cause != c.cause || r.Err != c.err) {
				t.Errorf("cause %s, err %q\nwant cause %s, err %q", r.Cause, r.Err, c.cause, c.err)
			}
		})
	}
}

// Header keywords are case-insensitive; "=Present" is still the text.
func TestHeaderKeywordsAnyCase(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-A", "Present")
	}))
	defer srv.Close()
	cases := []struct {
		m   string
		ok  bool
		err string
	}{
		{"Present", true, ""},
		{"PRESENT", true, ""},
		{"=Present", true, ""},
		{"ABSENT", false, `header X-A is present ("Present"), want absent`},
	}
	for _, c := range cases {
		t.Run(c.m, func(t *testing.T) {
			r := runContent(t, srv.URL, "/", 0, checks.Expect{Headers: checks.HeaderMatchers{"x-a": c.m, "x-b": strings.ToLower(c.m)}})
			if c.ok && c.m != "=Present" && r.OK {
				t.Fatalf("x-b: %s passed on an absent header", c.m)
			}
			got := ""
			for _, a := range r.Assertions {
				if a.Name == "header X-A" {
					if a.OK != c.ok {
						t.Fatalf("header X-A %s: ok = %v, want %v (%+v)", c.m, a.OK, c.ok, a)
					}
					got = a.Got
				}
			}
			if got != "Present" {
				t.Fatalf("no X-A assertion: %+v", r.Assertions)
			}
			if !c.ok && r.Err != c.err {
				t.Errorf("err %q, want %q", r.Err, c.err)
			}
		})
	}
	r := runContent(t, srv.URL, "/", 0, checks.Expect{Headers: checks.HeaderMatchers{"x-b": "ABSENT"}})
	if !r.OK {
		t.Errorf("ABSENT on an absent header: %s %q", r.Cause, r.Err)
	}
}

// Empty matchers and an empty json list are config errors naming the key.
func TestEmptyMatchersAreConfigErrors(t *testing.T) {
	cases := []struct {
		e    checks.Expect
		want string
	}{
		{checks.Expect{Body: checks.BodyExpect{Contains: []string{"a", ""}}}, "body.contains[1]: empty string (it matches every body)"},
		{checks.Expect{Body: checks.BodyExpect{NotContains: []string{""}}}, "body.not_contains[0]: empty string (it matches every body)"},
		{checks.Expect{Body: checks.BodyExpect{Regex: []string{""}}}, "body.regex[0]: empty string (it matches every body)"},
		{checks.Expect{JSON: []checks.JSONExpect{}}, "json: empty list (omit the key, or list {path: …} assertions)"},
	}
	for _, c := range cases {
		err := c.e.ValidateAndSetDefaults()
		if err == nil || err.Error() != c.want || !errors.Is(err, checks.ErrBadValue) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestRawBody: with http.raw_body a compressed body is asserted on as
// served (the checksum of a pre-compressed object as stored), and an
// encoding vigil does not decode does not fail content assertions.
func TestRawBody(t *testing.T) {
	base := contentOrigin(t)
	run := func(path string, e checks.Expect) checks.Result {
		t.Helper()
		h, err := checks.NewHTTP(checks.HTTPSpec{Path: path, RawBody: true}, e, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		return h.Run(context.Background(), checks.Target{URL: base})
	}
	// The bytes as served (a request that sets Accept-Encoding itself is
	// not decoded by the transport).
	req, _ := http.NewRequest("GET", base+"/gzip", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(stored)
	if r := run("/gzip", checks.Expect{Checksum: "sha256:" + hex.EncodeToString(sum[:])}); !r.OK {
		t.Errorf("checksum of the gzip bytes as served: %s (%s), want a pass", r.Cause, r.Err)
	}
	if r := run("/gzip", checks.Expect{Checksum: docSum()}); r.OK {
		t.Error("checksum of the decoded content passed with raw_body")
	}
	if r := run("/br", checks.Expect{Body: checks.BodyExpect{Contains: []string{`"status":"up"`}}}); !r.OK {
		t.Errorf("br body as served: %s (%s), want a pass", r.Cause, r.Err)
	}
}
