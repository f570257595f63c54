package units

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
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

// Spacer lets a recurring log line through at most once per period and
// counts the occurrences it held back in between.
type Spacer struct {
	mu   sync.Mutex
	last time.Time
	held int
}

// Allow reports whether the line for an occurrence at now may be written
// (the first, or the first one every past the last written) and, if so, how
// many were held back since the last one written.
func (s *Spacer) Allow(now time.Time, every time.Duration) (ok bool, held int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() && now.Sub(s.last) < every {
		s.held++
		return false, 0
	}
	held = s.held
	s.last, s.held = now, 0
	return true, held
}

// AuthFailures logs refused admin requests (a missing or wrong bearer
// token): the first at once, then at most one line a minute carrying how
// many were left out, so a token being guessed shows in the log without
// flooding it. The presented token is never logged.
type AuthFailures struct{ spacer Spacer }

// Note records one refused request r and logs it unless the rate limit
// holds it back.
func (a *AuthFailures) Note(log *slog.Logger, r *http.Request) {
	reason := "wrong bearer token"
	if r.Header.Get("Authorization") == "" {
		reason = "no bearer token"
	}
	ok, n := a.spacer.Allow(time.Now(), time.Minute)
	if !ok {
		return
	}
	log.Warn("admin request refused", "reason", reason, "method", r.Method, "path", r.URL.Path,
		"remote", r.RemoteAddr, "refused_since_last_line", n)
}
