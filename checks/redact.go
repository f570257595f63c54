package checks

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"weak"

	"github.com/tidwall/gjson"
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
//   - percent-encoded as url.QueryEscape and url.PathEscape do, as
//     JavaScript's encodeURIComponent and encodeURI do, and as RFC 3986
//     escaping of all but A-Za-z0-9-._~ does (Python's quote(s, safe=""),
//     PHP's rawurlencode, .NET's Uri.EscapeDataString: %20 for a space,
//     %27 for "'"), also keeping "/" (Python's quote(s));
//   - JSON-escaped, with and without HTML escaping (\u003c), with non-ASCII
//     as \uXXXX, with "/" as "\/", and as .NET's System.Text.Json writes
//     by default (\u0022 for a quote; \u002B, \u0027, \u0060 and the
//     HTML characters escaped; non-ASCII as \uXXXX);
//   - Go-quoted (%q), as error messages quote values;
//   - HTML-escaped, as an HTML error page or template shows it: &amp;
//     &lt; &gt;, a quote as &quot; &#34; &#x22; or as is, an apostrophe as
//     &#39; &#x27; &#039; &apos; or as is, and all five as numeric
//     references (&#38;);
//   - for a non-ASCII secret, its UTF-8 bytes read as ISO-8859-1
//     ("pässwörd" as "pÃ¤sswÃ¶rd"), as servers that decode header bytes
//     as Latin-1 (WSGI per PEP 3333, Java servlets) echo it, JSON-escaped
//     and Go-quoted too ("p\u00c3\u00a4ssw\u00c3\u00b6rd").
//
// JSON escaping and Go quoting apply to the base64 and percent-encoded
// forms too: an origin's JSON may echo the percent-encoded secret, and an
// error quote that JSON.
//
// Hex digits are written in either case by different encoders (%2f and
// %2F; Go's \u003c and .NET's \u003C) and a text may mix them, so every
// form matches with the letters a-f in any case: A-F and a-f compare
// equal everywhere in a form, not only inside escapes. Case variants of a
// secret in those letters alone ("Secret-ab" for "secret-AB") are hidden
// too; that over-redaction is the price of one pass over the text whatever
// the mix of cases.
//
// Where a value was shortened with "…" (an assertion's got is cut at 200
// bytes) and the text before "…" ends with at least the first minTruncated
// bytes of one of these forms, that start is hidden too.
//
// The zero value hides nothing. Add and Redact are safe for concurrent use.
type Redactor struct {
	mu      sync.Mutex
	secrets []string
	forms   []string // every form of every secret, hex-folded, longest first
	m       *matcher // nil: rebuilt from forms by the next Redact
	known   bool     // in the process's registry (see holdsKnownSecret)
}

// registry holds every Redactor of the process that has a secret, weakly:
// a masked value (see maskValues) that holds a secret one of them hides is
// shown as Redacted, not as its length and digest. A Redactor that is no
// longer used (a finished script run's, a replaced config's) drops out.
var registry struct {
	mu   sync.Mutex
	live []weak.Pointer[Redactor]
}

// register adds r to the registry, pruning the Redactors gone since.
func register(r *Redactor) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	live := registry.live[:0]
	for _, p := range registry.live {
		if p.Value() != nil {
			live = append(live, p)
		}
	}
	registry.live = append(live, weak.Make(r))
}

// holdsKnownSecret reports whether v holds, in any form, a secret that
// a live Redactor of the process hides: a ${NAME} value of the config, a
// script run's secret, an alert receiver's credentials.
func holdsKnownSecret(v string) bool {
	registry.mu.Lock()
	rs := make([]*Redactor, 0, len(registry.live))
	for _, p := range registry.live {
		if r := p.Value(); r != nil {
			rs = append(rs, r)
		}
	}
	registry.mu.Unlock()
	for _, r := range rs {
		if r.Redact(v) != v {
			return true
		}
	}
	return false
}

// Add makes r hide secret. An empty secret is ignored. A secret that is a
// whole Authorization value, "<scheme> <credentials>" (Bearer, Basic,
// Token, Digest, …), has its credentials of MinEncodedSecret bytes or
// more hidden on their own too, in every form, as an origin echoes the
// token without its scheme ("invalid token 'eyJ…'"); for Basic, also the
// "user:password" they decode to and the password of minTruncated bytes or
// more.
func (r *Redactor) Add(secret string) {
	if secret == "" {
		return
	}
	r.mu.Lock()
	for _, s := range append([]string{secret}, credentialParts(secret)...) {
		if !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
			r.m = nil
		}
	}
	first := !r.known
	r.known = true
	r.mu.Unlock()
	if first {
		register(r)
	}
}

// credentialParts are the parts of an Authorization value v that Add
// hides on their own (see Add); none when v is not "<scheme>
// <credentials>" with a scheme of letters, digits and -._ (an RFC 9110
// token, at most 20 bytes) and credentials of MinEncodedSecret bytes or
// more.
func credentialParts(v string) []string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	cred = strings.TrimSpace(cred)
	if !ok || len(scheme) == 0 || len(scheme) > 20 || len(cred) < MinEncodedSecret {
		return nil
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return nil
		}
	}
	out := []string{cred}
	if strings.EqualFold(scheme, "Basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil && utf8.Valid(b) {
			if user, pw, ok := strings.Cut(string(b), ":"); ok && len(user)+len(pw) > 0 {
				out = append(out, string(b))
				if len(pw) >= minTruncated {
					out = append(out, pw)
				}
			}
		}
	}
	return out
}

// Redact returns s with every form of every secret replaced by Redacted.
// A nil Redactor returns s unchanged.
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.Lock()
	if r.m == nil && len(r.secrets) > 0 {
		r.build()
	}
	m, forms := r.m, r.forms
	r.mu.Unlock()
	if m == nil {
		return s
	}
	s = m.replace(s)
	if strings.Contains(s, "…") {
		s = redactTruncated(s, forms)
	}
	return s
}

// Forms returns every form of every secret r hides (see Redactor), longest
// first, with the letters A-F lower-cased: a text holds a form where, with
// its own A-F lower-cased, it holds the form. A page-masking script uses
// them to hide what Redact hides. Nil for a nil or empty Redactor.
func (r *Redactor) Forms() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil && len(r.secrets) > 0 {
		r.build()
	}
	return slices.Clone(r.forms)
}

// build compiles the matcher; r.mu is held.
func (r *Redactor) build() {
	seen := map[string]bool{}
	var forms []string
	for _, sec := range r.secrets {
		for _, f := range secretForms(sec) {
			// Forms that differ only in the case of a-f are one form.
			if f = foldHex(f); !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r.forms, r.m = forms, newMatcher(forms)
}

// hexFold maps A-F to a-f and every other byte to itself.
var hexFold = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := byte('A'); c <= 'F'; c++ {
		t[c] = c + 'a' - 'A'
	}
	return t
}()

// foldHex is s with A-F lower-cased. It keeps every byte's offset (a
// UTF-8 sequence has no byte in A-F, so it stays whole).
func foldHex(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'F' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		b[i] = hexFold[b[i]]
	}
	return string(b)
}

// matcher finds forms in a text in one pass, comparing bytes through
// hexFold. It is a trie: at each offset the longest form that starts
// there is replaced, as a strings.Replacer given the forms longest first
// would, and the scan goes on after it.
type matcher struct {
	root  [256]int32 // the node after the first (folded) byte; 0: none
	nodes []trieNode // nodes[0] is the root; its children are in root
}

type trieNode struct {
	end  bool    // a form ends here
	keys []byte  // folded bytes of the children
	kids []int32 // the children, as keys
}

func newMatcher(forms []string) *matcher {
	m := &matcher{nodes: make([]trieNode, 1, 1+8*len(forms))}
	for _, f := range forms {
		n := int32(0)
		for i := 0; i < len(f); i++ {
			c := hexFold[f[i]]
			next := m.child(n, c)
			if next == 0 {
				next = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{})
				if n == 0 {
					m.root[c] = next
				} else {
					m.nodes[n].keys = append(m.nodes[n].keys, c)
					m.nodes[n].kids = append(m.nodes[n].kids, next)
				}
			}
			n = next
		}
		m.nodes[n].end = true
	}
	return m
}

// child is n's child for the folded byte c, 0 if none.
func (m *matcher) child(n int32, c byte) int32 {
	if n == 0 {
		return m.root[c]
	}
	nd := &m.nodes[n]
	if i := bytes.IndexByte(nd.keys, c); i >= 0 {
		return nd.kids[i]
	}
	return 0
}

// replace returns s with every form replaced by Redacted; s itself (no
// allocation) when it holds none.
func (m *matcher) replace(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		n := m.root[hexFold[s[i]]]
		if n == 0 {
			i++
			continue
		}
		match := 0
		for j := i + 1; ; j++ {
			if m.nodes[n].end {
				match = j - i
			}
			if j == len(s) {
				break
			}
			if n = m.child(n, hexFold[s[j]]); n == 0 {
				break
			}
		}
		if match == 0 {
			i++
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(Redacted)
		i += match
		last = i
	}
	if b.Cap() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
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
		folded := foldHex(head) // forms are folded; offsets are kept
		for _, f := range forms {
			cut = max(cut, longestTail(folded, f))
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
		forms = append(forms, embedded(enc.WithPadding(base64.NoPadding).EncodeToString, 6, 3, sec)...)
	}
	// Standard base64 in a URL's query or path, percent-encoded there
	// (+ as %2B, / as %2F, = as %3D; a path keeps + and =): a redirect or
	// callback URL that carries the secret base64-encoded.
	for _, f := range slices.Clone(forms[1:]) {
		if strings.ContainsAny(f, "+/=") {
			forms = append(forms, url.QueryEscape(f), url.PathEscape(f))
		}
	}
	// Hex, in either case (the matcher folds A-F), as a signature, a
	// debug dump or a hex-encoding token scheme shows it; the secret's
	// bytes inside a longer hex text are its hex as they are.
	forms = append(forms, hex.EncodeToString([]byte(sec)))
	// Base32 (RFC 4648: TOTP seeds, some token schemes), padded or not,
	// alone or inside a longer base32 text, in upper case as the RFC
	// writes it and in lower case as some encoders do.
	b32 := append([]string{base32.StdEncoding.EncodeToString([]byte(sec))},
		embedded(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString, 5, 5, sec)...)
	for _, f := range b32 {
		forms = append(forms, f, strings.ToLower(f))
	}
	// Lower-case hex digits need no form of their own: the matcher folds
	// A-F (see Redactor).
	// Go's escapes, and JavaScript's, which a browser step's page uses:
	// encodeURIComponent leaves !'()* as they are (Go escapes them), and
	// encodeURI leaves ;,/?:@&=+$# too.
	// RFC 3986 escaping of everything but the unreserved characters
	// (Python's quote(s, safe=''), PHP's rawurlencode, .NET's
	// Uri.EscapeDataString, Ruby's ERB::Util.url_encode): space as %20,
	// ' as %27, & as %26; and Python's default quote(s), which keeps "/".
	pct := percentForms(sec)
	forms = append(forms, pct...)
	// Percent-encoded twice, as a URL carried in another URL's query
	// (a redirect_uri, a login's "next") or one encoded by two layers is:
	// "%" as "%25" (a space as %2520), and what the first escaping kept
	// escaped by the second as it escapes it.
	for _, p := range pct {
		if p != sec {
			forms = append(forms, percentForms(p)...)
		}
	}
	// An HTML page (an error page, a template) echoes it HTML-escaped.
	forms = append(forms, htmlForms(sec)...)
	// A non-ASCII secret echoed by a server that reads header bytes as
	// ISO-8859-1 (PEP 3333 WSGI, Python's http.server, Java servlets):
	// "pässwörd" comes back as "pÃ¤sswÃ¶rd", JSON-escaped as
	// "p\u00c3\u00a4ssw\u00c3\u00b6rd" by the loop below.
	if l := latin1(sec); l != sec {
		forms = append(forms, l)
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

// embedded lists sec encoded, without padding, by encode (an encoding of
// bits bits per character, whose characters align with the bytes every
// group bytes) as it reads inside a longer encoded text, at each byte
// offset k (mod group) there: the characters that also carry bits of the
// bytes around it differ, the rest are fixed. At the end of the text,
// the secret's last character is fixed too (its spare bits are zero), so
// that form is listed whole as well. k = 0 is the unpadded form.
func embedded(encode func([]byte) string, bits, group int, sec string) []string {
	var out []string
	for k := range group {
		b := append(make([]byte, k), sec...)
		e := encode(b)[(8*k+bits-1)/bits:]
		if len(b)*8%bits != 0 {
			out = append(out, e) // the secret at the end: all of it
			e = e[:len(e)-1]
		}
		out = append(out, e)
	}
	return out
}

// percentForms are s percent-encoded by Go's QueryEscape and PathEscape,
// JavaScript's encodeURIComponent and encodeURI, and RFC 3986's escaping
// of all but the unreserved characters (also keeping "/", as Python's
// quote(s) does).
func percentForms(s string) []string {
	return []string{url.QueryEscape(s), url.PathEscape(s),
		jsEscape(s, "-_.!~*'()"), jsEscape(s, "-_.!~*'();,/?:@&=+$#"),
		jsEscape(s, "-_.~"), jsEscape(s, "-_.~/")}
}

// htmlEscapes are the ways HTML and XML escapers write & < > " ': Go's
// html.EscapeString and html/template, Python's html.escape (and Jinja,
// Django), PHP's htmlspecialchars (ENT_QUOTES, and ENT_HTML5), an escaper
// that leaves quotes alone (Python's quote=False, nginx and Apache error
// pages), and numeric references, decimal and hex. Each is one column of
// & < > " ' in that order.
var htmlEscapes = [][5]string{
	{"&amp;", "&lt;", "&gt;", "&#34;", "&#39;"},
	{"&amp;", "&lt;", "&gt;", "&quot;", "&#x27;"},
	{"&amp;", "&lt;", "&gt;", "&quot;", "&#039;"},
	{"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"},
	{"&amp;", "&lt;", "&gt;", `"`, "'"},
	{"&#38;", "&#60;", "&#62;", "&#34;", "&#39;"},
	{"&#x26;", "&#x3c;", "&#x3e;", "&#x22;", "&#x27;"},
}

// htmlForms are sec HTML-escaped as the escapers of htmlEscapes write it;
// none when sec holds none of & < > " '. Hex digits need no case variant
// (see Redactor).
func htmlForms(sec string) []string {
	if !strings.ContainsAny(sec, `&<>"'`) {
		return nil
	}
	var out []string
	for _, e := range htmlEscapes {
		out = append(out, strings.NewReplacer("&", e[0], "<", e[1], ">", e[2], `"`, e[3], "'", e[4]).Replace(sec))
	}
	return out
}

// latin1 is s's bytes read as ISO-8859-1 (each byte the rune of its
// value), written as UTF-8: how a UTF-8 text looks once a Latin-1 reader
// decoded it. An ASCII s is returned as it is.
func latin1(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// jsonForms are the ways JSON encoders write sec inside a string literal
// (without the quotes): Go's default (HTML-safe), Go without HTML escaping,
// ASCII-only with \uXXXX (Python's default), each with "\/" (PHP's), and
// .NET's.
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
	return append(out, dotnetJSON(sec))
}

// dotnetJSON is sec as System.Text.Json writes it by default
// (JavaScriptEncoder.Default): a quote as \u0022, the HTML characters and
// + ' ` as \uXXXX, every non-ASCII rune as \uXXXX (upper-case hex digits).
func dotnetJSON(sec string) string {
	var b strings.Builder
	for _, r := range sec {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"', '&', '\'', '+', '<', '>', '`':
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			switch {
			case r < 0x20 || r == 0x7F:
				fmt.Fprintf(&b, `\u%04X`, r)
			case r < utf8.RuneSelf:
				b.WriteRune(r)
			case r > 0xFFFF:
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04X\u%04X`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			default:
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		}
	}
	return b.String()
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

// jsEscape is s percent-encoded as JavaScript's encodeURIComponent (keep
// "-_.!~*'()") or encodeURI (keep also ";,/?:@&=+$#") encodes it, or RFC
// 3986's escaping of all but the unreserved characters (keep "-_.~"):
// UTF-8 bytes, upper-case hex, letters, digits and the kept characters as
// is.
func jsEscape(s, keep string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c < 0x80 && strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// SensitiveName reports whether values under a response header, a JSON
// key or a variable of this name are masked wherever vigil shows them
// (assertions' got, errors, script messages): any name containing token,
// secret, password, credential, session, api-key, api_key, apikey,
// authorization or cookie, case-insensitive (see the expect.json and
// expect.headers assertions).
func SensitiveName(name string) bool { return sensitiveName(name) }

// MaskValue is v as a masked assertion shows it (see maskValues): its
// length and the first 8 hex digits of its HMAC-SHA256 under a key drawn
// at random when the process starts, "[masked: 34 bytes,
// sha256:1f0c9a2e]", so two values can be told apart within one process
// without showing either; Redacted when v holds a secret a Redactor of the
// process hides.
func MaskValue(v string) string { return maskValues([]string{v}) }

// ShownHeaderValue is the value v of the response header name as an
// expect.headers assertion shows it in its got: a URL (Location,
// Content-Location, the url= of Refresh) without userinfo, query values
// as "…" and no fragment (units.RedactURL), since an origin's redirect
// carries a session or an OAuth access_token there; any other value as
// it is.
func ShownHeaderValue(name, v string) string { return shownHeaderValues(name, []string{v})[0] }

// MaskJSON re-writes the JSON text raw (an object or an array) compactly
// with the value of every key that is a SensitiveName masked as MaskValue
// does, as expect.json shows a value, and reports whether it masked any.
// Any other text is returned as it is, with false.
func MaskJSON(raw string) (string, bool) {
	if !gjson.Valid(raw) {
		return raw, false
	}
	r := gjson.Parse(raw)
	if !r.IsObject() && !r.IsArray() || !sensitiveName(raw) {
		return raw, false
	}
	return maskNested(r)
}
