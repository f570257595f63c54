package checks_test

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestRedactorEncodings: a secret of at least MinEncodedSecret bytes is
// hidden in every encoding an origin or an error message may echo it in.
// Each case builds the text with the encoder itself, not with a copy of
// the redactor's rules.
func TestRedactorEncodings(t *testing.T) {
	// Characters every encoder treats differently: / + space " \ < & é 😀.
	const odd = `p/a+s s"w\<&>é😀-1`
	const plain = "hunter2-Secret"
	goJSON := func(s string, html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		q := strings.TrimSpace(b.String())
		return q[1 : len(q)-1]
	}
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	// upperHex writes the hex digits of every \uXXXX escape in upper case,
	// as .NET's System.Text.Json does (\u003C where Go writes \u003c).
	upperHex := func(s string) string {
		return regexp.MustCompile(`\\u[0-9a-f]{4}`).ReplaceAllStringFunc(s, func(e string) string {
			return `\u` + strings.ToUpper(e[2:])
		})
	}
	// mixHex lower-cases the first %XX escape only: "%2fPa%3Css".
	mixHex := func(s string) string {
		i := strings.IndexByte(s, '%')
		return s[:i] + strings.ToLower(s[i:i+3]) + s[i+3:]
	}
	// The secret of the review: a .NET origin echoed it with \u003C.
	const review = `S3cr3t/Pa<ss>w0rd+é`
	// Each text is pre + the encoded secret + post; only the middle goes.
	cases := []struct {
		name, secret, pre, enc, post string
	}{
		{"as written", odd, "got ", odd, ""},
		{"base64 std", odd, "got ", b64(base64.StdEncoding, odd), ""},
		{"base64 std unpadded", odd, "got ", b64(base64.RawStdEncoding, odd), "."},
		{"base64 url", odd, "got ", b64(base64.URLEncoding, odd), ""},
		{"base64 url unpadded", odd, "got ", b64(base64.RawURLEncoding, odd), "."},
		{"query escape", odd, "/cb?x=", url.QueryEscape(odd), "&y=1"},
		{"path escape", odd, "/cb/", url.PathEscape(odd), "/z"},
		{"lower-case hex", odd, "/cb/", strings.ToLower(url.PathEscape(odd)), "/z"},
		{"json html-escaped", odd, `{"echo":"`, goJSON(odd, true), `"}`},
		{"json plain", odd, `{"echo":"`, goJSON(odd, false), `"}`},
		{"json php-style", odd, `{"echo":"`, `p\/a+s s\"w\\<&>\u00e9\ud83d\ude00-1`, `"}`},
		{"go-quoted", odd, "header X-Echo: got \"", strconv.Quote(odd)[1 : len(strconv.Quote(odd))-1], `"`},
		{"go-quoted json", odd, `got "\"`, goQuoteInner(goJSON(odd, true)), `\""`},
		{"plain base64", plain, "Bearer ", b64(base64.StdEncoding, plain), ""},
		// Hex digits in either case, mixed in one text. The text around the
		// secret keeps its own escapes as they were.
		{"json upper-case hex", review, `{"a%2Fb":"\u00E9","echo":"`, upperHex(goJSON(review, true)), `"}`},
		{"json upper-case hex, as reported", review, `{"echo":"`, `S3cr3t/Pa\u003Css\u003Ew0rd+é`, `"}`},
		{"json upper-case hex ascii-only", odd, `{"echo":"`, upperHex(asciiJSON(goJSON(odd, true))), `"}`},
		{"json .NET default encoder", odd, `{"echo":"`, `p/a\u002Bs s\u0022w\\\u003C\u0026\u003E\u00E9\uD83D\uDE00-1`, `"}`},
		{"query escape mixed-case hex", review, "/cb?A%2F=", mixHex(url.QueryEscape(review)), "&y=%3C"},
		{"path escape mixed-case hex", odd, "/cb/", mixHex(url.PathEscape(odd)), "/z"},
		{"go-quoted json upper-case hex", review, `got "\"`, goQuoteInner(upperHex(goJSON(review, true))), `\""`},
		// A browser step's page encodes with JavaScript, which keeps !'()*
		// (Go escapes them); written as Chromium sent them.
		{"js encodeURIComponent", "Tr0ub4dor&3!", "404 http://127.0.0.1/p/", "Tr0ub4dor%263!", ""},
		{"js encodeURIComponent, space and slash", "my pass/word!", "404 http://127.0.0.1/p/", "my%20pass%2Fword!", ""},
		{"js encodeURIComponent, non-ASCII", "pä(ss)*'~", "/p/", "p%C3%A4(ss)*'~", "/x"},
		{"js encodeURI", "a b/c?d=1&e!", "GET /", "a%20b/c?d=1&e!", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r checks.Redactor
			r.Add(tc.secret)
			text := tc.pre + tc.enc + tc.post
			if got, want := r.Redact(text), tc.pre+checks.Redacted+tc.post; got != want {
				t.Errorf("Redact(%q) = %q, want %q", text, got, want)
			}
		})
	}
}

// asciiJSON writes s's non-ASCII runes as \uXXXX in UTF-16 (lower-case
// hex), keeping the rest: Python's json.dumps with ensure_ascii.
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, `\u%04x`, u)
		}
	}
	return b.String()
}

func goQuoteInner(s string) string {
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// TestRedactorBase64InsideLongerText: the secret inside a longer base64
// text — the password of a Basic credential, or followed by more bytes — is
// hidden whatever its offset; only the characters shared with the bytes
// around it stay.
func TestRedactorBase64InsideLongerText(t *testing.T) {
	const secret = "hunter2-Secret"
	var r checks.Redactor
	r.Add(secret)
	enc := base64.StdEncoding.EncodeToString
	cases := []struct{ plain, want string }{
		{"user:" + secret, "Basic dXNlcjp***=="},         // offset 5: k = 2
		{secret + ":x", "Basic ***6eA=="},                // offset 0, more after
		{"ab:" + secret + ":x", "Basic YWI6***6eA=="},    // offset 3: k = 0
		{"abc:" + secret + ":xy", "Basic YWJjOm***Onh5"}, // offset 4: k = 1
	}
	for _, tc := range cases {
		if got := r.Redact("Basic " + enc([]byte(tc.plain))); got != tc.want {
			t.Errorf("base64(%q): Redact = %q, want %q", tc.plain, got, tc.want)
		}
	}
}

// TestRedactorShortSecretExactOnly: below MinEncodedSecret bytes only the
// secret as written is hidden (documented), so a short base64 word in
// unrelated text stays.
func TestRedactorShortSecretExactOnly(t *testing.T) {
	const secret = "s3cr3t!" // 7 bytes
	var r checks.Redactor
	r.Add(secret)
	encoded := base64.StdEncoding.EncodeToString([]byte(secret))
	if got, want := r.Redact("a "+secret+" b "+encoded), "a *** b "+encoded; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

// TestRedactorTruncated: an assertion's got is cut at 200 bytes with "…";
// a secret (or its encoding) cut there is hidden from its fourth byte on.
func TestRedactorTruncated(t *testing.T) {
	const secret = "tok-0123456789abcdef"
	var r checks.Redactor
	r.Add(secret)
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	cases := []struct{ in, want string }{
		{`{"a":"` + secret[:9] + "…", `{"a":"***…`},
		{`x ` + b64[:10] + "…", `x ***…`},
		{`{"a":"tok-0123456789ABC…`, `{"a":"***…`},             // hex letters in either case
		{`{"a":"tok…`, `{"a":"tok…`},                           // 3 bytes: too short to tell
		{"one " + secret + " two tok-01…", "one *** two ***…"}, // whole and cut
		{"no secret here…", "no secret here…"},
	}
	for _, tc := range cases {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactorNilAndOverlap: a nil Redactor keeps text; of two secrets
// where one contains the other, the longer is hidden whole.
func TestRedactorNilAndOverlap(t *testing.T) {
	var nilR *checks.Redactor
	if got := nilR.Redact("abc"); got != "abc" {
		t.Errorf("nil Redactor: %q", got)
	}
	var r checks.Redactor
	r.Add("secret-part")
	r.Add("the-secret-part-and-more")
	r.Add("") // ignored
	if got, want := r.Redact("x the-secret-part-and-more y secret-part"), "x *** y ***"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

// BenchmarkRedact: ten secrets, one error text of the size an assertion
// failure has, no secret in it (the common case).
func BenchmarkRedact(b *testing.B) {
	var r checks.Redactor
	for i := range 10 {
		r.Add(fmt.Sprintf(`secret-%d/with "odd" chars é`, i))
	}
	text := `json data.items: got {"id":12,"name":"widget","tags":["a","b"],"price":9.5}, want "x"` +
		strings.Repeat(" filler", 30)
	r.Redact(text)
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(text)
	}
}

// FuzzRedactor: whatever surrounds it, a secret (without "*", which the
// replacement itself is made of) never survives Redact as written, nor
// base64-, hex-, base32- or percent-encoded (once or twice) on its own.
func FuzzRedactor(f *testing.F) {
	f.Add("hunter2-Secret", "got ", "…")
	f.Add(`p/a+s s"w\<&>é`, `{"a":"`, `"}`)
	f.Add("aaaaaaaa", "aaaa", "aa…aaaa")
	f.Fuzz(func(t *testing.T, secret, pre, post string) {
		if len(secret) < checks.MinEncodedSecret || strings.Contains(secret, "*") {
			return
		}
		var r checks.Redactor
		r.Add(secret)
		for _, enc := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), url.QueryEscape(secret),
			hex.EncodeToString([]byte(secret)), base32.StdEncoding.EncodeToString([]byte(secret)), url.QueryEscape(url.QueryEscape(secret))} {
			if got := r.Redact(pre + enc + post); strings.Contains(got, enc) {
				t.Fatalf("Redact(%q) = %q shows %q", pre+enc+post, got, enc)
			}
		}
	})
}
