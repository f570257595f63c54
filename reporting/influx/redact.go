package influx

import (
	"errors"
	"net/url"
	"strings"

	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/vigil-synthetics/vigil/checks"
)

// minSecret is the shortest credential hidden in errors: hiding every "on"
// or "1" would blank status codes (the floor the alert receivers use).
const minSecret = 3

// newRedactor returns the redactor that hides cfg's credentials in every
// error quoting an answer: InfluxDB, or a gateway in front of it, may echo
// the request's Authorization header in an error body ("500 Internal
// Server Error: … Token s3cret"). It hides the token, the password of a
// 1.8 "user:password" token on its own, and the password (and
// user:password) of userinfo in the URL, as written and in the encodings
// checks.Redactor knows (base64 for a Basic header, JSON and percent
// escapes).
func newRedactor(cfg Config) *checks.Redactor {
	r := &checks.Redactor{}
	add := func(s string) {
		if len(s) >= minSecret {
			r.Add(s)
		}
	}
	add(cfg.Token)
	if _, pw, ok := strings.Cut(cfg.Token, ":"); ok {
		add(pw)
	}
	if u, err := url.Parse(cfg.URL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
			add(u.User.Username() + ":" + pw)
		}
	}
	return r
}

// redactedError is an error whose text was rewritten (credentials hidden,
// or folded onto one line by oneLine); it still unwraps to the original
// for errors.As (status code, Retry-After).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrub returns err with the configured credentials hidden from its text.
// The client library's *http.Error in err is cleaned in place (message,
// code, headers), since ExplainError and influxSaid quote its fields, not
// err's text.
func (s *Store) scrub(err error) error {
	if err == nil || s.red == nil {
		return err
	}
	var he *http2.Error
	if errors.As(err, &he) {
		he.Message = s.red.Redact(he.Message)
		he.Code = s.red.Redact(he.Code)
		for _, vs := range he.Header {
			for i, v := range vs {
				vs[i] = s.red.Redact(v)
			}
		}
		if he.Err != nil {
			if m := he.Err.Error(); s.red.Redact(m) != m {
				he.Err = &redactedError{msg: s.red.Redact(m), err: he.Err}
			}
		}
	}
	if m := err.Error(); s.red.Redact(m) != m {
		return &redactedError{msg: s.red.Redact(m), err: err}
	}
	return err
}

// oneLine returns err with its text on one line: InfluxDB's messages end
// with a newline (1.8's "Flux query service disabled. …\n"), and /healthz
// gives each line of an error a line of its own, so a trailing newline made
// an empty "proxy: " line. Lines are trimmed and the non-empty ones joined
// with "; ".
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	m := err.Error()
	if !strings.ContainsAny(m, "\r\n") && strings.TrimSpace(m) == m {
		return err
	}
	var lines []string
	for l := range strings.Lines(m) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return &redactedError{msg: strings.Join(lines, "; "), err: err}
}
