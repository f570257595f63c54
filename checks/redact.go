package checks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MinEncodedSecret is the shortest secret, in bytes, whose encodings a
// Redactor hides as well as the secret itself. A shorter secret is hidden
// only as written: its base64 or escaped forms are short enough to turn up
// in unrelated text.
const MinEncodedSecret = 8

// minTruncated is the shortest start of a secret (or of one of its
// encodings) that Redact hides when a text was cut short with "…" right
// after it.
const minTruncated = 4

// Redacted replaces every secret a Redactor hides.
const Redacted = "***"

// Redactor hides secret values in text that leaves a run: errors,
// assertion got/want, URLs. An origin may echo a secret back encoded, so a
// secret of at least MinEncodedSecret bytes is also hidden
//
//   - base64-encoded, in the standard and URL alphabets, padded or not,
//     alone or inside a longer base64 text (the "user:password" of a Basic
//     Authorization header);
//   - percent-encoded as url.QueryEscape and url.PathEscape do, with upper-
//     or lower-case hex digits;
//   - JSON-escaped, with and without HTML escaping (\u003c), with non-ASCII
//     as \uXXXX, and with "/" as "\/";
//   - Go-quoted (%q), as error messages quote values.
//
// JSON escaping and Go quoting apply to the base64 and percent-encoded
// forms too: an origin's JSON may echo the percent-encoded secret, and an
// error quote that JSON.
//
// Where a value was shortened with "…" (an assertion's got is cut at 200
// bytes) and the text before "…" ends with at least the first minTruncated
// bytes of one of these forms, that start is hidden too.
//
// The zero value hides nothing. Add and Redact are safe for concurrent use.
type Redactor struct {
	mu      sync.Mutex
	secrets []string
	forms   []string          // every form of every secret, longest first
	rep     *strings.Replacer // nil: rebuilt from forms by the next Redact
}

// Add makes r hide secret. An empty secret is ignored.
func (r *Redactor) Add(secret string) {
	if secret == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.secrets, secret) {
		return
	}
	r.secrets = append(r.secrets, secret)
	r.rep = nil
}

// Redact returns s with every form of every secret replaced by Redacted.
// A nil Redactor returns s unchanged.
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.Lock()
	if r.rep == nil && len(r.secrets) > 0 {
		r.build()
	}
	rep, forms := r.rep, r.forms
	r.mu.Unlock()
	if rep == nil {
		return s
	}
	s = rep.Replace(s)
	if strings.Contains(s, "…") {
		s = redactTruncated(s, forms)
	}
	return s
}

// build compiles the replacer; r.mu is held. strings.Replacer picks, at
// each position, the first matching pattern in argument order, so longer
// forms come first: a padded base64 form wins over its unpadded prefix.
func (r *Redactor) build() {
	seen := map[string]bool{}
	var forms []string
	for _, sec := range r.secrets {
		for _, f := range secretForms(sec) {
			if !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	args := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		args = append(args, f, Redacted)
	}
	r.forms, r.rep = forms, strings.NewReplacer(args...)
}

// redactTruncated hides the start of a form that ends right before a "…".
func redactTruncated(s string, forms []string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "…")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		head, cut := s[:i], 0
		for _, f := range forms {
			cut = max(cut, longestTail(head, f))
		}
		if cut >= minTruncated {
			head = head[:len(head)-cut] + Redacted
		}
		b.WriteString(head)
		b.WriteString("…")
		s = s[i+len("…"):]
	}
}

// longestTail is the length of the longest proper prefix of f that s ends
// with (0 if none).
func longestTail(s, f string) int {
	if s == "" {
		return 0
	}
	last := s[len(s)-1]
	for n := min(len(f)-1, len(s)); n > 0; n-- {
		if f[n-1] == last && strings.HasSuffix(s, f[:n]) {
			return n
		}
	}
	return 0
}

// secretForms lists sec and, from MinEncodedSecret bytes on, the encodings
// the Redactor documents.
func secretForms(sec string) []string {
	forms := []string{sec}
	if len(sec) < MinEncodedSecret {
		return forms
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(sec)))
		raw := enc.WithPadding(base64.NoPadding)
		// The secret at byte offset k (mod 3) of a longer encoded text:
		// the characters that also carry bits of the bytes around it
		// differ, the rest are fixed. k = 0 alone is the unpadded form.
		for k := range 3 {
			b := append(make([]byte, k), sec...)
			e := raw.EncodeToString(b)
			e = e[[]int{0, 2, 3}[k]:]
			if len(b)%3 != 0 {
				forms = append(forms, e) // the secret at the end: all of it
				e = e[:len(e)-1]
			}
			forms = append(forms, e)
		}
	}
	for _, esc := range []string{url.QueryEscape(sec), url.PathEscape(sec)} {
		forms = append(forms, esc, lowerHex.ReplaceAllStringFunc(esc, strings.ToLower))
	}
	// An encoded secret may in turn sit in a JSON string and be Go-quoted
	// in an error: `got "p%2Fa\u0026b"`.
	for _, f := range slices.Clone(forms) {
		js := jsonForms(f)
		forms = append(forms, js...)
		for _, g := range append([]string{f}, js...) {
			q := strconv.Quote(g)
			forms = append(forms, q[1:len(q)-1])
		}
	}
	return forms
}

var lowerHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// jsonForms are the ways JSON encoders write sec inside a string literal
// (without the quotes): Go's default (HTML-safe), Go without HTML escaping,
// ASCII-only with \uXXXX (Python's default), and each with "\/" (PHP's).
func jsonForms(sec string) []string {
	html, _ := json.Marshal(sec)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(sec)
	plain := bytes.TrimSpace(buf.Bytes())
	var out []string
	for _, f := range []string{string(html[1 : len(html)-1]), string(plain[1 : len(plain)-1])} {
		out = append(out, f, asciiJSON(f))
	}
	for _, f := range out[:4] {
		if strings.Contains(f, "/") {
			out = append(out, strings.ReplaceAll(f, "/", `\/`))
		}
	}
	return out
}

// asciiJSON writes every non-ASCII rune of an escaped JSON string as
// \uXXXX (a surrogate pair above U+FFFF).
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
