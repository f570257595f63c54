package main

import (
	"strings"

	"github.com/vigil-synthetics/vigil/checks"
)

// redactor remembers values taken from the environment (${NAME}, and
// VIGIL_* overrides of secret keys) so that no printed error or output
// shows them: as written, and from checks.MinEncodedSecret bytes on also
// base64-, hex-, base32-, percent- (once or twice), JSON-escaped or
// Go-quoted, as an origin or an error message may echo them (see
// checks.Redactor). The config normalises some
// values before it judges them (an http.method is trimmed and upper-cased,
// keywords are lower-cased), so each value is also hidden trimmed,
// upper-cased and lower-cased.
type redactor struct {
	r   checks.Redactor
	any bool // a value was added: redact has work to do
}

// add remembers val, the value of key. Values under 3 bytes are not
// treated as secrets: hiding every "on" or "1" would blank ordinary text.
func (r *redactor) add(key, val string) {
	if r == nil || len(val) < 3 {
		return
	}
	// Region names and the like are not secrets; anything from ${…} or a
	// token/password/key field is treated as one.
	r.r.Add(val)
	r.any = true
	// The forms the config may turn it into before an error quotes it.
	if t := strings.TrimSpace(val); len(t) >= 3 {
		for _, f := range []string{t, strings.ToUpper(t), strings.ToLower(t)} {
			if f != val {
				r.r.Add(f)
			}
		}
	}
}

// active reports whether r hides anything: false for a nil redactor and
// one without secrets, which the log handler then skips. Values are added
// while a config loads, before the redactor is shared.
func (r *redactor) active() bool { return r != nil && r.any }

// redact returns s with every remembered secret replaced by "***". A nil
// redactor returns s unchanged.
func (r *redactor) redact(s string) string {
	if r == nil {
		return s
	}
	return r.r.Redact(s)
}
