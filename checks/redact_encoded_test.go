package checks_test

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestRedactorHexBase32DoublePercent: a secret of at least
// MinEncodedSecret bytes echoed hex-encoded (either case, mixed too),
// base32-encoded (padded or not, upper or lower case), base64url without
// padding (a JWT's payload), percent-encoded twice (a URL inside another
// URL's query: %2520), or base64-encoded and then percent-encoded in a URL
// is hidden as ***, and the text around it stays. Each text is built with
// the encoder itself.
func TestRedactorHexBase32DoublePercent(t *testing.T) {
	const odd = `p/a+s s"w\<&>é-1` // characters every escaper treats differently
	const plain = "hunter2-Secret"
	const b64slash = "Sk?>>Sk?>>Sk?" // standard base64 "U2s/Pj5Taz8+PlNrPw==": + and / inside
	hexOf := func(s string) string { return hex.EncodeToString([]byte(s)) }
	b32 := func(s string) string { return base32.StdEncoding.EncodeToString([]byte(s)) }
	b32raw := func(s string) string {
		return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(s))
	}
	// mixCase upper-cases every other letter: an encoder's output read
	// back through a case-insensitive layer.
	mixCase := func(s string) string {
		b := []byte(s)
		for i := 0; i < len(b); i += 2 {
			if 'a' <= b[i] && b[i] <= 'z' {
				b[i] -= 'a' - 'A'
			}
		}
		return string(b)
	}
	cases := []struct {
		name, secret, pre, enc, post string
	}{
		{"hex lower", plain, "signature mismatch: got ", hexOf(plain), ", want 00"},
		{"hex upper", plain, "got ", strings.ToUpper(hexOf(plain)), "."},
		{"hex mixed case", odd, "dump: ", mixCase(hexOf(odd)), " end"},
		{"hex in a query", odd, "/cb?sig=", hexOf(odd), "&y=1"},
		{"base32 padded", plain, "seed ", b32(plain), " end"},
		{"base32 unpadded", odd, "otpauth://totp/x?secret=", b32raw(odd), "&issuer=x"},
		{"base32 lower case", plain, `{"k":"`, strings.ToLower(b32(plain)), `"}`},
		{"base64url unpadded", odd, "token ", base64.RawURLEncoding.EncodeToString([]byte(odd)), " rejected"},
		{"percent-encoded twice, query", odd, "/login?next=", url.QueryEscape(url.QueryEscape(odd)), "&x=1"},
		{"percent-encoded twice, path", odd, "/r/", url.PathEscape(url.PathEscape(odd)), "/z"},
		{"percent-encoded twice, %2520", "my pass word", "/a?u=", "my%2520pass%2520word", "&b=2"},
		{"percent-encoded twice, lower-case hex", odd, "/a?u=", strings.ToLower(url.PathEscape(url.PathEscape(odd))), ""},
		{"base64 percent-encoded in a query", b64slash, "/cb?t=", url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(b64slash))), "&y=1"},
		{"base64 percent-encoded in a path", b64slash, "/cb/", url.PathEscape(base64.StdEncoding.EncodeToString([]byte(b64slash))), "/z"},
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

// TestRedactorInsideLongerHexBase32JWT: the secret's bytes inside a longer
// hex, base32 or unpadded base64url text (a JWT whose payload holds it,
// a TOTP URI's seed with more bytes around it) are hidden at every byte
// offset: at most the characters it shares with the bytes around it
// stay, so no more than 2 of the characters that encode it are left.
func TestRedactorInsideLongerHexBase32JWT(t *testing.T) {
	const secret = "hunter2-Secret"
	var r checks.Redactor
	r.Add(secret)
	encs := map[string]struct {
		enc   func([]byte) string
		chars func(n int) int // characters that encode n bytes
	}{
		"hex":          {hex.EncodeToString, func(n int) int { return 2 * n }},
		"HEX":          {func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }, func(n int) int { return 2 * n }},
		"base32":       {base32.StdEncoding.EncodeToString, func(n int) int { return 8 * n / 5 }},
		"base32 lower": {func(b []byte) string { return strings.ToLower(base32.StdEncoding.EncodeToString(b)) }, func(n int) int { return 8 * n / 5 }},
		"base64url":    {base64.RawURLEncoding.EncodeToString, func(n int) int { return 8 * n / 6 }},
	}
	for name, e := range encs {
		for k := range 5 {
			for _, tail := range []string{"", "!", `","exp":1700000000}`} {
				msg := `{"sub":"ann` + strings.Repeat("x", k) + `","pw":"`
				in := e.enc([]byte(msg + secret + tail))
				out := r.Redact("jwt " + in + " rejected")
				if !strings.Contains(out, checks.Redacted) {
					t.Errorf("%s, offset %d, tail %q: %q not redacted", name, len(msg), tail, in)
					continue
				}
				// The encoded text kept: all but what stands for the secret.
				kept := len(out) - len("jwt  rejected") - len(checks.Redacted)
				if gone, want := len(in)-kept, e.chars(len(secret))-2; gone < want {
					t.Errorf("%s, offset %d, tail %q: only %d characters hidden, want at least %d: %q", name, len(msg), tail, gone, want, out)
				}
			}
		}
	}
}

// TestRedactorNewFormsNoFalsePositives: below MinEncodedSecret bytes a
// secret's hex, base32 and doubly percent-encoded forms are not hidden
// (they are short enough to turn up in unrelated text); and for a longer
// secret, ordinary hex digests, base32 text and %25 escapes that do not
// encode it stay as they are.
func TestRedactorNewFormsNoFalsePositives(t *testing.T) {
	const shortSecret = "a b/c!x" // 7 bytes
	var r checks.Redactor
	r.Add(shortSecret)
	for _, enc := range []string{
		hex.EncodeToString([]byte(shortSecret)),
		base32.StdEncoding.EncodeToString([]byte(shortSecret)),
		url.QueryEscape(url.QueryEscape(shortSecret)),
		url.PathEscape(url.PathEscape(shortSecret)),
	} {
		text := "value " + enc + " end"
		if got := r.Redact(text); got != text {
			t.Errorf("7-byte secret: Redact(%q) = %q, want it unchanged", text, got)
		}
	}

	var long checks.Redactor
	long.Add("hunter2-Secret")
	for _, text := range []string{
		"etag sha256:" + hex.EncodeToString([]byte("hunter2-Secreu-other-bytes")) + " …",
		"sha1 68756e746572322d5365637265 (13 of the 14 bytes)",
		"seed " + base32.StdEncoding.EncodeToString([]byte("hunter3-Secret")),
		"/login?next=%252Fhome%253Fa%253D1&b=%2520",
		"build 2026-12-01 deadbeefcafe0123456789abcdef",
	} {
		if got := long.Redact(text); got != text {
			t.Errorf("Redact(%q) = %q, want it unchanged", text, got)
		}
	}
}
