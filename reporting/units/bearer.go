package units

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// BearerMatches reports whether r carries "Authorization: Bearer <token>".
// The scheme is case-insensitive (RFC 9110 §11.1). An empty token never
// matches.
func BearerMatches(r *http.Request, token string) bool {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	return TokenMatches(strings.TrimSpace(h[len(prefix):]), token)
}

// TokenMatches compares a presented token with the configured one in
// constant time over SHA-256 digests, so neither the token nor its length
// leaks through timing. An empty token never matches.
func TokenMatches(got, token string) bool {
	if token == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
