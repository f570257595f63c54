package proxy

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
)

// clientCertElement is the X-Forwarded-Client-Cert value for a verified
// client certificate, in Envoy's format: the SHA-256 of its DER form, its
// subject, and its URI and DNS subject alternative names.
func clientCertElement(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	var b strings.Builder
	b.WriteString("Hash=")
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteString(`;Subject="`)
	b.WriteString(xfccEscape(c.Subject.String()))
	b.WriteByte('"')
	for _, u := range c.URIs {
		b.WriteString(`;URI="`)
		b.WriteString(xfccEscape(u.String()))
		b.WriteByte('"')
	}
	for _, d := range c.DNSNames {
		b.WriteString(`;DNS="`)
		b.WriteString(xfccEscape(d))
		b.WriteByte('"')
	}
	return b.String()
}

// xfccEscape escapes a quoted X-Forwarded-Client-Cert value: backslash and
// double quote get a backslash; a control character (none can be valid in
// a header) becomes '?'.
func xfccEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c == 0x7f:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
