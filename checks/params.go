package checks

import (
	"net/url"
	"sort"
	"strings"
)

// encodeParams encodes http.query or http.form as
// application/x-www-form-urlencoded text ("a=1&b=x+y"), names in sorted
// order, each value passed through expand first (nil = as written). An
// empty map encodes as "".
func encodeParams(m map[string]string, expand func(string) string) string {
	if len(m) == 0 {
		return ""
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, k := range names {
		v := m[k]
		if expand != nil {
			v = expand(v)
		}
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(v))
	}
	return b.String()
}

// badQuery says what in the query of raw (the text after its first "?",
// up to a "#") cannot be sent in an HTTP request line, "" when nothing:
// a space, a control character, a non-ASCII byte or a "%" that does not
// start a percent-escape (RFC 9112 §3.2, RFC 3986 §3.4). Go's client
// escapes the path of a URL but sends its query as written, so a value
// substituted into the query must be encoded before it is sent.
func badQuery(raw string) string {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return ""
	}
	q, _, _ = strings.Cut(q, "#")
	return badRequestText(q)
}

// badRequestText is badQuery for text that is all query.
func badRequestText(q string) string {
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == ' ':
			return "contains a space"
		case c < 0x20 || c == 0x7f:
			return "contains a control character"
		case c >= 0x80:
			return "contains a non-ASCII character"
		case c == '%' && (i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2])):
			return `contains a "%" that does not start a percent-escape (%XX)`
		}
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// badHeaderValue says why a header value cannot be sent, "" when it can:
// a line break (CR or LF) or another control character (HTAB is allowed;
// RFC 9110 §5.5).
func badHeaderValue(v string) string {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\r' || c == '\n':
			return "contains a line break (CR or LF)"
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "contains a control character"
		}
	}
	return ""
}
